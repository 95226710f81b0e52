"""The redundancy experiment [GTLLM] section 4.2: averaging methods move, equilibrium ratings do not."""

import numpy as np
import pytest

from pipeline.backtest.redundancy import adversarial_draws, pairwise_view, rank_movement, redundancy, tolerant_ranks, with_copies
from pipeline.methods import run
from pipeline.stats.game_data import ScoreTable

# Agent 0 is best on average (mean 0.67 vs 0.5, 0.43, 0.2) but worst on t2, which agents 1 and 2
# win; copies of t2 outweigh agent 0's two wins for the averaging methods, while an equilibrium
# weighs a task once however often it is listed.
SCORES = np.array([[1.0, 1.0, 0.0], [0.5, 0.0, 1.0], [0.0, 0.5, 0.8], [0.2, 0.2, 0.2]])


@pytest.fixture
def table():
    return ScoreTable(np.array([3, 5, 8, 9]), ("t0", "t1", "t2"), SCORES, np.ones(3, bool), np.ones(3))


def test_adversarial_draws_pick_the_task_the_target_loses(table):
    # Margins of agent 0 over the mean of the others: t0 +0.77, t1 +0.82 (after minmax), t2 -1.0.
    assert adversarial_draws(table, 0, 5, temperature=50).tolist() == [2] * 5
    copied = with_copies(table, np.array([2, 2]))
    assert copied.tasks == ("t0", "t1", "t2", "t2#copy0", "t2#copy1")
    np.testing.assert_array_equal(copied.scores[:, 3:], SCORES[:, [2, 2]])


def test_pairwise_view_counts_each_task_as_a_voter(table):
    stats = pairwise_view(table)
    # Agent 0 beats 1 on t0 and t1, loses on t2; agent 3 beats agent 2 only on t0.
    assert stats.pairwise.wins[0, 1] == 2 and stats.pairwise.wins[1, 0] == 1
    assert stats.pairwise.wins[3, 2] == 1 and stats.pairwise.wins[2, 3] == 2
    assert len(stats.extra["sequence"]) == 3 * 6


def test_averaging_methods_move_and_equilibrium_ratings_do_not(table):
    results = redundancy(table, [0, 2, 6], target=0, temperature=50,
                         specs=("m-elo:bootstrap=0", "elo", "uniform", "nash-averaging", "deviation", "affinity-cce"))
    moved = rank_movement(results)
    for spec in ("m-elo:bootstrap=0", "elo", "uniform"):
        assert moved[spec]["target_rank_before"] == 1 and moved[spec]["target_rank_after"] >= 3, spec
    for spec in ("nash-averaging", "deviation", "affinity-cce"):
        assert moved[spec] == {"target_rank_before": 1, "target_rank_after": 1, "max_rank_change": 0}, spec
    # Not only the ranks: the equilibrium scores themselves are unchanged by the copies.
    rows = results.to_pydict()
    for spec in ("nash-averaging", "deviation"):
        scores = {c: [s for s, m, k in zip(rows["score"], rows["method"], rows["copies"]) if m == spec and k == c] for c in (0, 6)}
        np.testing.assert_allclose(scores[6], scores[0], atol=1e-7)


def test_ranks_group_near_ties():
    assert tolerant_ranks(np.array([1.0, 1.0 - 1e-9, 0.5]), 1e-6).tolist() == [1, 1, 3]
    assert tolerant_ranks(np.array([1.0, 1.0 - 1e-3, 0.5]), 1e-6).tolist() == [1, 2, 3]


def test_pairwise_view_rates_like_a_games_log(table):
    # m-Elo accepts the view (kind `games`) and, with no copies, orders the agents by mean score.
    assert run("m-elo:bootstrap=0", pairwise_view(table)).rank.tolist() == [1, 2, 3, 4]


def test_rejects_empty_copies(table):
    with pytest.raises(ValueError, match="copies"):
        redundancy(table, [])
