"""Nash averaging [Bal18]: maximum-entropy equilibria, clone invariance, supports."""

import numpy as np
import pytest

from pipeline.games import Game
from pipeline.methods import nash_averaging as na
from pipeline.methods.nash_averaging import max_support, game_value, nash_average, nash_averaging
from pipeline.stats.game_data import ScoreTable

RPS = np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0.0]])


def test_rock_paper_scissors_with_a_cloned_rock():
    # [GTLLM] appendix D: duplicating rock keeps every rating at 0; the two rocks share 1/3.
    a = np.array([[0, 0, -1, 1], [0, 0, -1, 1], [1, 1, 0, -1], [-1, -1, 1, 0.0]])
    p, q, v = nash_average(a)
    np.testing.assert_allclose(p, [1 / 6, 1 / 6, 1 / 3, 1 / 3], atol=1e-7)
    np.testing.assert_allclose(a @ q, 0.0, atol=1e-7)
    assert v == pytest.approx(0.0, abs=1e-12)


def test_max_entropy_among_many_equilibria():
    # Two identical winning rows: every split of mass between them is an equilibrium; entropy picks 1/2.
    a = np.array([[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    p, q, v = nash_average(a)
    np.testing.assert_allclose(p, [0.5, 0.5, 0.0], atol=1e-7)
    np.testing.assert_allclose(q, [0.5, 0.5], atol=1e-7)  # the column player is indifferent
    assert v == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(4))
def test_maximal_support_matches_one_lp_per_row(seed):
    from scipy.optimize import linprog

    rng = np.random.default_rng(seed)
    a = rng.integers(-2, 3, size=(5, 6)).astype(float)
    v = game_value(a)
    expected = []
    for i in range(5):
        res = linprog(-np.eye(5)[i], A_ub=-a.T, b_ub=-np.full(6, v - 1e-9), A_eq=np.ones((1, 5)), b_eq=[1], bounds=[(0, None)] * 5)
        expected.append(-res.fun > 1e-7)
    assert max_support(a, v, 1e-9).tolist() == expected


def test_agent_task_reports_the_tasks_the_adversary_keeps():
    # Raw scores: agent 0 solves t0, agent 1 solves t1, both solve t2; the adversary drops t2 and
    # splits t0/t1 evenly, so each agent expects 1/2. (Under minmax, t2 would map to 0 for all.)
    scores = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    table = ScoreTable(np.array([4, 8]), ("t0", "t1", "t2"), scores, np.ones(3, bool), np.ones(3))
    r = nash_averaging(table, norm="none")
    assert r.info["task_support"] == ["t0", "t1"]
    np.testing.assert_allclose(r.score, [0.5, 0.5], atol=1e-7)
    assert r.info["game"] == "agent-task"


def test_rejects_games_that_are_not_zero_sum():
    game = Game((np.eye(2), np.eye(2)), ("x", "y"), (("a", "b"), ("a", "b")))
    with pytest.raises(ValueError, match="zero-sum"):
        nash_averaging(game)


def _degenerate_games():
    # Small integer payoffs (many ties, non-unique equilibria), a cloned row and column, and a
    # random antisymmetric game (unique equilibrium, half support).
    rng = np.random.default_rng(7)
    for _ in range(6):
        yield rng.integers(-2, 3, size=(6, 5)).astype(float)
    a = rng.integers(-3, 4, size=(4, 4)).astype(float)
    yield np.vstack([a, a[1]])[:, [0, 1, 2, 3, 3]]
    x = rng.normal(size=(30, 30))
    yield x - x.T


@pytest.mark.parametrize("a", list(_degenerate_games()))
def test_interior_point_path_agrees_with_the_reference(a):
    p, q, v = nash_average(a)
    p_ref, q_ref, v_ref = nash_average(a, algorithm="lp")
    np.testing.assert_allclose(p, p_ref, atol=1e-6)
    np.testing.assert_allclose(q, q_ref, atol=1e-6)
    assert v == pytest.approx(v_ref, abs=1e-7)


def test_wrong_candidate_supports_fall_back_to_the_reference(monkeypatch):
    # If the interior point's candidates are wrong (here: every row and column), the certificate
    # fails and the reference supports give the answer: rock-paper-scissors plus a row that loses
    # to everything, which no equilibrium plays.
    a = np.vstack([RPS, -np.ones(3)])
    monkeypatch.setattr(na, "complementary_supports", lambda b: (np.ones(b.shape[0], bool), np.ones(b.shape[1], bool), 0.0))
    p, q, v = nash_average(a)
    np.testing.assert_allclose(p, nash_average(a, algorithm="lp")[0], atol=1e-7)
    np.testing.assert_allclose(p, [1 / 3, 1 / 3, 1 / 3, 0.0], atol=1e-7)


def test_certificate_rejects_a_support_that_is_too_small():
    # Rock-paper-scissors: uniform is the only equilibrium; claiming rows {0, 1} leaves row 2 with
    # zero slack against q, so the supports are not certified maximal.
    p = q = np.full(3, 1 / 3)
    assert na.certified(RPS, 0.0, p, q, np.ones(3, bool), np.ones(3, bool), 1e-6, 1.0)
    assert not na.certified(RPS, 0.0, p, q, np.array([True, True, False]), np.ones(3, bool), 1e-6, 1.0)


def test_unknown_algorithm_raises():
    with pytest.raises(ValueError, match="unknown algorithm"):
        nash_average(RPS, algorithm="simplex")
