"""A method's diagnostics (the `info` it publishes in run.json) in plain words.

Each reader below turns the keys it knows into sentences and consumes them; whatever is left is
shown as it is, key and value, so a key a method adds later is never dropped from the report.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import polars as pl

LIST_SHOWN = 12  # names listed before "and N more"


@dataclass(frozen=True)
class Note:
    text: str
    tone: str = "neutral"  # "good", "warn" or "neutral"


@dataclass(frozen=True)
class Diagnostics:
    notes: list[Note] = field(default_factory=list)
    other: list[tuple[str, str]] = field(default_factory=list)  # keys no reader knows: (key, value as text)


@dataclass(frozen=True)
class Context:
    """What a reader may need beside `info`: the method's parameters, its rows, its tables."""

    params: dict[str, str]
    rows: pl.DataFrame
    tables: dict[str, pl.DataFrame]


def number(value: object) -> str:
    """A number rounded for reading: integers as they are, 4 significant digits, tiny values as 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int) or (math.isfinite(value) and value == int(value) and abs(value) < 1e15):
        return f"{int(value):,}"
    if not math.isfinite(value):
        return str(value)
    if abs(value) < 1e-9:
        return "0"
    return f"{value:.4g}"


def number_any(value: object) -> str:
    """Like `number`, but tiny values in scientific notation instead of 0 (tolerances)."""
    return f"{value:.3g}" if isinstance(value, float) and 0 < abs(value) < 1e-3 else number(value)


def names(values: object, shown: int = LIST_SHOWN) -> str:
    items = [str(v) for v in (values if isinstance(values, (list, tuple)) else [values])]
    if len(items) > shown:
        return ", ".join(items[:shown]) + f" and {len(items) - shown} more"
    return ", ".join(items)


def order_text(groups: list, shown: int = LIST_SHOWN) -> str:
    text = " > ".join(" = ".join(map(str, g)) if isinstance(g, list) else str(g) for g in groups[:shown])
    return text + (f" > ... ({len(groups) - shown} more levels)" if len(groups) > shown else "")


def plain(value: object, limit: int = 400) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + f" ... ({len(text):,} characters in run.json)"


def top_weights(mapping: dict, shown: int = 6) -> str:
    items = sorted(((k, v) for k, v in mapping.items() if isinstance(v, (int, float)) and v), key=lambda kv: (-abs(kv[1]), kv[0]))
    text = ", ".join(f"{k} {number(v)}" for k, v in items[:shown])
    return text + (f" and {len(items) - shown} more" if len(items) > shown else "")


def phrases(info: dict, templates: dict[str, str]) -> list[str]:
    """Each template whose key is present, filled with its value rounded for reading."""
    return [template.format(number(info[key])) for key, template in templates.items() if key in info]


Reader = Callable[[dict, Context], list[Note]]
READERS: list[tuple[tuple[str, ...], Reader]] = []


def reads(*keys: str) -> Callable[[Reader], Reader]:
    """Register a reader of `keys`; it runs when any of them is present, and consumes them all."""
    def register(fn: Reader) -> Reader:
        READERS.append((keys, fn))
        return fn
    return register


@reads("condorcet_winner_agent", "weak_condorcet_winner_agents")
def _condorcet(info: dict, ctx: Context) -> list[Note]:
    notes = []
    if "condorcet_winner_agent" in info:
        winner = info["condorcet_winner_agent"]
        notes.append(Note(f"{winner} is the Condorcet winner: it beats every other agent head to head.", "good") if winner
                     else Note("No Condorcet winner: no agent beats every other one head to head."))
    weak = info.get("weak_condorcet_winner_agents")
    if weak is not None and not (info.get("condorcet_winner_agent") and weak == [info["condorcet_winner_agent"]]):
        notes.append(Note(f"Weak Condorcet winners (beaten by no one): {names(weak)}.") if weak
                     else Note("No weak Condorcet winner either: every agent loses to someone (a majority cycle at the top)."))
    return notes


@reads("order_agents", "strict_order")
def _order(info: dict, ctx: Context) -> list[Note]:
    notes = []
    if "order_agents" in info:
        notes.append(Note(f"Order: {order_text(info['order_agents'])}."))
    if info.get("strict_order") is False:
        notes.append(Note("The order has ties: agents in one level share a rank."))
    return notes


@reads("kemeny_unique", "kemeny_value", "component_sizes")
def _kemeny(info: dict, ctx: Context) -> list[Note]:
    notes = []
    value = f" (agreement with {number(info['kemeny_value'])} pairwise preferences)" if "kemeny_value" in info else ""
    if info.get("kemeny_unique") is True:
        notes.append(Note(f"The Kemeny order is unique{value}.", "good"))
    elif info.get("kemeny_unique") is False:
        notes.append(Note(f"Several orders reach the Kemeny optimum{value}; the one shown is chosen deterministically, "
                          "so ranks inside a tied stretch are not meaningful.", "warn"))
    elif value:
        notes.append(Note(f"Kemeny value{value}."))
    sizes = info.get("component_sizes")
    if isinstance(sizes, list) and sizes:
        notes.append(Note(f"The majority graph splits into {len(sizes)} ordered parts (largest {max(sizes)} agents), "
                          "each solved exactly on its own."))
    return notes


@reads("unique", "choice", "support_agents")
def _lottery(info: dict, ctx: Context) -> list[Note]:
    notes = []
    if info.get("unique") is True:
        notes.append(Note("The maximal lottery is unique.", "good"))
    elif info.get("unique") is False:
        notes.append(Note(f"The maximal lottery is not unique; the one shown is the {info.get('choice', 'maximum-entropy one')}.", "warn"))
    if "support_agents" in info:
        support = info["support_agents"]
        notes.append(Note(f"Support (agents with positive probability, {len(support)}): {names(support)}."))
    return notes


@reads("levels", "level_agents", "non_unique_levels")
def _levels(info: dict, ctx: Context) -> list[Note]:
    notes = []
    if "levels" in info:
        notes.append(Note(f"{number(info['levels'])} levels, each the support of the maximal lottery among the agents left."))
    non_unique = info.get("non_unique_levels")
    if non_unique:
        notes.append(Note(f"Levels {names([n + 1 for n in non_unique])} (1 = top) have no unique maximal lottery; "
                          "the maximum-entropy one is used there.", "warn"))
    elif non_unique == []:
        notes.append(Note("Every level's maximal lottery is unique.", "good"))
    if "level_agents" in info:
        notes.append(Note(f"Levels: {order_text(info['level_agents'])}."))
    return notes


@reads("strongest_paths")
def _schulze(info: dict, ctx: Context) -> list[Note]:
    paths = info["strongest_paths"]
    size = len(paths) if isinstance(paths, list) else 0
    return [Note(f"The strongest-path strengths (a {size} x {size} matrix) are in run.json.")]


@reads("locked_edges", "tied_edges_dropped")
def _ranked_pairs(info: dict, ctx: Context) -> list[Note]:
    notes = [Note(f"{number(info.get('locked_edges', 0))} majority edges locked, strongest first.")]
    dropped = info.get("tied_edges_dropped")
    if dropped:
        notes.append(Note(f"{number(dropped)} edges of equal margin would have closed a cycle together and were "
                          "dropped as a batch, so their agents stay level.", "warn"))
    return notes


@reads("ballot_lengths")
def _ballots(info: dict, ctx: Context) -> list[Note]:
    lengths = info["ballot_lengths"]
    if isinstance(lengths, list) and len(lengths) == 1:
        return [Note(f"Every ballot ranks {lengths[0]} agents.")]
    return [Note(f"Ballots rank {names(lengths)} agents.")]


@reads("quota", "rounds", "unique_votes", "winner_agents")
def _stv(info: dict, ctx: Context) -> list[Note]:
    parts = phrases(info, {"quota": "Droop quota {}", "rounds": "{} counting rounds", "unique_votes": "{} distinct ballots"})
    notes = [Note("; ".join(parts) + ".")] if parts else []
    if "winner_agents" in info:
        notes.append(Note(f"Elected, in order: {names(info['winner_agents'])}."))
    return notes


@reads("iterations", "log_likelihood", "bootstrap_rounds", "bootstrap_dropped", "bootstrap_unconverged", "davidson_nu",
       "stopped", "last_step", "cg_shortfalls", "cg_worst_relative_residual")
def _likelihood(info: dict, ctx: Context) -> list[Note]:
    notes = []
    prior = ctx.params.get("prior")
    if "iterations" in info:
        fit = "maximum-a-posteriori fit (Gaussian prior)" if prior not in (None, "0", "0.0") else "maximum-likelihood ratings exist and the fit"
        likelihood = f", log-likelihood {number(info['log_likelihood'])}" if "log_likelihood" in info else ""
        how = " at the precision floor (the steps stopped shrinking; the error is below the data's resolution)" \
            if info.get("stopped") == "precision floor" else ""
        step = f"; last step {number(info['last_step'])}" if "last_step" in info else ""
        notes.append(Note(f"The {fit} converged{how} in {number(info['iterations'])} iterations{likelihood}{step}.", "good"))
    if info.get("cg_shortfalls"):
        notes.append(Note(f"{number(info['cg_shortfalls'])} conjugate-gradient solves stopped short of their tolerance "
                          f"(worst relative residual {number(info.get('cg_worst_relative_residual'))}); Newton's steps absorbed them.",
                          "warn"))
    elif "log_likelihood" in info:
        notes.append(Note(f"Log-likelihood {number(info['log_likelihood'])}."))
    if "davidson_nu" in info:
        notes.append(Note(f"Davidson tie parameter nu = {number(info['davidson_nu'])}."))
    if "bootstrap_rounds" in info:
        dropped = info.get("bootstrap_dropped") or 0
        unconverged = info.get("bootstrap_unconverged") or 0
        why = ([f"{number(dropped)} rounds dropped because the fit did not exist on that resample"] if dropped else []) + \
              ([f"{number(unconverged)} rounds dropped because their fit did not converge"] if unconverged else [])
        notes.append(Note(f"95% intervals from {number(info['bootstrap_rounds'])} bootstrap rounds"
                          + (f"; {'; '.join(why)}." if why else "."), "warn" if why else "neutral"))
    return notes


@reads("logistic_scale", "anchor")
def _scale(info: dict, ctx: Context) -> list[Note]:
    parts = phrases(info, {"logistic_scale": "a gap of {} points means 10:1 odds of winning", "anchor": "anchored at {}"})
    return [Note("Scores are logistic ratings: " + "; ".join(parts) + ".")]


@reads("comparisons", "order")
def _online(info: dict, ctx: Context) -> list[Note]:
    count = f" over {number(info['comparisons'])} comparisons" if "comparisons" in info else ""
    order = f", ordered by {info['order']}" if "order" in info and not str(info["order"]).startswith("mean") else ""
    mean = f"; scores are the {info['order']}" if str(info.get("order", "")).startswith("mean") else ""
    return [Note(f"Online updates{count}{order}{mean}.")]


@reads("annotators_used", "annotators_flagged", "annotators_too_few_records", "annotators_flagged_at", "unrated_agents")
def _annotators(info: dict, ctx: Context) -> list[Note]:
    notes = []
    used, flagged = info.get("annotators_used"), info.get("annotators_flagged", 0)
    rule = f" ({info['annotators_flagged_at']})" if "annotators_flagged_at" in info else ""
    if used is not None:
        notes.append(Note(f"{number(used)} annotators used; {number(flagged)} flagged{rule} and left out of the final fit.",
                          "warn" if flagged else "good"))
    if info.get("annotators_too_few_records"):
        notes.append(Note(f"{number(info['annotators_too_few_records'])} annotators had too few records to be rated."))
    table = next((t for name, t in ctx.tables.items() if name.endswith(".annotators")), None)
    if table is not None and {"flagged", "ability"} <= set(table.columns):
        rows = table.filter(pl.col("flagged")).sort(["ability", "judge"], nulls_last=True)
        if rows.height:
            shown = [f"{r['judge']} (ability {number(r['ability'])}" + (f", {number(r['records'])} records)" if "records" in r else ")")
                     for r in rows.head(LIST_SHOWN).iter_rows(named=True)]
            more = f" and {rows.height - LIST_SHOWN} more" if rows.height > LIST_SHOWN else ""
            notes.append(Note(f"Flagged annotators: {', '.join(shown)}{more}.", "warn"))
    if info.get("unrated_agents"):
        notes.append(Note(f"Not rated (no battle left after the flagged annotators were removed): {names(info['unrated_agents'])}.", "warn"))
    return notes


@reads("queries", "reviews", "abstentions", "self_votes_excluded", "rankings_from_scores", "duplicate_reviews_dropped",
       "reviewer_agents", "window_days", "window_start", "window_end", "window_queries")
def _council(info: dict, ctx: Context) -> list[Note]:
    notes = []
    if "reviews" in info:
        notes.append(Note(f"{number(info['reviews'])} reviews of {number(info.get('queries', 0))} queries by "
                          f"{len(info.get('reviewer_agents') or [])} reviewers ({names(info.get('reviewer_agents') or [])}); "
                          f"{number(info.get('abstentions', 0))} abstentions, {number(info.get('rankings_from_scores', 0))} "
                          "rankings taken from scores."))
    if info.get("self_votes_excluded"):
        notes.append(Note(f"{number(info['self_votes_excluded'])} self-votes excluded (a reviewer ranking its own answer)."))
    if info.get("duplicate_reviews_dropped"):
        notes.append(Note(f"{number(info['duplicate_reviews_dropped'])} duplicate reviews dropped.", "warn"))
    if "window_days" in info:
        span = f" ({info['window_start']} to {info['window_end']})" if info.get("window_start") else ""
        queries = f": {number(info['window_queries'])} queries" if "window_queries" in info else ""
        notes.append(Note(f"Per-category tables cover the last {number(info['window_days'])} days{span}{queries}."))
    if "confidence" in ctx.rows.columns:
        counts = ctx.rows.group_by("confidence").len().sort("confidence")
        parts = [f"{c} for {n}" for c, n in counts.iter_rows() if c is not None]
        if parts:
            notes.append(Note(f"Confidence: {', '.join(parts)} (high from 80% of possible votes, medium from 50%)."))
    return notes


@reads("compared_with", "comparison_unavailable", "rank_mismatch_agents")
def _comparison(info: dict, ctx: Context) -> list[Note]:
    notes = []
    if info.get("compared_with"):
        notes.append(Note(f"Compared with {names(info['compared_with'])} on the same reviews."))
    if info.get("comparison_unavailable"):
        unavailable = info["comparison_unavailable"]
        text = "; ".join(f"{k}: {v}" for k, v in unavailable.items()) if isinstance(unavailable, dict) else plain(unavailable)
        notes.append(Note(f"Comparison not available: {text}.", "warn"))
    mismatch = info.get("rank_mismatch_agents")
    if mismatch:
        notes.append(Note(f"Ranks differ by more than two places from another method for: {names(mismatch)}.", "warn"))
    elif mismatch == []:
        notes.append(Note("No model's rank differs by more than two places between the methods.", "good"))
    return notes


@reads("game", "norm", "missing_cells")
def _game(info: dict, ctx: Context) -> list[Note]:
    parts = [f"Game {info['game']}"] if "game" in info else []
    if "norm" in info:
        parts.append(f"scores normalised per task by {info['norm']}")
    if "missing_cells" in info:
        parts.append(f"{number(info['missing_cells'])} missing cells")
    return [Note(", ".join(parts) + ".", "warn" if info.get("missing_cells") else "neutral")]


@reads("value", "task_support", "task_marginal", "task_ratings")
def _equilibrium(info: dict, ctx: Context) -> list[Note]:
    notes = []
    if "task_support" in info:
        value = f" (game value {number(info['value'])})" if "value" in info else ""
        notes.append(Note(f"The adversary's equilibrium keeps the tasks {names(info['task_support'])}{value}."))
    elif "value" in info:
        notes.append(Note(f"Game value {number(info['value'])}."))
    if isinstance(info.get("task_marginal"), dict):
        notes.append(Note(f"Equilibrium weight on tasks: {top_weights(info['task_marginal'])}."))
    if isinstance(info.get("task_ratings"), dict):
        notes.append(Note(f"Task ratings (largest in size): {top_weights(info['task_ratings'])}."))
    return notes


@reads("lps", "joint_strategies", "lp_columns", "lp_rows", "symmetric_players", "first_lp_s", "solve_s")
def _deviation(info: dict, ctx: Context) -> list[Note]:
    notes = []
    if "lps" in info:
        notes.append(Note(f"{number(info['lps'])} linear programs solved ({number(info.get('lp_rows', 0))} rows x "
                          f"{number(info.get('lp_columns', 0))} columns, {number(info.get('joint_strategies', 0))} joint strategies)"
                          + (f" in {number(info['solve_s'])} s." if "solve_s" in info else ".")))
    if info.get("symmetric_players"):
        pairs = "; ".join(" and ".join(p) for p in info["symmetric_players"])
        notes.append(Note(f"Symmetric players merged: {pairs}."))
    return notes


@reads("max_entropy", "solver", "support_path")
def _solver(info: dict, ctx: Context) -> list[Note]:
    """How an iterative solver ended: a maximum-entropy step (one per level for iterated methods), a CCE solve,
    or the path that found the equilibrium supports."""
    notes = []
    runs = [r for key in ("max_entropy", "solver") for r in (info.get(key) if isinstance(info.get(key), list) else [info.get(key)])
            if isinstance(r, dict)]
    for run in runs:
        level = f" (level {number(run['depth'] + 1)})" if "depth" in run else ""
        steps = f" in {number(run['iterations'])} steps" if "iterations" in run else ""
        residual = f", residual {number(run['residual'])}" if "residual" in run else ""
        if run.get("converged", True):
            notes.append(Note(f"The solver{level} converged{steps}{residual}.", "good"))
        else:
            notes.append(Note(f"The solver{level} did not converge{steps}{residual} ({run.get('stopped', 'stopped early')}).", "warn"))
    if "support_path" in info:
        notes.append(Note(f"Equilibrium supports found by the {info['support_path']} path."))
    return notes


@reads("tie_tolerance")
def _tie_tolerance(info: dict, ctx: Context) -> list[Note]:
    return [Note(f"Scores closer than {number_any(info['tie_tolerance'])} (the solver's accuracy) share a rank.")]


@reads("task_copies")
def _task_copies(info: dict, ctx: Context) -> list[Note]:
    copies = info["task_copies"]
    return [Note(f"{number(copies)} task copies added for task weights above 1.")] if copies else []


@reads("populations", "states", "sink_components", "sink_agents", "sink_task", "stationary_top_mass")
def _alpha_rank(info: dict, ctx: Context) -> list[Note]:
    notes = [Note("; ".join(phrases(info, {"populations": "{} populations", "states": "{} states in the Markov chain",
                                          "sink_components": "{} sink components in the response graph"})) + ".")]
    for key, what in (("sink_agents", "agents"), ("sink_task", "tasks")):
        for component in info.get(key) or []:
            notes.append(Note(f"A sink component of the response graph ({what}): {names(component)}."))
    if "stationary_top_mass" in info:
        notes.append(Note(f"The top strategy holds {number(info['stationary_top_mass'])} of the stationary mass."))
    return notes


def describe(info: dict, ctx: Context) -> Diagnostics:
    """Sentences for the keys a reader knows, in reader order; the rest as (key, value) text."""
    notes: list[Note] = []
    left = dict(info)
    for keys, reader in READERS:
        present = {k: left[k] for k in keys if k in left}
        if present:
            notes += reader(present, ctx)
            for k in present:
                del left[k]
    return Diagnostics(notes, [(k, plain(v)) for k, v in sorted(left.items())])
