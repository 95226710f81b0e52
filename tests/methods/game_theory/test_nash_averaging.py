"""Nash averaging [Bal18]: maximum-entropy equilibria, clone invariance, supports, certificates."""

import csv

import numpy as np
import pytest
from scipy.optimize import linprog, lsq_linear

from pipeline.games import Game
from pipeline.methods.convergence import ConvergenceError
from pipeline.methods.game_theory import nash_averaging as na
from pipeline.methods.game_theory.nash_averaging import exact_supports, game_value, nash_average, nash_averaging, nash_equilibrium
from pipeline.methods.numerics import max_entropy
from pipeline.stats.game_data import ScoreTable
from tests.conftest import SAMPLES

RPS = np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0.0]])


def test_rock_paper_scissors_with_a_cloned_rock():
    # [GTLLM] appendix D: duplicating rock keeps every rating at 0; the two rocks share 1/3.
    a = np.array([[0, 0, -1, 1], [0, 0, -1, 1], [1, 1, 0, -1], [-1, -1, 1, 0.0]])
    p, q, v = nash_average(a)
    np.testing.assert_allclose(p, [1 / 6, 1 / 6, 1 / 3, 1 / 3], atol=1e-9)
    np.testing.assert_allclose(a @ q, 0.0, atol=1e-9)
    assert v == pytest.approx(0.0, abs=1e-12)


def test_max_entropy_among_many_equilibria():
    # Two identical winning rows: every split of mass between them is an equilibrium; entropy picks 1/2.
    a = np.array([[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    p, q, v = nash_average(a)
    np.testing.assert_allclose(p, [0.5, 0.5, 0.0], atol=1e-9)
    np.testing.assert_allclose(q, [0.5, 0.5], atol=1e-9)  # the column player is indifferent
    assert v == pytest.approx(1.0)


def _max_probability(a: np.ndarray, v: float, i: int) -> float:
    """Reference: the largest p_i over the maximin strategies (scipy's LP, one per row)."""
    m, n = a.shape
    res = linprog(-np.eye(m)[i], A_ub=-a.T, b_ub=-np.full(n, v), A_eq=np.ones((1, m)), b_eq=[1], bounds=[(0, None)] * m)
    return -res.fun


@pytest.mark.parametrize("seed", range(6))
def test_exact_supports_match_one_lp_per_row(seed):
    # Small integer payoffs: many ties and non-unique equilibria, where supports are the hard part.
    a = np.random.default_rng(seed).integers(-2, 3, size=(5, 6)).astype(float)
    v = game_value(a)
    rows, cols = exact_supports(a)
    assert rows.tolist() == [_max_probability(a, v, i) > 1e-7 for i in range(5)]
    assert cols.tolist() == [_max_probability(-a.T, -v, j) > 1e-7 for j in range(6)]


def test_agent_task_reports_the_tasks_the_adversary_keeps():
    # Raw scores: agent 0 solves t0, agent 1 solves t1, both solve t2; the adversary drops t2 and
    # splits t0/t1 evenly, so each agent expects 1/2. (Under minmax, t2 would map to 0 for all.)
    scores = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    table = ScoreTable(np.array([4, 8]), ("t0", "t1", "t2"), scores, np.ones(3, bool), np.ones(3))
    r = nash_averaging(table, norm="none")
    assert r.info["task_support"] == ["t0", "t1"]
    np.testing.assert_allclose(r.score, [0.5, 0.5], atol=1e-9)
    assert r.info["game"] == "agent-task" and r.rank.tolist() == [1, 1]


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
def test_interior_point_path_agrees_with_the_exact_one(a):
    p, q, v = nash_average(a)
    p_ref, q_ref, v_ref = nash_average(a, algorithm="lp")
    np.testing.assert_allclose(p, p_ref, atol=1e-8)
    np.testing.assert_allclose(q, q_ref, atol=1e-8)
    assert v == pytest.approx(v_ref, abs=1e-9)


def _kkt_residual(a: np.ndarray, p: np.ndarray) -> float:
    """How far log p is from the optimality cone of max H(p) over the maximin strategies.

    With R the support of p, C the columns where A^T p is smallest (to 1e-9) and c one of them, p is
    the maximum-entropy maximin strategy iff log p_R = sum_{j in C} lam_j (A_j - A_c)_R + nu with
    lam_j >= 0 off the opponent's support... we test the weaker, solver-independent form with every
    tight column's multiplier free: a bounded least-squares fit (BVLS) must leave no residual."""
    scale = np.abs(a).max()
    rows = p > 0
    payoff = a.T @ p / scale
    tight = np.flatnonzero(payoff <= payoff.min() + 1e-9)
    basis = np.c_[(a[rows][:, tight[1:]] - a[rows][:, [tight[0]]]) / scale, np.ones(rows.sum())]
    return float(np.abs(lsq_linear(basis, np.log(p[rows]), method="bvls").fun).max())


def _random_games(count: int):
    for seed in range(count):
        rng = np.random.default_rng(seed)
        yield seed, "normal", rng.normal(size=(rng.integers(2, 16), rng.integers(2, 16)))
        yield seed, "integer", rng.integers(-2, 3, size=(rng.integers(2, 16), rng.integers(2, 16))).astype(float)


def test_random_games_reach_the_certified_equilibrium():
    # Issue: an 11x13 game with a unique equilibrium (seed 4001 below) raised "constraint violation
    # 7.6e-07": both support paths put a row with slack 3e-6 in the support. Over 2 x 250 games
    # (normal payoffs, and small integers with many non-unique equilibria), 2..15 strategies each,
    # both paths must give the same certified pair: optimal (duality gap), and each strategy the
    # maximum-entropy one on its support.
    paths, compared = {}, 0
    for seed, kind, a in [*_random_games(250), (4001, "regression", _regression_game(4001)),
                          (4826, "regression", _regression_game(4826))]:
        p, q, info = nash_equilibrium(a)
        scale = np.abs(a).max()
        assert (a @ q).max() - (a.T @ p).min() <= 1e-7 * scale, (seed, kind)
        assert _kkt_residual(a, p) <= 1e-6 and _kkt_residual(-a.T, q) <= 1e-6, (seed, kind)
        paths[info["support_path"]] = paths.get(info["support_path"], 0) + 1
        try:
            p_ref, q_ref, _ = nash_equilibrium(a, algorithm="lp")
        except ConvergenceError as error:  # HiGHS cannot solve the exact-support LP of some near-degenerate games
            assert "exact supports failed" in str(error) and "\n" not in str(error)
            continue
        np.testing.assert_allclose(p, p_ref, atol=1e-8, err_msg=f"{kind} game {seed}")
        np.testing.assert_allclose(q, q_ref, atol=1e-8, err_msg=f"{kind} game {seed}")
        compared += 1
    assert compared >= 490 and paths.get("interior point", 0) >= 400, (compared, paths)


def _regression_game(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rng.normal(size=(rng.integers(2, 16), rng.integers(2, 16)))
    return rng.normal(size=(rng.integers(2, 16), rng.integers(2, 16)))


def test_regression_game_has_a_nearly_tight_row_outside_the_support():
    # Row 4 loses only 3e-6 against the equilibrium: HiGHS's interior point at its default
    # tolerance (gap 1e-8) still gave it probability 1e-3 and put it in the support.
    a = _regression_game(4001)
    p, q, info = nash_equilibrium(a)
    assert a.shape == (11, 13) and p[4] == 0.0 and 0 < (p @ a @ q) - (a @ q)[4] < 1e-5
    assert info["support_path"] == "interior point"


def test_wrong_candidate_supports_fall_back_to_the_exact_ones(monkeypatch):
    # If the interior point's candidates are wrong (here: every row and column), the certificate
    # fails, the exact supports give the answer, and the ratings say so: rock-paper-scissors plus
    # a row that loses to everything, which no equilibrium plays.
    a = np.vstack([RPS, -np.ones(3)])
    everything = lambda b: na.InteriorPoint(np.ones(4) / 4, np.ones(3) / 3, 0.0, np.ones(4, bool), np.ones(3, bool),  # noqa: E731
                                            np.ones(4), np.ones(3))
    monkeypatch.setattr(na, "complementary_supports", everything)
    p, q, info = nash_equilibrium(a)
    np.testing.assert_allclose(p, [1 / 3, 1 / 3, 1 / 3, 0.0], atol=1e-9)
    assert info["support_path"] == "exact (fallback)" and "KKT residuals" in info["interior_point"]
    r = nash_averaging(Game((a, -a), ("x", "y"), (("R", "P", "S", "L"), ("R", "P", "S"))))
    assert r.info["support_path"] == "exact (fallback)"


def test_when_no_path_is_certified_the_refusal_is_one_line(monkeypatch):
    stuck = max_entropy.Solution(np.full(3, 1 / 3), np.zeros(0), 2e-4, 200, False)
    monkeypatch.setattr(max_entropy, "maximise", lambda *args, **kwargs: stuck)
    with pytest.raises(ConvergenceError) as caught:
        nash_equilibrium(RPS)
    message = str(caught.value)
    assert "\n" not in message and "3x3" in message and "2.0e-04" in message


def test_certificate_bounds_the_mass_of_excluded_strategies():
    # Rock-paper-scissors: uniform is the only equilibrium; claiming rows {0, 1} leaves row 2 with
    # zero slack, so nothing bounds its probability. A row that loses by 1 everywhere, against a
    # pair with gap 1e-12, can have at most 1e-12 in any optimal strategy.
    point = na.complementary_supports(RPS)
    assert point.rows.all() and point.cols.all() and na.excluded_mass(point) == 0.0
    claimed = na.InteriorPoint(point.p, point.q, point.gap, np.array([True, True, False]), point.cols,
                               point.row_slack, point.col_slack)
    assert na.excluded_mass(claimed) > 1.0
    loser = na.complementary_supports(np.vstack([RPS, -np.ones(3)]))
    assert loser.rows.tolist() == [True, True, True, False] and na.excluded_mass(loser) <= 1e-11


def test_rock_paper_scissors_as_a_game_file_ties_all_six_strategies():
    # Issue: the six strategies (three per player) were ranked 1-6 by +-1e-16.
    r = nash_averaging(Game((RPS, -RPS), ("x", "y"), (("R", "P", "S"),) * 2))
    np.testing.assert_allclose(r.score, 0.0, atol=1e-12)
    assert r.rank.tolist() == [1] * 6 and r.info["tie_tolerance"] == pytest.approx(1e-7)


def test_livebench_equilibrium_models_share_rank_one():
    # The LiveBench sample (59 models x 18 tasks): every model of the equilibrium support is
    # rated exactly the game value, so they share rank 1 whatever the last bits say.
    with open(SAMPLES / "livebench" / "livebench_2024-08-31.csv", newline="") as f:
        rows = list(csv.reader(f))
    models, tasks = rows[0][1:], tuple(r[0] for r in rows[1:])
    scores = np.array([[float(x) for x in r[1:]] for r in rows[1:]]).T
    table = ScoreTable(np.arange(len(models)), tasks, scores, np.ones(len(tasks), bool), np.ones(len(tasks)))
    r = nash_averaging(table)
    support = r.extras["marginal"] > 0
    assert support.sum() >= 3 and set(r.rank[support]) == {1}
    np.testing.assert_allclose(r.score[support], r.info["value"], atol=1e-9)
    assert (r.rank[~support] > support.sum()).all()


def test_degenerate_games():
    # One strategy for the row player: it plays it; the column player picks among its best replies
    # with maximum entropy. Constant payoffs: every strategy is optimal, all ratings equal the
    # constant and share rank 1. A single cell: both players play it.
    one_row = np.array([[0.5, 0.2, 0.2, 0.9]])
    p, q, v = nash_average(one_row)
    np.testing.assert_allclose(p, [1.0])
    np.testing.assert_allclose(q, [0, 0.5, 0.5, 0], atol=1e-9)
    assert v == pytest.approx(0.2)
    constant = np.full((3, 4), 0.25)
    r = nash_averaging(Game((constant, -constant), ("x", "y"), (("a", "b", "c"), ("d", "e", "f", "g"))))
    np.testing.assert_allclose(r.extras["marginal"], [1 / 3] * 3 + [1 / 4] * 4, atol=1e-9)
    assert r.rank.tolist() == [1, 1, 1, 4, 4, 4, 4] and r.info["value"] == pytest.approx(0.25)
    p, q, v = nash_average(np.array([[3.0]]))
    assert p.tolist() == [1.0] and q.tolist() == [1.0] and v == 3.0
    zero = np.zeros((2, 2))
    p, q, v = nash_average(zero)
    np.testing.assert_allclose(p, [0.5, 0.5]) and np.testing.assert_allclose(q, [0.5, 0.5])


def test_unknown_algorithm_raises():
    with pytest.raises(ValueError, match="unknown algorithm"):
        nash_average(RPS, algorithm="simplex")
