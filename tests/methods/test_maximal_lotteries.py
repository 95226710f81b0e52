"""Maximal lotteries and IML: essential set, uniqueness, maximum entropy, sparse margins."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog
from tests.voting_profiles import mixed_profiles, weak_ballots

from pipeline import methods
from pipeline.methods.maximal_lotteries import essential_set, lottery
from pipeline.stats.counts import PairwiseCounts, Statistics
from pipeline.stats.in_memory import profile


def test_rock_paper_scissors(condorcet_cycle):
    # The unique equilibrium of rock-paper-scissors plays each agent with probability 1/3.
    r = methods.run("maximal-lotteries", condorcet_cycle[0])
    np.testing.assert_allclose(r.score, [1 / 3] * 3, atol=1e-10)
    assert r.info["unique"] is True and r.info["choice"] == "unique"


def test_maximum_entropy_when_not_unique():
    # a>b>c>d, b>c>a>d, c>a>b>d, d>a>b>c: M(a,b) = M(b,c) = 2, M(a,c) = 0, d loses all. Column a forces
    # p_b = 0, column b forces p_a >= p_c: every p_a in [1/2, 1] is maximal; maximum entropy picks 1/2.
    stats, _ = profile(["a>b>c>d", "b>c>a>d", "c>a>b>d", "d>a>b>c"])
    r = methods.run("maximal-lotteries", stats)
    np.testing.assert_allclose(r.score, [0.5, 0, 0.5, 0], atol=1e-9)
    assert r.info["unique"] is False and r.info["choice"] == "maximum-entropy maximal lottery"
    np.testing.assert_array_equal(r.rank, [1, 3, 1, 3])


def _essential_by_linprog(margins: np.ndarray) -> np.ndarray:
    """Reference: agent i is essential when max p_i over the maximal lotteries is positive (m LPs)."""
    m = len(margins)
    top = [-linprog(-np.eye(m)[i], A_ub=-margins.T, b_ub=np.zeros(m), A_eq=np.ones((1, m)), b_eq=[1]).fun
           for i in range(m)]
    return np.array(top) > 1e-9


def test_essential_set_against_brute_force():
    for ballots in mixed_profiles(5, 20, most=5):
        margins = profile(ballots)[0].pairwise.margins
        np.testing.assert_array_equal(essential_set(margins), _essential_by_linprog(margins))


def test_dual_max_entropy_equals_plain():
    compared = 0
    for ballots in mixed_profiles(7, 40, most=6):
        margins = profile(ballots)[0].pairwise.margins
        support = essential_set(margins)
        fast, unique = lottery(margins, support)
        plain, _ = lottery(margins, support, algorithm="plain")
        np.testing.assert_allclose(fast, plain, atol=1e-7)
        compared += not unique
    assert compared >= 5  # weak and partial ballots often leave the lottery open


def test_sparse_equals_dense_and_relabelling():
    rng = np.random.default_rng(6)
    ballots = weak_ballots(rng, 7, 9)
    dense, sparse = profile(ballots, dense=True)[0], profile(ballots, dense=False)[0]
    swapped = profile([b.translate(str.maketrans("abcdefg", "gfedcba")) for b in ballots])[0]
    for spec in ("maximal-lotteries", "iterative-maximal-lotteries"):
        d, s, w = (methods.run(spec, x) for x in (dense, sparse, swapped))
        np.testing.assert_allclose(d.score, s.score, atol=1e-9)
        np.testing.assert_allclose(d.score, w.score[::-1], atol=1e-9)


def test_iml_levels():
    # d is a Condorcet loser of the cycle a>b>c>a (2-1 each): level 1 holds a, b, c at 1/3, level 0 d.
    stats, _ = profile(["a>b>c>d", "b>c>a>d", "c>a>b>d"])
    r = methods.run("iterative-maximal-lotteries", stats)
    np.testing.assert_allclose(r.score, [4 / 3, 4 / 3, 4 / 3, 1.0], atol=1e-10)
    assert r.info["levels"] == 2 and r.info["level_agents"] == [[0, 1, 2], [3]]
    np.testing.assert_array_equal(r.extras["level"], [1, 1, 1, 0])


def test_sparse_ladder():
    # A ladder of 400 players where i beats i+1 only (99.5% of the margins are empty). Column j of
    # p^T M >= 0 reads p(j-1) >= p(j+1) and column 0 forces p(1) = 0, so every odd player is out and
    # any non-increasing lottery on the even players is maximal: the maximum-entropy one is uniform.
    n = 400
    wins = sp.csr_array((np.ones(n - 1), (np.arange(n - 1), np.arange(1, n))), shape=(n, n))
    pairs = PairwiseCounts(np.arange(n), wins, sp.csr_array((n, n)))
    stats = Statistics("battles", np.arange(n), np.ones(n, dtype=np.int64), pairwise=pairs)
    r = methods.run("maximal-lotteries", stats)
    assert r.info["support_agents"] == list(range(0, n, 2)) and r.info["unique"] is False
    np.testing.assert_allclose(r.score[::2], 2 / n)
    assert r.info["weak_condorcet_winner_agents"] == [0]
