"""Pairs of games weighted 1/(L-1)."""

import numpy as np
import pytest


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


def test_m_elo_reads_the_per_game_counts_only_with_games_player(log_stats):
    from pipeline.methods import needed_statistics, run

    assert "pairwise_per_game" not in needed_statistics(["m-elo"])
    assert "pairwise_per_game" in needed_statistics(["m-elo:games=player"])
    rows = [{"game_id": f"g{g}", "player": p, "place": i + 1}
            for g, order in enumerate(["XYZ", "YZX", "XZY", "ZXY"]) for i, p in enumerate(order)]
    stats, _ = log_stats(rows, {"pairwise", "pairwise_per_game"}, kind="games")
    pairs, player = run("m-elo:bootstrap=0", stats), run("m-elo:games=player,bootstrap=0", stats)
    # every comparison weighs 1/2 with games=player: the same maximiser, half the curvature, the same ratings
    assert player.score.tolist() == pytest.approx(pairs.score.tolist(), abs=1e-6)
    assert player.info["log_likelihood"] == pytest.approx(pairs.info["log_likelihood"] / 2)
