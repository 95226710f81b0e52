"""Ranked pairs (Tideman's method) [Tid87]; [VasE, appendix C.2.8].

Pairs with a positive margin M(a, b) > 0 are locked as edges a -> b in decreasing order of
margin, skipping any edge that would close a cycle. Pairs with equal margins are one batch and
are decided together, so the result never depends on the order of agents or ballots: an edge of
the batch is locked unless it closes a cycle with the edges locked before the batch or with the
other surviving edges of the batch. (Tideman breaks such ties with a tie-breaking ballot; the
two rules agree when no edge is dropped that way, which `info["tied_edges_dropped"]` counts.)

The order takes all current sources (no incoming edge, at least one outgoing edge) as the next
tie group and removes them; agents left with no edge at all come last, tied. Score [VasE,
C.2.8]: the sum of the margins of all locked edges reachable from the agent when it is removed.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import Cost, Size, method, one_of
from pipeline.methods.voting.majority import condorcet_info, dense_counts, order_info, ranked
from pipeline.stats.counts import PairwiseCounts


def _batches(margins: np.ndarray) -> list[list[tuple[int, int]]]:
    """Pairs with positive margin, grouped by equal margin, largest first."""
    rows, cols = np.nonzero(margins > 0)
    values = margins[rows, cols]
    return [list(zip(rows[values == v].tolist(), cols[values == v].tolist())) for v in np.unique(values)[::-1]]


def _close(reach: np.ndarray, a: int, b: int) -> None:
    """Add the edge a -> b to a reflexive transitive closure, in place: every agent reaching a now reaches what b
    reaches; one that reached b already reaches all of it (the closure is transitive), so its row is left alone."""
    rows = np.flatnonzero(reach[:, a] & ~reach[:, b])
    reach[rows] |= reach[b]


def lock(margins: np.ndarray) -> np.ndarray:
    """The locked graph (boolean adjacency), with the reachability matrix kept up to date."""
    return _lock(margins)[0]


def _lock(margins: np.ndarray) -> tuple[np.ndarray, int]:
    """The locked graph and the number of edges dropped only for a tie inside their batch."""
    m = len(margins)
    graph = np.zeros((m, m), dtype=bool)
    reach = np.eye(m, dtype=bool)
    dropped = 0
    for batch in _batches(margins):
        fresh = [(a, b) for a, b in batch if not reach[b, a]]
        trial = reach.copy()
        for a, b in fresh:
            _close(trial, a, b)
        for a, b in fresh:
            if trial[b, a]:
                dropped += 1
            else:
                graph[a, b] = True
                _close(reach, a, b)
    return graph, dropped


def lock_plain(margins: np.ndarray) -> np.ndarray:
    """Reference: the same rule with a depth-first search for every cycle test."""
    m = len(margins)
    graph = np.zeros((m, m), dtype=bool)

    def path(g: np.ndarray, start: int, goal: int) -> bool:
        seen, stack = {start}, [start]
        while stack:
            node = stack.pop()
            if node == goal:
                return True
            for nxt in np.flatnonzero(g[node]).tolist():
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return False

    for batch in _batches(margins):
        fresh = [(a, b) for a, b in batch if not path(graph, b, a)]
        trial = graph.copy()
        for a, b in fresh:
            trial[a, b] = True
        for a, b in fresh:
            if not path(trial, b, a):
                graph[a, b] = True
    return graph


def peel(graph: np.ndarray, margins: np.ndarray) -> tuple[list[list[int]], np.ndarray]:
    """Tie groups by repeated removal of sources, and each agent's reachable-margin score."""
    m = len(graph)
    reach = np.eye(m, dtype=bool)
    for a, b in zip(*np.nonzero(graph)):
        _close(reach, int(a), int(b))
    weight = np.where(graph, margins, 0.0)
    left = np.ones(m, dtype=bool)
    groups, score = [], np.zeros(m)
    while left.any():
        live = graph & left[:, None] & left[None, :]
        sources = np.flatnonzero(left & ~live.any(axis=0) & live.any(axis=1))
        if not len(sources):
            groups.append(np.flatnonzero(left).tolist())
            break
        for s in sources:
            inside = reach[s] & left
            score[s] = weight[np.ix_(inside, inside)].sum()
        groups.append(sources.tolist())
        left[sources] = False
    return groups, score


def ranked_pairs_cost(size: Size, params: Mapping[str, object]) -> Cost:
    """The fast lock keeps the reachability closed, each locked pair an update of the rows that reach its winner
    and not yet its loser: 2.5e-8 CPU s per pair x m (WTA's 2,692 players and 37,576 positive margins, 3.05 s at
    load 10, where the whole matrix's update per pair took 47 s), and 1.4e-5 s per pair in Python around it
    (LiveBench's 127 models, all 8,001 pairs: 0.11 s a fit; dense random margins of 400 to 1,600 agents,
    0.6-1.4e-5 s a pair all told); the plain one searches the graph for each pair: 6.5e-7 s per pair x m (dense, 40
    and 80 agents)."""
    m, pairs = size.agents, max(size.pairs, 1)
    fast = params["algorithm"] == "fast"
    return Cost(1.4e-5 * pairs + (2.5e-8 if fast else 6.5e-7) * pairs * m, 3 * 8.0 * m**2,
                "rate with schulze, or fewer agents (--where)" if fast else "rate with ranked-pairs:algorithm=fast",
                f"{pairs:,} pairs locked among {m:,} agents")


@method("ranked-pairs", needs=("pairwise",), rules={"algorithm": one_of("fast", "plain")}, cost=ranked_pairs_cost)
def ranked_pairs(pairs: PairwiseCounts, *, algorithm: str = "fast") -> Ratings:
    """Ranked pairs: lock majorities from strongest to weakest unless they close a cycle."""
    _, margins = dense_counts(pairs, "ranked-pairs")
    graph, dropped = _lock(margins)
    if algorithm == "plain":
        graph = lock_plain(margins)
    groups, score = peel(graph, margins)
    return ranked(pairs.agents, groups, score,
                  info={**condorcet_info(pairs), **order_info(pairs.agents, groups),
                        "locked_edges": int(graph.sum()), "tied_edges_dropped": dropped})
