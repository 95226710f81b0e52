"""Ranked pairs: order-free batches of equal margins, the plain reference."""

from __future__ import annotations

import numpy as np

from pipeline import methods
from pipeline.methods.voting.ranked_pairs import lock, lock_plain, peel
from pipeline.stats.in_memory import profile
from tests.voting_profiles import mixed_profiles


def test_fast_equals_plain():
    for ballots in mixed_profiles(1, 30):
        margins = profile(ballots)[0].pairwise.margins
        np.testing.assert_array_equal(lock(margins), lock_plain(margins))


def test_equal_margin_cycle_locks_nothing(condorcet_cycle):
    # The three margins of rock-paper-scissors are equal: locking any two in input order would
    # pick a winner by label. The batch rule drops all three edges, so everyone ties.
    r = methods.run("ranked-pairs", condorcet_cycle[0])
    assert r.info["locked_edges"] == 0
    np.testing.assert_array_equal(r.rank, [1, 1, 1])


def test_weaker_cycle_edge_skipped():
    # Margins a>b 3, then a batch b>c 1 and c>a 1. Either batch edge alone fits after a>b, both
    # together close a>b>c>a: the batch rule drops both rather than pick one by label.
    stats, _ = profile(["a>b>c", "a>b>c", "c>a>b", "b>c>a", "c>a>b"])
    np.testing.assert_array_equal(stats.pairwise.margins, [[0, 3, -1], [-3, 0, 1], [1, -1, 0]])
    graph = lock(stats.pairwise.margins)
    assert graph[0, 1] and not graph[1, 2] and not graph[2, 0]


def test_sparse_margins_lock_and_score_as_a_closure_from_scratch():
    # Most pairs never met (as in WTA, 2,692 players): the closure then updates only the rows that reach a locked
    # pair's winner and not yet its loser. The locked graph is the plain search's; each score sums the margins of
    # the locked edges inside what the agent reaches, here from Warshall's closure of the final graph.
    rng = np.random.default_rng(11)
    for agents, density in ((40, 0.08), (120, 0.03), (120, 0.3)):
        wins = rng.integers(0, 4, size=(agents, agents)) * (rng.uniform(size=(agents, agents)) < density)
        margins = (wins - wins.T).astype(float)
        graph = lock(margins)
        np.testing.assert_array_equal(graph, lock_plain(margins))
        reach = np.eye(agents, dtype=bool) | graph
        for k in range(agents):
            reach |= np.outer(reach[:, k], reach[k])
        groups, score = peel(graph, margins)
        for group in groups[:-1]:  # the last group, if agents without an edge, scores 0
            for s in group:
                inside = reach[s].copy()
                for earlier in groups[:groups.index(group)]:
                    inside[earlier] = False
                assert score[s] == np.where(graph, margins, 0.0)[np.ix_(inside, inside)].sum()
