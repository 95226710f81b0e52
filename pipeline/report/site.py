"""The HTML report of a run folder: `write_report(folder)` writes `index.html` (and one page per board
of a nightly run) from the files the run published, and nothing else.

Pages are static and self-contained: figures are inline SVG (data URIs), the style sheet and the
small script that sorts tables and switches method tabs are inline, so a page opens from disk,
offline, and can be copied anywhere. Pages are rendered by Jinja2 with autoescaping on: agent and
annotator names are data, never markup. The same run folder (and history) gives the same bytes.
"""

from __future__ import annotations

import base64
import logging
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from urllib.parse import quote

import jinja2
import markupsafe
import numpy as np
import polars as pl

from pipeline.methods.standing import PROVISIONAL
from pipeline.paths import CATEGORY_PREFIX
from pipeline.report import plots
from pipeline.report.agreement import RANK_GAP, disagreements, kendall_matrix
from pipeline.report.diagnostics import Context, Diagnostics, Note, describe, names, number
from pipeline.report.folders import BacktestFolder, BoardFolder, Folder, read_run, run_id_of, section, unreadable_outputs
from pipeline.report.history import history_beside, rank_changes, read_history, with_run
from pipeline.report.provenance import Provenance, provenance
from pipeline.report.publish import standing_sentence
from pipeline.report.runs import read_failures
from pipeline.report.tables import Cell, Column, Table, frame_table, leaderboard_table, long_table, own_columns
from pipeline.store.files import write_text

log = logging.getLogger(__name__)

PLOT_AGENTS = 30  # agents in a ratings plot
HEATMAP_AGENTS = 24  # agents in the head-to-head map
HISTORY_AGENTS = 8  # lines in the ratings-over-time plot
CARD_AGENTS = 5  # agents on a board's card in the run index
DISAGREEMENTS_SHOWN = 15


@dataclass(frozen=True)
class Image:
    uri: str
    alt: str
    caption: str = ""
    css: str = ""


@dataclass
class MethodPanel:
    anchor: str
    label: str
    spec: str
    summary: str
    table: Table
    plot: Image
    diagnostics: Diagnostics
    tables: list[Table] = field(default_factory=list)


@dataclass
class BoardPage:
    title: str
    name: str
    facts: list[tuple[str, str]]
    alerts: list[Note]
    panels: list[MethodPanel]
    headline: str
    heatmap: Image | None
    heatmap_note: str
    agreement: Image | None
    agreement_table: Table | None
    disagreement_table: Table | None
    history: Image | None
    history_note: str
    children: list[tuple[str, str, str]]  # (name, link, leader)
    provenance: Provenance


def image(svg: str, alt: str, caption: str = "", css: str = "") -> Image:
    return Image("data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode(), alt, caption, css)


def anchor(text: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "method"
    name, k = base, 2
    while name in taken:
        name, k = f"{base}-{k}", k + 1
    taken.add(name)
    return name


@cache
def method_label(spec: str) -> tuple[str, str, str]:
    """(short title, its parameters, one-line summary): the name plus the parameters that differ from
    the method's defaults, e.g. `elo (shuffles=100)`; the spec itself for an unknown method."""
    try:
        from pipeline.methods import REGISTRY, Spec

        parsed = Spec.parse(spec)
    except (ImportError, ValueError):
        return spec, "", ""
    defaults = REGISTRY[parsed.name].parameters
    changed = [f"{k}={v}" for k, v in sorted(parsed.params.items()) if k in defaults and v != defaults[k]]
    title = parsed.name + (f" ({', '.join(changed)})" if changed else "")
    return title, ", ".join(f"{k}={v}" for k, v in sorted(parsed.params.items())), REGISTRY[parsed.name].summary


def leaderboards(board: BoardFolder) -> list[tuple[str, str, pl.DataFrame]]:
    """(key, label, rows) per method, and per category when ratings carry a `category` column."""
    ratings = board.ratings
    out = []
    for spec in board.methods:
        rows = ratings.filter(pl.col("method") == spec)
        groups = [(None, rows)]
        if "category" in rows.columns and rows.get_column("category").null_count() < rows.height:
            groups = [(c, rows.filter(pl.col("category") == c)) for c in sorted(set(rows.get_column("category").drop_nulls().to_list()))]
        for category, part in groups:
            label = method_label(spec)[0] + (f" \u00b7 {category}" if category else "")
            out.append((spec if category is None else f"{spec}|{category}", label, part.sort(["rank", "agent"])))
    return out


def split_provisional(rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A leaderboard's established agents and its provisional ones (`pipeline.methods.standing`), shown apart."""
    if PROVISIONAL not in rows.columns:
        return rows, rows.clear()
    flag = pl.col(PROVISIONAL).fill_null(False)
    return rows.filter(~flag), rows.filter(flag)


def method_stems(specs: list[str]) -> dict[str, str]:
    """The file stem of each spec's tables: the method name, `<name>-2` for its second spec (as published)."""
    seen: dict[str, int] = {}
    stems = {}
    for spec in specs:
        name = spec.partition(":")[0]
        seen[name] = seen.get(name, 0) + 1
        stems[spec] = name if seen[name] == 1 else f"{name}-{seen[name]}"
    return stems


def ratings_image(label: str, rows: pl.DataFrame) -> Image:
    shown = rows.head(PLOT_AGENTS)
    has_ci = {"ci_low", "ci_high"} <= set(shown.columns) and shown.get_column("ci_low").null_count() < shown.height
    low = shown.get_column("ci_low").to_list() if has_ci else None
    high = shown.get_column("ci_high").to_list() if has_ci else None
    hidden = rows.height - shown.height
    caption = ("Dots are scores, whiskers 95% intervals." if has_ci else "Scores (this method publishes no interval).") + \
        (f" Top {shown.height} shown; {hidden} more agents are in the table and ratings.parquet." if hidden else "")
    svg = plots.interval_plot(shown.get_column("agent").to_list(), shown.get_column("score").to_list(), low, high,
                              xlabel=f"{label} score")
    return image(svg, f"{label}: scores of the top {shown.height} agents", caption, "ratings-plot")


def heatmap_image(board: BoardFolder, order: list[str], headline: str) -> tuple[Image | None, str]:
    pairwise = board.pairwise
    if pairwise is None or pairwise.height == 0 or not order:
        return None, ""
    agents = order[:HEATMAP_AGENTS]
    position = {a: i for i, a in enumerate(agents)}
    rates = np.full((len(agents), len(agents)), np.nan)
    for a, b, rate in pairwise.filter(pl.col("agent").is_in(agents) & pl.col("opponent").is_in(agents)).select(
            "agent", "opponent", "win_rate").iter_rows():
        rates[position[a], position[b]] = rate
    hidden = len(order) - len(agents)
    note = (f"Share of comparisons the row agent won against the column agent (ties count half), agents in {headline}'s "
            "order; grey cells never met. A cell of few comparisons is noisy: the counts are in pairwise.parquet."
            + (f" Top {len(agents)} shown; {hidden} more agents are not." if hidden else ""))
    svg = plots.matrix_plot(agents, rates, colourbar="win rate of row against column", vmin=0.0, vmax=1.0, xlabel="opponent")
    return image(svg, f"win rates of the top {len(agents)} agents against each other", note, "heatmap"), note


def agreement_parts(specs: list[str], ranks: dict[str, dict[str, int]], order: list[str]) -> tuple[Image | None, Table | None, Table | None]:
    if len(specs) < 2:
        return None, None, None
    labels = [method_label(s)[0] for s in specs]
    tau = kendall_matrix(ranks)
    svg = plots.matrix_plot(labels, tau, colourbar="Kendall tau-b", vmin=-1.0, vmax=1.0, annotate=True)
    caption = ("1 is the same order, 0 no relation, -1 the reverse, over the agents both methods rank; "
               "grey where a method ranks every agent level.")
    figure = image(svg, "Kendall tau-b between the methods' rankings", caption, "agreement")
    head = [Column("agent")] + [Column(label, spec, True) for label, spec in zip(labels, specs)] + \
        [Column("spread", "worst rank minus best rank over the methods", True)]
    body = []
    for agent in order[: 100]:
        values = [ranks[s].get(agent) for s in specs]
        present = [v for v in values if v is not None]
        spread = max(present) - min(present) if present else None
        body.append([Cell(agent, agent, "agent")] + [Cell("" if v is None else str(v), v) for v in values] +
                    [Cell("" if spread is None else str(spread), spread, "wide" if spread is not None and spread > RANK_GAP else "")])
    note = f"Top {min(100, len(order))} agents by the first method; the spread is highlighted above {RANK_GAP} places."
    matrix = Table(head, body, "sortable ranks", note=note)
    found = disagreements(ranks)
    listed = None
    if found:
        label = dict(zip(specs, labels))
        listed = Table([Column("agent"), Column("places apart", "worst rank minus best rank", True), Column("best rank (by)", "", True),
                        Column("worst rank (by)", "", True)],
                       [[Cell(d.agent, d.agent, "agent"), Cell(str(d.spread), d.spread),
                         Cell(f"{d.best} ({names([label[m] for m in d.best_by], 2)})", d.best),
                         Cell(f"{d.worst} ({names([label[m] for m in d.worst_by], 2)})", d.worst)]
                        for d in found[:DISAGREEMENTS_SHOWN]], "sortable disagreements",
                       note=f"{len(found)} agents rank more than {RANK_GAP} places apart under two methods"
                            + (f"; the {DISAGREEMENTS_SHOWN} widest are shown." if len(found) > DISAGREEMENTS_SHOWN else "."))
    return figure, matrix, listed


def history_image(history: pl.DataFrame, board: str, spec: str, label: str, order: list[str]) -> tuple[Image | None, str]:
    rows = history.filter((pl.col("board") == board) & (pl.col("method") == spec))
    runs = sorted(set(rows.get_column("run_id").to_list()))
    if len(runs) < 2:
        return None, ""
    agents = order[:HISTORY_AGENTS]
    score = {(r, a): s for r, a, s in rows.select("run_id", "agent", "score").iter_rows()}
    series = {a: [score.get((r, a)) for r in runs] for a in agents}
    svg = plots.lines_plot([run_label(r) for r in runs], series, ylabel=f"{label} score", title=f"{label} over the last {len(runs)} runs")
    note = f"Scores of today's top {len(agents)} agents under {label}, one point per nightly run (UTC)."
    return image(svg, f"{label} scores over time", note, "history"), note


def run_label(run_id: str) -> str:
    match = re.match(r"(\d{4}-\d{2}-\d{2})T(\d{2})(\d{2})", run_id)
    return f"{match.group(1)} {match.group(2)}:{match.group(3)}" if match else run_id


def board_page(board: BoardFolder, history: pl.DataFrame, run_id: str | None) -> BoardPage:
    specs = board.methods
    records = dict(board.agents.select("agent", "records").iter_rows()) if board.agents is not None else None
    stems = method_stems(specs)
    diagnostics = section(board.run, "diagnostics")
    taken: set[str] = set()
    panels, ranks = [], {}
    for key, label, rows in leaderboards(board):
        spec = key.partition("|")[0]
        title, params, summary = method_label(spec)
        previous, before = rank_changes(history, board.name, spec, run_id) if "|" not in key else (None, {})
        tables = {name: t for name, t in board.tables.items() if name.startswith(stems[spec] + ".")}
        established, provisional = split_provisional(rows)
        table = leaderboard_table(established, changes=before if previous else None, previous=previous, records=records)
        info = diagnostics.get(spec) if isinstance(diagnostics.get(spec), dict) else {}
        context = Context(dict(p.split("=", 1) for p in params.split(", ") if "=" in p), rows, tables)
        extra = [frame_table(t, caption=name) for name, t in sorted(tables.items())]
        if further := own_columns(rows)[1]:
            extra.insert(0, long_table(rows, further))
        if "ordered_by" in info:
            table.caption = standing_sentence(info)
        if provisional.height:
            extra.insert(0, leaderboard_table(provisional, records=records))
            extra[0].caption = f"provisional agents ({provisional.height}): fewer records than the board's minimum"
            extra[0].css = "sortable provisional"  # not the method's leaderboard
        panels.append(MethodPanel(anchor(label, taken), label, spec, summary, table, ratings_image(label, rows),
                                  describe(info if "|" not in key else {}, context), extra))
        if "|" not in key:
            ranks[spec] = dict(zip(rows.get_column("agent").to_list(), rows.get_column("rank").to_list()))
    first = specs[0] if specs else ""
    order = sorted(ranks.get(first, {}), key=lambda a: (ranks[first][a], a))
    headline = method_label(first)[0] if first else ""
    heatmap, heatmap_note = heatmap_image(board, order, headline)
    agreement, matrix, listed = agreement_parts([s for s in specs if s in ranks], ranks, order)
    history_plot, history_note = history_image(history, board.name, first, headline, order) if first else (None, "")
    prov = provenance(board.run)
    run_rows = section(board.run, "rows")
    rated = board.ratings.get_column("agent").n_unique() if "agent" in board.ratings.columns else 0  # 0: every method refused
    facts = [("agents", number(len(order) or rated)),
             ("methods", number(len(specs))), ("kind", str(board.run.get("kind", "")))]
    if run_rows:
        facts += [("rows accepted", number(run_rows.get("rows_accepted", 0))), ("quarantined", number(run_rows.get("rows_quarantined", 0)))]
    if run_id:
        facts.append(("run", f"{run_label(run_id)} UTC"))
    children, failed = sub_boards(board)
    return BoardPage(board.title, board.name, facts, prov.alerts + failed, panels, headline, heatmap, heatmap_note, agreement, matrix, listed,
                     history_plot, history_note, children, prov)


def sub_boards(board: BoardFolder) -> tuple[list[tuple[str, str, str]], list[Note]]:
    """The board's sub-boards as (name, link, leader), named by the category their run.json gives
    (else by their folder), and a note per category of the board's run.json that failed."""
    children = []
    for child in board.children:
        name = str(section(child.run, "parameters").get("category") or child.path.name.removeprefix(CATEGORY_PREFIX))
        children.append((name, f"{quote(child.path.name, safe='=')}/index.html", leader(child)))
    categories = section(board.run, "categories")
    failed = [Note(f"Category {entry.get('category')!r} failed and was not published: {entry['failed']}", "warn")
              for entry in categories.get("boards") or [] if isinstance(entry, dict) and entry.get("failed")]
    return children, failed


def leader(board: BoardFolder) -> str:
    specs = board.methods
    if not specs:
        return ""
    rows = board.ratings.filter((pl.col("method") == specs[0]) & (pl.col("rank") == 1))
    return names(sorted(rows.get_column("agent").to_list()), 3)


@dataclass
class BacktestPage:
    title: str
    facts: list[tuple[str, str]]
    alerts: list[Note]
    summary: Table
    errors: Image
    differences: Image | None
    scatter: Image | None
    provenance: Provenance


def backtest_page(backtest: BacktestFolder) -> BacktestPage:
    summary, results = backtest.summary, backtest.results
    params = section(backtest.run, "parameters")
    reference = str(params.get("reference", ""))
    methods = summary.get_column("method").to_list()
    labels = [method_label(m)[0] for m in methods]
    verdicts = summary.get_column("verdict").to_list() if "verdict" in summary.columns else [None] * len(methods)
    colour = {"better": plots.GOOD, "worse": plots.BAD, "reference": plots.REFERENCE}
    colours = [colour.get(v, plots.NEUTRAL) for v in verdicts]
    metric = "Kendall-tau distance per test game"
    errors = image(plots.interval_plot(labels, summary.get_column("mean").to_list(), summary.get_column("ci_low").to_list(),
                                       summary.get_column("ci_high").to_list(), xlabel=f"mean {metric} (lower is better)",
                                       title="Error per method", colours=colours),
                   "mean error per method with 95% intervals",
                   "Mean over splits with a 95% t interval; green: better than the reference, red: worse, black: the reference.",
                   "errors")
    differences = None
    if "diff_mean" in summary.columns and summary.get_column("diff_mean").null_count() < summary.height:
        rows = summary.filter(pl.col("diff_mean").is_not_null())
        differences = image(plots.interval_plot([method_label(m)[0] for m in rows.get_column("method").to_list()],
                                                rows.get_column("diff_mean").to_list(), rows.get_column("diff_low").to_list(),
                                                rows.get_column("diff_high").to_list(), zero_line=True,
                                                xlabel=f"method minus {method_label(reference)[0]}, paired by split",
                                                title="Paired difference from the reference",
                                                colours=[colour.get(v, plots.NEUTRAL) for v in rows.get_column("verdict").to_list()]),
                            "paired differences from the reference", "Below zero: the method predicts better than the reference.",
                            "differences")
    scatter = None
    if reference in methods and len(methods) > 1 and {"split", "kendall"} <= set(results.columns):
        wide = results.pivot(on="method", index="split", values="kendall", aggregate_function="first").sort("split")
        panels = {method_label(m)[0]: wide.get_column(m).to_list() for m in methods if m != reference and m in wide.columns}
        scatter = image(plots.scatter_panels(method_label(reference)[0], wide.get_column(reference).to_list(), panels, label="error"),
                        "per-split error of each method against the reference",
                        "One point per split; below the diagonal the method erred less than the reference on that split.", "scatter")
    table = frame_table(summary, caption="Summary per method")
    prov = provenance(backtest.run)
    facts = [("methods", number(len(methods))), ("splits", number(int(results.get_column("split").n_unique())) if "split" in results.columns else ""),
             ("reference", method_label(reference)[0] if reference in methods
              else f"none ({method_label(reference)[0]} is not among the methods)" if reference else "none"),
             ("kind", str(backtest.run.get("kind", "")))]
    return BacktestPage(backtest.title, facts, prov.alerts, table, errors, differences, scatter, prov)


@dataclass
class Card:
    title: str
    name: str
    link: str
    kind: str
    facts: list[tuple[str, str]]
    top: list[tuple[str, str, str, Cell | None]]  # (rank, agent, score, change)
    method: str
    alerts: list[Note]


def board_card(board: BoardFolder, history: pl.DataFrame, run_id: str | None) -> Card:
    specs = board.methods
    first = specs[0] if specs else ""
    rows = board.ratings.filter(pl.col("method") == first).sort(["rank", "agent"]) if first else board.ratings.clear()
    previous, before = rank_changes(history, board.name, first, run_id) if first else (None, {})
    table = leaderboard_table(rows, changes=before if previous else None, previous=previous, limit=CARD_AGENTS)
    at = {c.name: i for i, c in enumerate(table.columns)}
    top = [(row[at["rank"]].text, row[at["agent"]].text, row[at["score"]].text, row[at["change"]] if "change" in at else None)
           for row in table.rows]
    run_rows = section(board.run, "rows")
    facts = [("agents", number(rows.height)), ("methods", number(len(specs))), ("rows", number(run_rows.get("rows_accepted", 0)))]
    return Card(board.title, board.name, f"{board.path.name}/index.html", str(board.run.get("kind", "")), facts, top,
                method_label(first)[0] if first else "", provenance(board.run).alerts)


def backtest_card(backtest: BacktestFolder) -> Card:
    best = backtest.summary.sort("mean").head(CARD_AGENTS)
    top = [(str(i + 1), method_label(r["method"])[0], f"{r['mean']:.4g}", None) for i, r in enumerate(best.iter_rows(named=True))]
    return Card(backtest.title, backtest.name, f"{backtest.path.name}/index.html", "backtest",
                [("methods", number(backtest.summary.height))], top, "mean error", provenance(backtest.run).alerts)


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("pipeline.report", "templates"), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env


def render(template: str, **values: object) -> str:
    env = environment()
    # The style sheet and script are the package's own files, inlined as they are (not data to escape).
    assets = {name: markupsafe.Markup(env.loader.get_source(env, source)[0]) for name, source in (("style", "report.css"), ("script", "report.js"))}
    return env.get_template(template).render(**assets, **values)


def write_board_pages(board: BoardFolder, history: pl.DataFrame, run_id: str | None, up: str | None) -> Path:
    page = board_page(board, history, run_id)
    path = board.path / "index.html"
    write_text(path, render("board.html.j2", page=page, up=up))
    for child in board.children:
        write_board_pages(child, history, run_id, "../index.html")
    return path


def write_report(folder: str | Path, *, history: str | Path | None = None, run_id: str | None = None) -> Path:
    """Write the HTML report of a published folder (a board, a backtest, or a nightly run of several)
    and return the path of its `index.html`.

    `history` is the nightly's history file (default: `<out>/history.parquet` beside a folder
    `<out>/runs/<run id>`) and `run_id` this run's id (default: the folder's name); with both, the
    report shows rank changes since the previous run and scores over time. A board whose page
    cannot be built is named on the run's index page; the others are written."""
    folder = Path(folder)
    run_id = run_id or run_id_of(folder)
    history_path = Path(history) if history is not None else history_beside(folder)
    past = with_run(read_history(history_path), folder, run_id) if run_id else read_history(None)
    found = read_run(folder)
    if len(found) == 1 and found[0].path == folder:
        return write_folder(found[0], past, run_id, None)
    cards = []
    failed = [Note(f"Board {name} failed and was not published: {why}", "warn") for name, why in read_failures(folder).items()]
    failed += [Note(f"The outputs of {path.parent.name} are not shown: {path.name} cannot be read (cut short, or not Parquet)", "warn")
               for path in unreadable_outputs(folder)]
    for item in found:
        try:
            write_folder(item, past, run_id, "../index.html")
            cards.append(board_card(item, past, run_id) if isinstance(item, BoardFolder) else backtest_card(item))
        except Exception as exc:  # one board's broken outputs never hide the others' reports
            log.exception("report of %s failed", item.path)
            failed.append(Note(f"The report of {item.name} could not be built: {type(exc).__name__}: {exc}", "warn"))
    path = folder / "index.html"
    previous = past.filter(pl.col("run_id") < run_id).get_column("run_id").max() if run_id and past.height else None
    write_text(path, render("index.html.j2", cards=cards, failed=failed, up=None, previous=run_label(previous) if previous else None,
                            title=f"run of {run_label(run_id)} UTC" if run_id else folder.name))
    return path


def write_folder(item: Folder, history: pl.DataFrame, run_id: str | None, up: str | None) -> Path:
    if isinstance(item, BoardFolder):
        return write_board_pages(item, history, run_id, up)
    path = item.path / "index.html"
    write_text(path, render("backtest.html.j2", page=backtest_page(item), up=up))
    return path
