"""Pairs of games weighted 1/(L-1)."""

import numpy as np


def test_each_pair_of_a_three_player_game_weighs_one_half(log_stats):
    rows = [{"game_id": "g", "player": p, "place": i + 1} for i, p in enumerate("XYZ")]
    stats, _ = log_stats(rows, {"pairwise", "pairwise_per_game"}, kind="games")
    per_game = stats.extra["pairwise_per_game"].counts
    # X>Y, X>Z, Y>Z each with weight 1/(3-1): X's two comparisons add up to one game
    assert np.array_equal(per_game.wins, np.array([[0, 0.5, 0.5], [0, 0, 0.5], [0, 0, 0]]))
    assert np.array_equal(stats.pairwise.wins, 2 * per_game.wins)


def test_battles_use_the_core_counts(log_stats):
    stats, _ = log_stats([{"model_a": "A", "model_b": "B", "winner": "model_a"}], {"pairwise", "pairwise_per_game"})
    assert stats.extra["pairwise_per_game"].counts is None
    assert stats.extra["pairwise_per_game"].choose(stats.pairwise, "player") is stats.pairwise
