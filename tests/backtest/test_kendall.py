import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from scipy import stats

from pipeline.backtest.kendall import game_distances, kendall_distance
from pipeline.stats.partials import WeakOrders


def test_hand_computed_strict_and_tied():
    # Game a>b>c; rating c>a>b: pairs (a,b) agree, (a,c) and (b,c) disagree.
    assert kendall_distance([0, 1, 2], [1, 2, 0]) == 2.0
    # Game a>b=c; rating a=b>c: (a,b) strict in the game, tied in the rating: 1/2;
    # (a,c) agree; (b,c) tied in the game, strict in the rating: 1/2.
    assert kendall_distance([0, 1, 1], [0, 0, 1]) == 1.0
    # Tied in both orders: 0.
    assert kendall_distance([0, 0], [3, 3]) == 0.0


def test_strict_orders_match_scipy_tau():
    rng = np.random.default_rng(0)
    for _ in range(20):
        x, y = rng.permutation(7), rng.permutation(7)
        tau = stats.kendalltau(x, y).statistic
        assert kendall_distance(x, y) == pytest.approx((1 - tau) / 2 * 21)


@settings(max_examples=60, deadline=None)
@given(hs.lists(hs.tuples(hs.integers(0, 3), hs.integers(0, 3)), min_size=2, max_size=8))
def test_ties_match_scipy_tau_b(pairs):
    # With n0 pairs, n1 tied in x, n2 tied in y, n3 tied in both, tau-b = (P - Q) / sqrt((n0 - n1)(n0 - n2)),
    # so the K^(1/2) distance Q + (n1 + n2 - 2 n3) / 2 equals (n0 - n3 - tau_b sqrt(...)) / 2.
    x, y = np.array(pairs, dtype=float).T
    i, j = np.triu_indices(len(x), 1)
    tx, ty = x[i] == x[j], y[i] == y[j]
    n0, n1, n2, n3 = len(i), tx.sum(), ty.sum(), (tx & ty).sum()
    if n1 == n0 or n2 == n0:
        return  # tau-b undefined
    tau_b = stats.kendalltau(x, y, variant="b").statistic
    expected = (n0 - n3 - tau_b * np.sqrt((n0 - n1) * (n0 - n2))) / 2
    assert kendall_distance(x, y) == pytest.approx(expected, abs=1e-9)


def _orders(levels_per_game):
    ballot = np.concatenate([np.full(len(g), k) for k, g in enumerate(levels_per_game)])
    agent = np.arange(len(ballot))
    level = np.concatenate([np.asarray(g, float) for g in levels_per_game])
    return WeakOrders.from_rows(ballot, agent, level, np.ones(len(ballot)))


def test_vectorised_matches_reference_on_games_of_mixed_lengths():
    rng = np.random.default_rng(1)
    games = [rng.integers(0, 4, size=int(n)) for n in rng.integers(2, 8, size=40)]
    orders = _orders(games)
    predicted = rng.integers(0, 5, size=len(orders.agents)).astype(float)
    result = game_distances(orders, predicted)
    for k in range(len(games)):
        members = slice(orders.offsets[k], orders.offsets[k + 1])
        assert result.distance[k] == kendall_distance(orders.levels[members], predicted[members])
        assert result.pairs[k] == len(games[k]) * (len(games[k]) - 1) // 2
    assert not result.unseen.any()


def test_unseen_players_tie_or_skip():
    # Game a>b>c with c unseen: (a,b) agrees (0); (a,c), (b,c) are strict in the game and predicted ties.
    orders = _orders([[0, 1, 2]])
    predicted = np.array([2.0, 1.0, np.nan])  # the rating also has b ahead of a: (a,b) disagrees
    tie = game_distances(orders, predicted, "tie")
    skip = game_distances(orders, predicted, "skip")
    assert (tie.distance[0], tie.pairs[0], tie.unseen[0]) == (2.0, 3, 2)
    assert (skip.distance[0], skip.pairs[0], skip.unseen[0]) == (1.0, 1, 2)
    with pytest.raises(ValueError, match="policy"):
        game_distances(orders, predicted, "drop")
