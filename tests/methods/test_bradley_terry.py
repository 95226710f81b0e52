"""The shared Bradley-Terry linear algebra: the dense/sparse cost rule and the block conjugate gradients."""

import numpy as np
import pytest
import scipy.sparse as sp

from pipeline.methods.bradley_terry import (CG_FORCING, Cells, LaplacianPattern, block_cg, dense_is_cheaper, forcing, incidence,
                                            laplacian_solve)


def test_dense_or_sparse_is_chosen_by_the_nonzeros_not_the_agent_count():
    assert dense_is_cheaper(200, 10)  # small: dense whatever the pairs
    assert dense_is_cheaper(2000, 2000 * 1999 // 2)  # everyone met everyone
    assert not dense_is_cheaper(2000, 20_000)  # 1% of the pairs: sparse
    assert dense_is_cheaper(2692, 2692 * 2691 // 2)  # 58 MB: dense, whatever the agent count
    assert not dense_is_cheaper(8000, 8000 * 7999 // 2)  # 512 MB: past the memory bound of a dense Hessian


def random_cells(n: int, pairs: int, seed: int) -> Cells:
    rng = np.random.default_rng(seed)
    ring = np.arange(n)  # a ring keeps the graph connected
    x, y = np.r_[ring, rng.integers(0, n, pairs)], np.r_[(ring + 1) % n, rng.integers(0, n, pairs)]
    keep = x != y
    x, y = x[keep], y[keep]
    columns = rng.integers(1, 4, (len(x), 3)).astype(float)
    return Cells.summed(n, np.minimum(x, y), np.maximum(x, y), columns)


@pytest.mark.parametrize("prior", [0.0, 0.05])
def test_block_cg_solves_each_column_with_its_own_matrix_to_its_own_tolerance(prior):
    cells = random_cells(300, 900, seed=1)
    rng = np.random.default_rng(2)
    h = rng.uniform(0.01, 2.0, (len(cells.x), 4))  # a different Laplacian per column
    rhs = rng.normal(size=(cells.n, 4))
    if prior == 0:
        rhs -= rhs.mean(axis=0)
    diagonal = np.abs(incidence(cells)) @ h + prior
    rtol = np.array([1e-2, 1e-5, 1e-9, 1e-9])
    x, reached = block_cg(LaplacianPattern(cells).apply(h, prior), diagonal, rhs, rtol, 10 * cells.n)
    assert np.all(reached <= rtol)
    for k in range(4):
        lap = sp.csr_array((np.r_[-h[:, k], -h[:, k], diagonal[:, k]],
                            (np.r_[cells.x, cells.y, np.arange(cells.n)], np.r_[cells.y, cells.x, np.arange(cells.n)])))
        residual = np.linalg.norm(lap @ x[:, k] - rhs[:, k]) / np.linalg.norm(rhs[:, k])
        assert residual <= rtol[k] * (1 + 1e-9)
    alone, _ = block_cg(LaplacianPattern(cells).apply(h[:, 2:3], prior), diagonal[:, 2:3], rhs[:, 2:3], 1e-9,
                        10 * cells.n)
    assert np.abs(alone[:, 0] - x[:, 2]).max() < 1e-6 * np.abs(x[:, 2]).max()


def test_sparse_and_dense_laplacian_solves_agree(monkeypatch):
    cells = random_cells(120, 400, seed=3)
    h = np.random.default_rng(4).uniform(0.1, 1.0, len(cells.x))
    rhs = np.random.default_rng(5).normal(size=(cells.n, 2))
    rhs -= rhs.mean(axis=0)
    dense = laplacian_solve(cells, h, 0.0, rhs)
    monkeypatch.setattr("pipeline.methods.bradley_terry.DENSE_BYTES", 0)
    sparse = laplacian_solve(cells, h, 0.0, rhs)
    assert np.abs(dense - sparse).max() < 1e-6 * np.abs(dense).max()


def test_the_forcing_term_follows_the_gradient_but_never_asks_more_than_the_step_needs():
    tol = 1e-7
    assert forcing(0.5, np.inf, tol) == CG_FORCING[0]  # far away: loose
    assert forcing(1e-4, np.inf, tol) == pytest.approx(1e-4)  # the gradient's share of the first one
    assert forcing(1e-15, np.inf, tol) == CG_FORCING[1]  # never at machine precision
    # the confirming step after a step of 1e-4: an error of 1e-5 of a step at most that long is 1e-9 = tol / 100
    assert forcing(1e-12, 1e-4, tol) == pytest.approx(1e-5)
    assert forcing(np.array([1e-12, 1e-3, 1e-12]), np.array([1e-2, np.inf, 1e-12]), tol) == pytest.approx([1e-7, 1e-3, 1e-1])
