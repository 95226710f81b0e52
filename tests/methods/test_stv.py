"""STV: fractional transfers, simultaneous ties, weak and partial ballots."""

from __future__ import annotations

import numpy as np
import pytest
from tests.voting_profiles import weak_ballots

from pipeline import methods
from pipeline.methods.stv import _count_rounds_plain, _fraction, count_rounds
from pipeline.stats.in_memory import profile


def test_fast_equals_plain():
    rng = np.random.default_rng(4)
    for _ in range(30):
        m = int(rng.integers(3, 8))
        n = int(rng.integers(2, 15))
        stats = profile(weak_ballots(rng, m, n), weights=rng.uniform(0.5, 3.0, n))[0]
        k = int(rng.integers(1, m))
        rounds, _ = count_rounds(stats.histogram, k)
        plain = _count_rounds_plain(stats.histogram, k)
        assert [(w, a) for w, a, _ in rounds] == [(w, a) for w, a, _ in plain]
        np.testing.assert_allclose([v for *_, v in rounds], [v for *_, v in plain])


def test_fractional_surplus():
    # 4 a>b, 2 a>c, 3 c; 2 winners: quota floor(9/3 + 1) = 4. a is elected with 6 and passes on its
    # surplus 2, a third of each of its ballots: b gets 4/3, c 3 + 2/3. Nobody reaches 4, so b is
    # eliminated (its a>b ballots are then exhausted), and c, alone with 11/3 < 4, goes last.
    stats, _ = profile(["a>b"] * 4 + ["a>c"] * 2 + ["c"] * 3)
    rounds, q = count_rounds(stats.histogram, 2)
    assert q == 4
    assert [(won, agents) for won, agents, _ in rounds] == [(True, [0]), (False, [1]), (False, [2])]
    np.testing.assert_allclose([v for *_, v in rounds], [6, 4 / 3, 3 + 2 / 3])


def test_ties_are_placed_together(condorcet_cycle):
    # Rock-paper-scissors: one first place each, quota 2 for one winner: all three are eliminated
    # together in round one, so they share rank 1 and score 3.1 (m - 0 plus 1 vote).
    r = methods.run("stv:winners=1", condorcet_cycle[0])
    np.testing.assert_array_equal(r.rank, [1, 1, 1])
    np.testing.assert_allclose(r.score, [3.1, 3.1, 3.1])


def test_weak_top_splits_the_vote():
    # "a=b>c" gives a and b half a vote each, "c" one to c; quota floor(2/2 + 1) = 2. a and b tie
    # for the fewest and go out together; their ballot then counts for c, which reaches 2.
    rounds, _ = count_rounds(profile(["a=b>c", "c"])[0].histogram, 1)
    assert [(won, agents, votes) for won, agents, votes in rounds] == [(False, [0, 1], 0.5), (True, [2], 2.0)]


def test_score_digits_and_weights():
    assert _fraction(3) == pytest.approx(0.3) and _fraction(12) == pytest.approx(0.12) and _fraction(2.5) == 0.25
    ballots = ["a>b>c", "b>a>c", "c>b>a", "a>c>b"]
    one, ten = profile(ballots)[0], profile(ballots, weights=[10] * 4)[0]
    np.testing.assert_array_equal(methods.run("stv", one).rank, methods.run("stv", ten).rank)


def test_bad_winners(pentathlon):
    with pytest.raises(ValueError, match="winners"):
        methods.run("stv:winners=4", pentathlon[0])
