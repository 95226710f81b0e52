"""The shared Bradley-Terry linear algebra: the dense/sparse cost rule and the block conjugate gradients."""

import numpy as np
import pytest
import scipy.sparse as sp

from pipeline.methods.bradley_terry.core import Cells, block_cg, dense_is_cheaper, incidence, laplacian_solve
from pipeline.methods.bradley_terry.steps import CG_FORCING, Adjacency, Banded, forcing, predicted_step


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


def laplacian(cells: Cells, h: np.ndarray, prior: float) -> sp.csr_array:
    """L_h + prior I, L_h the Laplacian of the cells with edge weights h."""
    n = cells.n
    degree = np.bincount(cells.x, h, minlength=n) + np.bincount(cells.y, h, minlength=n) + prior
    return sp.csr_array((np.r_[-h, -h, degree], (np.r_[cells.x, cells.y, np.arange(n)], np.r_[cells.y, cells.x, np.arange(n)])),
                        shape=(n, n))


def test_the_adjacency_lists_every_cell_under_both_agents_lower_opponents_first():
    cells = random_cells(50, 200, seed=7)
    adjacency = Adjacency.of(cells.n, cells.x, cells.y)
    for i in range(cells.n):
        row = slice(adjacency.start[i], adjacency.start[i + 1])
        others, row_cells = adjacency.other[row], adjacency.cell[row]
        assert np.all(np.diff(others) > 0)  # each opponent once (cells are summed per pair), in increasing order
        assert np.all(others[: adjacency.split[i] - adjacency.start[i]] < i)
        assert np.all(others[adjacency.split[i] - adjacency.start[i]:] > i)
        assert np.all(np.minimum(i, others) == cells.x[row_cells]) and np.all(np.maximum(i, others) == cells.y[row_cells])
    assert np.array_equal(np.sort(adjacency.cell), np.repeat(np.arange(len(cells.x)), 2))


def test_the_adjacency_of_cells_in_either_orientation_is_the_same():
    cells = random_cells(50, 200, seed=8)
    flip = np.random.default_rng(9).random(len(cells.x)) < 0.5
    mixed = Adjacency.of(cells.n, np.where(flip, cells.y, cells.x), np.where(flip, cells.x, cells.y))
    ordered = Adjacency.of(cells.n, cells.x, cells.y)
    assert all(np.array_equal(getattr(mixed, f), getattr(ordered, f)) for f in ("start", "split", "cell", "other"))


def test_banded_numbering_renumbers_the_agents_brings_opponents_near_and_sorts_the_cells():
    rng = np.random.default_rng(10)
    n = 400  # a chain of overlapping groups in time, its agents numbered at random
    position = rng.permutation(n)
    a = rng.integers(0, n - 5, 3000)
    b = a + rng.integers(1, 6, len(a))
    x, y = np.minimum(position[a], position[b]), np.maximum(position[a], position[b])
    banded = Banded.of(n, x, y)
    assert np.array_equal(np.sort(banded.order), np.arange(n))
    assert np.array_equal(np.sort(banded.cells), np.arange(len(x)))
    assert np.array_equal(banded.order[banded.x], x[banded.cells]) and np.array_equal(banded.order[banded.y], y[banded.cells])
    assert np.abs(banded.x - banded.y).max() < 20 < np.abs(x - y).max()
    lower = np.minimum(banded.x, banded.y)  # the cells in the order of their agents' new numbers
    assert np.all(np.diff(lower) >= 0) and np.all(np.diff(np.maximum(banded.x, banded.y))[np.diff(lower) == 0] >= 0)
    assert banded.adjacency.cell.size == 2 * len(x)


def test_the_predicted_step_squares_the_last_contraction_once_steps_halve():
    assert predicted_step(1e-2, np.inf) == 1e-2  # one step: no rate yet
    assert predicted_step(0.6, 1.0) == 0.6  # not yet converging quadratically: the previous step
    assert predicted_step(1e-3, 1e-1) == pytest.approx(1e-7)  # 1e-1 -> 1e-3 -> 1e-7


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
    laplacians = [laplacian(cells, h[:, k], prior) for k in range(4)]

    def apply(v, columns):
        return np.column_stack([laplacians[k] @ v[:, j] for j, k in enumerate(columns)])
    x, reached = block_cg(apply, diagonal, rhs, rtol, 10 * cells.n)
    assert np.all(reached <= rtol)
    for k in range(4):
        residual = np.linalg.norm(laplacians[k] @ x[:, k] - rhs[:, k]) / np.linalg.norm(rhs[:, k])
        assert residual <= rtol[k] * (1 + 1e-9)
    alone, _ = block_cg(lambda v, columns: laplacians[2] @ v, diagonal[:, 2:3], rhs[:, 2:3], 1e-9, 10 * cells.n)
    assert np.abs(alone[:, 0] - x[:, 2]).max() < 1e-6 * np.abs(x[:, 2]).max()


def test_sparse_and_dense_laplacian_solves_agree(monkeypatch):
    cells = random_cells(120, 400, seed=3)
    h = np.random.default_rng(4).uniform(0.1, 1.0, len(cells.x))
    rhs = np.random.default_rng(5).normal(size=(cells.n, 2))
    rhs -= rhs.mean(axis=0)
    dense = laplacian_solve(cells, h, 0.0, rhs)
    monkeypatch.setattr("pipeline.methods.bradley_terry.core.DENSE_BYTES", 0)
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


def cycle_differences(weights: list[float]) -> np.ndarray:
    """b_i - b_(i+1) of the exact fit of a pure cycle (agent i beats agent i+1 with weights[i], the last beats
    the first), to 50 digits: every agent loses the same expected weight L, so b_i - b_(i+1) = log((w_i - L) / L)
    with sum_i log(w_i - L) = n log L (bisection)."""
    from decimal import Decimal, localcontext

    with localcontext() as context:
        context.prec = 50
        w = [Decimal(v) for v in weights]
        low, high = Decimal(0), min(w)
        for _ in range(300):
            mid = (low + high) / 2
            low, high = (mid, high) if sum((v - mid).ln() for v in w) > len(w) * mid.ln() else (low, mid)
        return np.array([float(((v - low) / low).ln()) for v in w])


@pytest.mark.parametrize("n", [3, 300])  # a dense Cholesky fit, and the compiled sparse Newton
def test_weights_2_to_the_54_apart_fit_to_the_exact_ratings(n):
    # A fit computed P(y beats x) as 1 - P(x beats y): where that is below an ulp, the gradient and curvature
    # of the heavy pair were rounding noise, and the line search failed on weights that ingest accepts.
    # Agents 0 > 1 > 2 > 0 with weights 2^30, 2^-24 and 1; agents 3.. hang off agent 2 by a path of even
    # records, which leaves the cycle's fit alone and puts every one of them at agent 2's rating.
    from pipeline.methods.bradley_terry.core import fit

    weights = [2.0**30, 2.0**-24, 1.0]
    path = np.arange(2, n - 1)
    cells = Cells.summed(n, np.r_[0, 1, 0, path], np.r_[1, 2, 2, path + 1],
                         np.column_stack([np.r_[weights[:2], 0.0, np.ones(len(path))], np.r_[0.0, 0.0, weights[2], np.ones(len(path))],
                                          np.zeros(len(path) + 3)]))
    got = fit(cells)
    assert got.stopped == "converged"
    np.testing.assert_allclose(got.beta[:3] - np.roll(got.beta[:3], -1), cycle_differences(weights), rtol=0, atol=1e-6)
    np.testing.assert_allclose(got.beta[3:], got.beta[2], rtol=0, atol=1e-6)
