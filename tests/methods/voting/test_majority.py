"""Shared helpers of the majority-graph methods."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.methods.voting.majority import condorcet_info, ranked
from pipeline.stats.in_memory import profile


def test_condorcet_winners(condorcet_cycle):
    # Rock-paper-scissors: every agent loses once, so there is no winner of either kind.
    assert condorcet_info(condorcet_cycle[0].pairwise) == {"condorcet_winner_agent": None,
                                                           "weak_condorcet_winner_agents": []}
    # a beats c, a and b tie 1-1, b beats c: a and b are weak winners, no strong one.
    stats, _ = profile(["a>b>c", "b>a>c"])
    assert condorcet_info(stats.pairwise) == {"condorcet_winner_agent": None, "weak_condorcet_winner_agents": [0, 1]}


def test_condorcet_sparse_equals_dense():
    ballots = ["a>b>c>d", "b>c>a", "d>a"]
    dense, sparse = profile(ballots, dense=True)[0], profile(ballots, dense=False)[0]
    assert sparse.pairwise.is_sparse
    assert condorcet_info(dense.pairwise) == condorcet_info(sparse.pairwise)


def test_ranks_from_groups():
    # Groups {2}, {0, 3}, {1}: ranks 1, 2, 2, 4 (competition ranking), whatever the scores.
    r = ranked(np.arange(4), [[2], [0, 3], [1]], np.array([5.0, 0.0, 1.0, 5.0]))
    np.testing.assert_array_equal(r.rank, [2, 4, 1, 2])
    with pytest.raises(ValueError, match="every agent"):
        ranked(np.arange(4), [[2], [0, 3]], np.zeros(4))
