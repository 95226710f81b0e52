"""Ranked pairs: order-free batches of equal margins, the plain reference."""

from __future__ import annotations

import numpy as np

from pipeline import methods
from pipeline.methods.voting.ranked_pairs import lock, lock_plain
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
