"""Copeland: the pentathlon, OpenSpiel, and the sparse path."""

from __future__ import annotations

import numpy as np
from open_spiel.python.voting import copeland as os_copeland

from pipeline.methods import run
from pipeline.stats.in_memory import profile
from tests.methods.oracle import openspiel_scores, random_strict_profile


def test_pentathlon(pentathlon):
    # [VasE] C.2.5: from M, A beats B only (1), B beats nobody (0), C beats both (2).
    ratings = run("copeland", pentathlon[0])
    assert ratings.score.tolist() == [1, 0, 2] and ratings.rank.tolist() == [2, 3, 1]
    assert ratings.extras["wins"].tolist() == [1, 0, 2]


def test_cycle_ties_everyone(condorcet_cycle):
    ratings = run("copeland", condorcet_cycle[0])
    assert ratings.score.tolist() == [1, 1, 1] and ratings.rank.tolist() == [1, 1, 1]


def test_equals_openspiel_on_random_profiles():
    rng = np.random.default_rng(7)
    for _ in range(60):
        rankings = random_strict_profile(rng, int(rng.integers(2, 7)), int(rng.integers(1, 10)))  # even n gives ties
        stats, names = profile(rankings)
        expected = openspiel_scores(os_copeland.CopelandVoting(), rankings, [names[i] for i in stats.agents])
        np.testing.assert_array_equal(run("copeland", stats).score, expected)


def test_sparse_equals_dense_and_unmet_pairs_are_ties():
    rankings = ["a>b", "c>d", "a>c", "b>a", "a>b"]
    dense = run("copeland", profile(rankings, dense=True)[0])
    sparse = run("copeland", profile(rankings, dense=False)[0])
    np.testing.assert_array_equal(dense.score, sparse.score)
    # a beats b and c, never met d: 2 + 0.5
    assert dense.score.tolist() == [2.5, 1.0, 1.5, 1.0]


def test_tie_credit_is_a_parameter(condorcet_cycle):
    assert run("copeland:tie_credit=1", profile(["a>b", "b>a"])[0]).score.tolist() == [1.0, 1.0]
