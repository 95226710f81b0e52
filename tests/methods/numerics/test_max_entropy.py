"""The maximum-entropy solver: closed forms, hard cases from the methods, and its three linear algebras."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from pipeline.methods.numerics import max_entropy
from pipeline.methods.numerics.max_entropy import maximise


def test_no_constraints_give_the_prior():
    found = maximise(None, None, 4, log_prior=np.log([0.1, 0.2, 0.3, 0.4]))
    np.testing.assert_allclose(found.q, [0.1, 0.2, 0.3, 0.4])
    assert found.converged and found.iterations == 0 and found.stopped == "target"


def test_one_equality_has_the_exponential_family_answer():
    # max H(q) on {0, 1, 2} with mean 1.5: q_i proportional to exp(lam i), lam from the mean.
    found = maximise(np.array([[-1.5, -0.5, 0.5]]), None, 3)
    ratio = found.q[1] / found.q[0]
    np.testing.assert_allclose(found.q, np.array([1, ratio, ratio**2]) / (1 + ratio + ratio**2), atol=1e-14)
    assert found.q @ np.arange(3) == pytest.approx(1.5, abs=1e-12)


def test_inactive_and_active_inequalities():
    # q_2 >= 3 q_0 binds: q is proportional to (e^{-3 mu}, 1, e^{mu}) with e^{4 mu} = 3, so q_1 > q_0
    # and the constraint q_1 >= q_0 is inactive (multiplier 0). Asking q_0 >= q_1 instead makes both
    # bind: q = (1/5, 1/5, 3/5).
    found = maximise(None, np.array([[-1.0, 1.0, 0.0], [-3.0, 0.0, 1.0]]) / 3, 3)
    expected = np.array([3 ** -0.75, 1.0, 3 ** 0.25])
    np.testing.assert_allclose(found.q, expected / expected.sum(), atol=1e-12)
    assert found.multipliers[0] == 0.0 and found.multipliers[1] > 0
    both = maximise(None, np.array([[1.0, -1.0, 0.0], [-3.0, 0.0, 1.0]]) / 3, 3)
    np.testing.assert_allclose(both.q, [0.2, 0.2, 0.6], atol=1e-12)
    assert (both.multipliers > 0).all()


def test_an_inconsistent_guess_of_the_active_set_is_survived():
    # The maximal-lotteries profile where the first projected Newton step, unshifted, stalled at
    # residual 0.16: two agents, seven constraints, of which the first guess holds three that
    # cannot all bind. The answer is q_2 = 1/4 (the binding constraint q_5 >= 3 q_2).
    cross = np.array([[-3, 1], [-2, 2], [-1, 2], [-1, 3], [-2, 1], [-1, 3], [0, 2]]) / 3.0
    found = maximise(None, cross, 2)
    np.testing.assert_allclose(found.q, [0.25, 0.75], atol=1e-12)
    assert found.converged and found.residual <= max_entropy.TARGET


def test_a_nearly_deterministic_answer():
    # One equality whose solution puts 0.0019 on the second outcome: Newton's first step overshot
    # into the flat part of the softmax (q_1 ~ 1e-17), where no later step was defined.
    found = maximise(np.array([[0.02, -10.5]]) / 10.5, None, 2)
    np.testing.assert_allclose(found.q, [10.5 / 10.52, 0.02 / 10.52], atol=1e-12)
    assert found.converged


def test_dense_sparse_and_operator_forms_agree():
    rng = np.random.default_rng(3)
    n = 40
    equal = rng.normal(size=(3, n))
    equal -= equal.mean(axis=1, keepdims=True)  # uniform is feasible for the equalities
    inequal = rng.normal(size=(25, n))
    scale = max(np.abs(equal).max(), np.abs(inequal).max())
    dense = maximise(equal / scale, inequal / scale, n)
    sparse = maximise(sp.csr_array(equal / scale), sp.csr_array(inequal / scale), n)
    operator = maximise(spla.aslinearoperator(equal / scale), spla.aslinearoperator(inequal / scale), n)
    assert dense.converged and sparse.converged and operator.converged
    np.testing.assert_allclose(sparse.q, dense.q, atol=1e-12)
    np.testing.assert_allclose(operator.q, dense.q, atol=1e-10)
    assert np.abs(equal @ dense.q).max() <= 1e-11 * scale and (inequal @ dense.q).min() >= -1e-11 * scale


def test_conjugate_gradients_on_a_large_sparse_problem(monkeypatch):
    # Above the dense limits the Newton system is solved by preconditioned CG; same answer.
    rng = np.random.default_rng(4)
    n, k = 300, 120
    rows = sp.random_array((k, n), density=0.05, random_state=rng, format="csr")
    rows.data = rng.normal(size=rows.nnz)
    rows = sp.csr_array(rows / np.abs(rows.data).max())
    dense = maximise(None, rows, n)
    monkeypatch.setattr(max_entropy, "DENSE_ROWS", 10)
    iterative = maximise(None, rows, n)
    assert dense.converged and iterative.converged
    np.testing.assert_allclose(iterative.q, dense.q, atol=1e-10)


def test_infeasible_constraints_are_reported_not_raised():
    # q_0 >= q_1 + 1/2 and q_1 >= q_0 cannot both hold: Newton stops, and says it did not converge.
    found = maximise(None, np.array([[1.0, -1.0], [-1.0, 1.0]]) - np.array([[0.5, 0.5], [0.0, 0.0]]), 2,
                     max_iter=50)
    assert not found.converged and found.residual > 1e-3 and found.stopped in ("floor", "iterations")
