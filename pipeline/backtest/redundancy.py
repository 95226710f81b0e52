"""The redundancy experiment of [GTLLM] section 4.2 on a score table.

Copies of tasks adversarial to one agent (by default the top agent by mean normalised score) are
added to the table, c = 0, c_1, c_2, ... copies, and every method rates each augmented table.
Averaging methods (Elo, m-Elo, uniform) count a task as often as it appears, so the target's rank
falls as copies pile up; methods that rate at a clone-invariant equilibrium (Nash averaging
[Bal18], deviation ratings [DevR], the affinity-entropy CCE [GTLLM]) do not move.

Adversarial tasks: with u(t) = mean over the other agents b of T(target, t) - T(b, t) (T the
normalised scores; [GTLLM] section 4.2's expected king payoff against a random rebel), copies are
drawn from softmax(-temperature * u) with replacement, by a seeded generator; the first c draws
make the table with c copies, so the tables are nested. Copies are appended after the original
tasks, named `<task>#copy<i>`.

Elo and m-Elo read a pairwise view of the table, each task a voter ranking the agents by score
(the reduction of score logs, `pipeline.logs.scores.task_orders`): a task is a multi-player game
(kind `games`), online Elo updates the pairs of one task at once, tasks in table order (so the
copies come last, as newly submitted prompts would).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
from scipy.special import softmax

from pipeline.games import normalise
from pipeline.methods import run
from pipeline.stats import Statistics
from pipeline.stats.game_pairs import PerGameCounts
from pipeline.stats.game_data import ScoreTable
from pipeline.stats.partials import WeakOrders, weak_order_partial
from pipeline.stats.sequence import ComparisonSequence

SPECS = ("elo", "m-elo:bootstrap=0", "uniform", "nash-averaging", "deviation", "affinity-cce")


def adversarial_draws(table: ScoreTable, target: int, draws: int, *, temperature: float = 10.0, seed: int = 0,
                      norm: str = "minmax") -> np.ndarray:
    """`draws` task indices from softmax(-temperature * u), u(t) the target's mean margin on task t."""
    t, _ = normalise(table, norm)
    others = np.arange(len(table.agents)) != target
    margin = t[target] - t[others].mean(axis=0)
    return np.random.default_rng(seed).choice(len(table.tasks), size=draws, p=softmax(-temperature * margin))


def with_copies(table: ScoreTable, tasks: np.ndarray) -> ScoreTable:
    """The table with a copy of each task in `tasks` appended (repeats allowed)."""
    names = table.tasks + tuple(f"{table.tasks[j]}#copy{i}" for i, j in enumerate(tasks))
    return ScoreTable(table.agents, names, np.hstack([table.scores, table.scores[:, tasks]]),
                      np.r_[table.higher_is_better, table.higher_is_better[tasks]], np.r_[table.task_weight, table.task_weight[tasks]])


def _task_orders(table: ScoreTable) -> WeakOrders:
    """Each task a ballot over the local agents scored on it (lower level is better)."""
    level = np.where(table.higher_is_better[None, :], -table.scores, table.scores)
    agent, task = np.nonzero(~np.isnan(level))
    return WeakOrders.from_rows(task, agent, level[agent, task], table.task_weight[task])


def _sequence(table: ScoreTable) -> ComparisonSequence:
    """All pairs of agents scored on each task, task by task; a task is one group of online Elo."""
    level = np.where(table.higher_is_better[None, :], table.scores, -table.scores)
    k = len(table.agents)
    i, j = np.triu_indices(k, 1)
    parts = []
    for task in range(len(table.tasks)):
        x, y = level[i, task], level[j, task]
        keep = ~(np.isnan(x) | np.isnan(y))
        score = np.where(x[keep] > y[keep], 1.0, np.where(x[keep] < y[keep], 0.0, 0.5))
        players = int((~np.isnan(level[:, task])).sum())
        n = int(keep.sum())
        parts.append((i[keep], j[keep], score, np.full(n, table.task_weight[task]), np.full(n, players), np.full(n, task)))
    a, b, score, weight, players, group = (np.concatenate(c) for c in zip(*parts))
    return ComparisonSequence(np.arange(k), a, b, score, weight, players, group)


def pairwise_view(table: ScoreTable) -> Statistics:
    """Statistics of the table as a `games` log over local agents 0..k-1: each task ranks the agents.

    Carries `pairwise`, `sequence`, `pairwise_per_game` (None: the methods then use `pairwise`, every
    pair of a task weighted by the task's weight) and the table itself as `game_data`.
    """
    k = len(table.agents)
    partial = weak_order_partial(_task_orders(table), k, frozenset({"pairwise"}), dense=True)
    present = np.arange(k)
    if np.any(partial.appearances == 0):
        raise ValueError("every agent needs a score on some task")
    extra = {"game_data": ScoreTable(present, table.tasks, table.scores, table.higher_is_better, table.task_weight),
             "sequence": _sequence(table), "pairwise_per_game": PerGameCounts(None)}
    return Statistics("games", present, partial.appearances, partial.pairs.finalize(present), extra=extra)


def tolerant_ranks(score: np.ndarray, rel_tol: float) -> np.ndarray:
    """1 + the number of agents better by more than rel_tol * max |score| (near-ties share a rank)."""
    slack = rel_tol * max(float(np.abs(score).max(initial=0.0)), 1e-300)
    return 1 + (score[None, :] > score[:, None] + slack).sum(axis=1)


def redundancy(table: ScoreTable, copies: Sequence[int], *, specs: Sequence[str] = SPECS, target: int | None = None,
               temperature: float = 10.0, seed: int = 0, rank_tol: float = 1e-6) -> pa.Table:
    """Ranks per method and number of copies: columns copies, method, agent (store id), score, rank, target.

    `target` is a local agent index (default: the best mean normalised score). Ranks treat scores
    within `rank_tol` (relative) as tied, since equilibrium ratings are computed to a tolerance.
    """
    if not copies or min(copies) < 0:
        raise ValueError("copies must be a non-empty list of non-negative counts")
    if target is None:
        target = int(np.argmax(normalise(table, "minmax")[0].mean(axis=1)))
    draws = adversarial_draws(table, target, max(copies), temperature=temperature, seed=seed)
    columns: dict[str, list] = {"copies": [], "method": [], "agent": [], "score": [], "rank": [], "target": []}
    k = len(table.agents)
    for c in copies:
        stats = pairwise_view(with_copies(table, draws[:c]))
        for spec in specs:
            rated = run(spec, stats)
            score = np.empty(k)
            score[rated.agents] = rated.score
            columns["copies"] += [c] * k
            columns["method"] += [spec] * k
            columns["agent"] += table.agents.tolist()
            columns["score"] += score.tolist()
            columns["rank"] += tolerant_ranks(score, rank_tol).tolist()
            columns["target"] += (np.arange(k) == target).tolist()
    return pa.table(columns)


def rank_movement(results: pa.Table) -> dict[str, dict[str, int]]:
    """Per method: the target's rank with no copies and with the most, and the largest rank change of any agent."""
    out: dict[str, dict[str, int]] = {}
    rows = results.to_pydict()
    for spec in dict.fromkeys(rows["method"]):
        mine = [i for i, m in enumerate(rows["method"]) if m == spec]
        counts = sorted({rows["copies"][i] for i in mine})
        base = {rows["agent"][i]: rows["rank"][i] for i in mine if rows["copies"][i] == counts[0]}
        target = next(rows["agent"][i] for i in mine if rows["target"][i])
        most = {rows["agent"][i]: rows["rank"][i] for i in mine if rows["copies"][i] == counts[-1]}
        moved = max(abs(rows["rank"][i] - base[rows["agent"][i]]) for i in mine)
        out[spec] = {"target_rank_before": base[target], "target_rank_after": most[target], "max_rank_change": moved}
    return out
