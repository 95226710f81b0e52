"""Games from data: agent-agent-task payoffs, king of the hill, the game_data statistic from a store."""

import numpy as np

from pipeline.games import build
from pipeline.stats.game_data import PromptCounts, ScoreTable


def test_agent_agent_task_payoffs():
    # [DevR] 5.2: G_A = T(a,t) - T(b,t), G_B = -G_A, G_T = |G_A|; minmax maps each task to [0, 1].
    table = ScoreTable(np.array([0, 1]), ("t",), np.array([[10.0], [20.0]]), np.ones(1, bool), np.ones(1))
    g = build(table, "agent-agent-task")
    assert g.payoffs[0][0, 1, 0] == -1.0 and g.payoffs[1][0, 1, 0] == 1.0 and g.payoffs[2][0, 1, 0] == 1.0


def test_king_of_the_hill_rebel_pays_for_copying():
    # [GTLLM] 3.1: model 0 beat model 1 on prompt 7; the rebel gets -1 when it picks the king's model.
    counts = PromptCounts(np.array([0, 1]), np.array([7]), np.array([0]), np.array([1]), np.array([2.0]), np.array([0.0]))
    g = build(counts, "king-of-the-hill")
    assert g.payoffs[0][0, 1, 0] == 1.0 and g.payoffs[1][0, 1, 0] == -1.0 and g.payoffs[2][0, 1, 0] == 1.0
    assert g.payoffs[1][1, 1, 0] == -1.0 and g.payoffs[0][1, 1, 0] == 0.0


def test_game_data_from_a_store(tmp_path):
    from pipeline.stats import reduce_store
    from pipeline.store import Store

    path = tmp_path / "s.csv"
    path.write_text("task,agent,score\nt1,a,1\nt1,b,3\nt2,a,5\nt2,b,2\n")
    store = Store(tmp_path / "store")
    store.ingest([path], "scores")
    table = reduce_store(store, "scores", {"game_data"}).extra["game_data"]
    assert table.tasks == ("t1", "t2")
    np.testing.assert_array_equal(table.scores, [[1, 5], [3, 2]])


def test_normalised_scores_do_not_depend_on_the_scores_scale_near_the_float_limits():
    # zscore's variance of scores near 1e300 overflowed (every normalised score 0: all agents tied) and near
    # 1e-300 underflowed; minmax's span of scores near +-1e308 overflowed (NaN payoffs).
    from pipeline.games.builders import normalise

    base = np.array([[1.0, 3.0], [-1.7, 0.5], [1.5, -2.0], [0.3, np.nan]])
    for norm in ("minmax", "zscore"):
        expected, filled = normalise(ScoreTable(np.arange(4), ("t1", "t2"), base, np.ones(2, bool), np.ones(2)), norm)
        for scale in (1e300, 1e-300, 2.0**1023 / 1.7, 2.0**-1000):
            got, _ = normalise(ScoreTable(np.arange(4), ("t1", "t2"), base * scale, np.ones(2, bool), np.ones(2)), norm)
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12, err_msg=f"{norm} x{scale:g}")
        assert filled == 1


def test_raw_scores_whose_payoff_differences_overflow_are_refused_in_one_line():
    # norm=none kept scores near 1e308: G_A = T(a) - T(b) overflowed with numpy warnings, then "payoffs must be finite".
    import warnings

    import pytest

    table = ScoreTable(np.arange(3), ("t1",), np.array([[1.5e308], [-1.5e308], [0.0]]), np.ones(1, bool), np.ones(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"^scores up to 1.5e\+308 overflow the payoff differences of a game .*use norm=minmax"):
            build(table, "agent-agent-task", norm="none")
        assert build(table, "agent-agent-task", norm="minmax").payoffs[0][0, 1, 0] == 1.0
