"""The one HiGHS helper: input forms, the error policy, the retry, fixed options."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from pipeline.methods.convergence import ConvergenceError, RatingError
from pipeline.methods.numerics import highs

INF = highs.INF


def _lp(matrix):
    # max x + y s.t. x + 2y <= 4, 3x + y <= 6, x, y >= 0: optimum (8/5, 6/5), duals (2/5, 1/5).
    return highs.solve("toy", np.array([-1.0, -1.0]), matrix, np.full(2, -INF), np.array([4.0, 6.0]),
                       np.zeros(2), np.full(2, INF))


@pytest.mark.parametrize("form", [np.asarray, sp.csr_array, sp.csc_matrix, sp.coo_array])
def test_dense_and_sparse_matrices_give_the_same_optimum(form):
    solution = _lp(form(np.array([[1.0, 2.0], [3.0, 1.0]])))
    np.testing.assert_allclose(solution.x, [1.6, 1.2], atol=1e-12)
    np.testing.assert_allclose(np.abs(solution.row_duals), [0.4, 0.2], atol=1e-12)
    assert solution.objective == pytest.approx(-2.8) and solution.status == highs.OPTIMAL and solution.retried is None


def test_infeasible_and_unbounded_are_told_apart_in_one_line():
    with pytest.raises(highs.Infeasible) as infeasible:
        highs.solve("impossible model", np.zeros(1), np.ones((1, 1)), np.array([2.0]), np.array([INF]),
                    np.zeros(1), np.ones(1))
    assert str(infeasible.value) == "impossible model: HiGHS stopped with status 'infeasible' (1 rows, 1 columns)"
    assert isinstance(infeasible.value, RatingError)
    with pytest.raises(highs.Unbounded, match="endless model: HiGHS stopped with status 'unbounded"):
        highs.solve("endless model", -np.ones(1), np.ones((1, 1)), np.zeros(1), np.array([INF]),
                    np.zeros(1), np.full(1, INF))


def test_expected_statuses_come_back_instead_of_raising():
    solution = highs.solve("probe", np.zeros(1), np.ones((1, 1)), np.array([2.0]), np.array([INF]),
                           np.zeros(1), np.ones(1), allow=(highs.INFEASIBLE,))
    assert solution.status == highs.INFEASIBLE and len(solution.x) == 0


def test_a_mip_and_a_limit():
    # max 5x + 4y s.t. 6x + 4y <= 24, x + 2y <= 6, integers: (4, 0) with value 20 (the LP gives (3, 1.5)).
    args = (np.array([-5.0, -4.0]), np.array([[6.0, 4.0], [1.0, 2.0]]), np.full(2, -INF), np.array([24.0, 6.0]),
            np.zeros(2), np.full(2, INF))
    solution = highs.solve("knapsack", *args, integer=np.array([True, True]), options={"mip_rel_gap": 0.0})
    np.testing.assert_allclose(solution.x, [4.0, 0.0])
    with pytest.raises(ConvergenceError, match="knapsack: HiGHS stopped with status 'iteration limit reached'"):
        highs.solve("knapsack", *args, options={"simplex_iteration_limit": 0, "solver": "simplex", "presolve": "off"})


def test_a_failed_simplex_run_is_retried_by_the_interior_point(monkeypatch):
    real, calls = highs._run, []

    def failing_once(lp, options):
        calls.append(dict(options))
        if len(calls) == 1:
            return "solve error", None
        return real(lp, options)

    monkeypatch.setattr(highs, "_run", failing_once)
    solution = _lp(np.array([[1.0, 2.0], [3.0, 1.0]]))
    np.testing.assert_allclose(solution.x, [1.6, 1.2], atol=1e-9)
    assert solution.retried == "solve error" and calls[1] == {"solver": "ipm"}


def test_the_thread_count_and_seed_are_fixed():
    with pytest.raises(ValueError, match="fixed by pipeline.methods.numerics.highs"):
        highs.solve("toy", np.zeros(1), np.ones((1, 1)), np.zeros(1), np.ones(1), np.zeros(1), np.ones(1),
                    options={"threads": 4})


def test_an_empty_program_is_optimal():
    solution = highs.solve("nothing", np.zeros(0), np.zeros((0, 0)), np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0))
    assert solution.status == highs.OPTIMAL and len(solution.x) == 0
