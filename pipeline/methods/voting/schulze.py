"""Schulze: strongest paths in the majority graph [Sch11]; [VasE, appendix C.2.7].

A link a -> b exists when a wins the pair, N(a, b) > N(b, a), and has strength N(a, b) (winning
votes). P(a, b) is the strength of the strongest path (the widest path, by Floyd-Warshall, compiled
in `widest_paths`), and a is above b when P(a, b) > P(b, a). That relation is a strict partial order [Sch11, section 4];
when it is not complete, the order is its layering: the first tie group is the Schulze winners
(no agent above them), the next the winners once those are removed, and so on. Rank 1 is thus
exactly the Schulze winner set, which is what the clone-independence theorem is about.

Score: [VasE] defines it in words as the preference for a over the agents below it; its worked
example (scores 7, 4, 0) and OpenSpiel's `schulze.py` accumulate N along the order from the
bottom: score(last) = 0 and score(g) = score(next) + N(g, next). For tie groups, N(g, next) is the
mean of N over the pairs of the two groups.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from pipeline.cancellation import raise_if_stopped
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import COMPILED_FIRST_USE_S, Cost, Size, method, one_of
from pipeline.methods.voting.majority import condorcet_info, dense_counts, order_info, ranked
from pipeline.stats.counts import PairwiseCounts

SHOW_PATHS = 32  # agents; up to this size `info["strongest_paths"]` holds the matrix P
STEP_CELLS = 2**24  # cells a compiled chunk of steps updates at most (tens of ms) before SIGTERM is looked at


def strongest_paths(wins: np.ndarray) -> np.ndarray:
    """P(a, b), the widest path over winning links: Floyd-Warshall's m steps (`widest_paths.widen`) on the links'
    ranks among their values, in chunks of about `STEP_CELLS` cells so that SIGTERM stops it between two."""
    from pipeline.methods.voting.widest_paths import widen  # numba is imported on first use only

    links = np.where(wins > wins.T, wins, 0.0)  # counts: no link is below 0, the diagonal's 0 is rank 0
    values, ranks = np.unique(links, return_inverse=True)
    paths = ranks.reshape(links.shape).astype(np.uint16 if len(values) <= 2**16 else np.uint32)
    m = len(paths)
    chunk = max(1, STEP_CELLS // max(m * m, 1))
    for first in range(0, m, chunk):
        raise_if_stopped()
        widen(paths, first, min(first + chunk, m))
    found = values[paths]
    np.fill_diagonal(found, 0.0)
    return found


def strongest_paths_plain(wins: np.ndarray) -> np.ndarray:
    """Reference: the textbook triple loop of [Sch11, section 2.3]."""
    m = len(wins)
    paths = np.where(wins > wins.T, wins, 0.0)
    for i in range(m):
        for j in range(m):
            if i != j:
                for k in range(m):
                    if k not in (i, j):
                        paths[j, k] = max(paths[j, k], min(paths[j, i], paths[i, k]))
    return paths


def layers(above: np.ndarray) -> list[list[int]]:
    """Tie groups of a strict partial order (above[a, b]: a above b): the maximal agents, repeatedly."""
    left = np.ones(len(above), dtype=bool)
    groups = []
    while left.any():
        top = left & ~(above & left[:, None]).any(axis=0)
        groups.append(np.flatnonzero(top).tolist())
        left &= ~top
    return groups


def cumulative_score(wins: np.ndarray, groups: list[list[int]]) -> np.ndarray:
    """Sum of N between consecutive groups of the order, from the bottom up (0 for the last)."""
    score = np.zeros(len(wins))
    total = 0.0
    for upper, lower in zip(groups[-2::-1], groups[:0:-1]):
        total += float(wins[np.ix_(upper, lower)].mean())
        score[upper] = total
    return score


def schulze_cost(size: Size, params: Mapping[str, object]) -> Cost:
    """m compiled steps, each a pass over the rows that reach its agent: 5e-10 CPU s per m^3 on dense random margins
    (1,000 and 2,000 agents, every pair a link: 4.3-5.6e-10 at load 8), where every row is passed; WTA's 2,692
    players, most pairs never met, 1e-10 (2.0 s); and the compiled loop's first use in the process. The plain
    triple loop in Python 4.8e-7 s per m^3. The links and their values' ranks (a sort of m^2 cells), the paths in 2
    or 4 bytes a cell, the paths' values."""
    m = size.agents
    seconds = COMPILED_FIRST_USE_S + 5e-10 * m**3 if params["algorithm"] == "fast" else 4.8e-7 * m**3
    return Cost(seconds, 6 * 8.0 * m**2,
                "rate with borda or copeland, or fewer agents (--where)" if params["algorithm"] == "fast"
                else "rate with schulze:algorithm=fast", f"widest paths over {m:,} agents")


@method("schulze", needs=("pairwise",), rules={"algorithm": one_of("fast", "plain")}, cost=schulze_cost)
def schulze(pairs: PairwiseCounts, *, algorithm: str = "fast") -> Ratings:
    """Schulze: order by strongest paths; score accumulates N along the order."""
    wins, _ = dense_counts(pairs, "schulze")
    paths = strongest_paths(wins) if algorithm == "fast" else strongest_paths_plain(wins)
    above = paths > paths.T
    groups = layers(above)
    return ranked(pairs.agents, groups, cumulative_score(wins, groups),
                  extras={"schulze_wins": above.sum(axis=1).astype(np.int64)},
                  info={**condorcet_info(pairs), **order_info(pairs.agents, groups),
                        **({"strongest_paths": paths.tolist()} if pairs.n <= SHOW_PATHS else {})})
