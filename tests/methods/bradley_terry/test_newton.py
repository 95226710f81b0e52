"""One Bradley-Terry round by compiled Newton: Gauss-Seidel conjugate gradients, and the fit against `fit`'s."""

import numpy as np
import pytest
import scipy.sparse.linalg as spla

from pipeline.methods.bradley_terry import core as bradley_terry
from pipeline.methods.bradley_terry import newton as bradley_terry_newton
from pipeline.methods.bradley_terry.core import Cells, fit
from pipeline.methods.bradley_terry.m_elo import bootstrap_intervals
from pipeline.methods.bradley_terry.newton import (
    COARSE_BLOCKS,
    Round,
    coarse_blocks,
    coarse_factor,
    coarse_guess,
    coarse_system,
    conjugate_gradients,
    drawn_agents,
    effective_wins,
    hessian_entries,
    newton,
    step_bound,
)
from pipeline.methods.bradley_terry.steps import STEP_ACCURACY, Adjacency, Banded
from pipeline.methods.convergence import ConvergenceError
from tests.methods.bradley_terry.test_core import laplacian, random_cells


def heavy_tailed_cells(n: int = 300, matches: int = 1500, seed: int = 0) -> Cells:
    """A sparse graph whose players meet a heavy-tailed number of opponents (many once or twice), as a tour's."""
    rng = np.random.default_rng(seed)
    skill = rng.normal(0, 1, n)
    activity = rng.lognormal(0, 1.5, n)
    a = rng.choice(n, matches, p=activity / activity.sum())
    b = (a + rng.integers(1, n, matches)) % n
    a_won = rng.random(matches) < 1 / (1 + np.exp(skill[b] - skill[a]))
    winner, loser = np.where(a_won, a, b), np.where(a_won, b, a)
    columns = np.column_stack([winner < loser, winner > loser, np.zeros(matches)]).astype(float)
    return Cells.summed(n, np.minimum(a, b), np.maximum(a, b), columns)


def system(cells: Cells, prior: float, seed: int, weight_type=np.float64):
    """A Newton system on the cells' graph with random curvatures: the adjacency, the entries and diagonal as
    `newton` lays them out, the right-hand side (centred without a prior) and the same matrix in scipy."""
    rng = np.random.default_rng(seed)
    h = rng.uniform(0.01, 2.0, len(cells.x))
    adjacency = Adjacency.of(cells.n, cells.x, cells.y)
    weight, diagonal = np.empty(len(adjacency.cell), dtype=weight_type), np.empty(cells.n)
    hessian_entries(adjacency.start, adjacency.cell, h, prior, weight, diagonal)
    rhs = rng.normal(size=cells.n)
    if prior == 0:
        rhs -= rhs.mean()
    return adjacency, weight, diagonal, rhs, laplacian(cells, h.astype(weight_type).astype(float), prior)


def solve(adjacency, weight, diagonal, rhs, rtol, guess=None):
    guess = np.zeros(len(rhs)) if guess is None else guess
    return conjugate_gradients(adjacency.start, adjacency.split, adjacency.other, weight, diagonal, rhs, guess, rtol, 10 * len(rhs))


def guess_for(adjacency, weight, diagonal, rhs, blocks=COARSE_BLOCKS):
    bounds, block = coarse_blocks(len(rhs), blocks)
    lower = coarse_factor(coarse_system(adjacency.start, adjacency.split, adjacency.other, weight, diagonal, bounds, block))
    return coarse_guess(lower, rhs, block)


@pytest.mark.parametrize("weight_type", [np.float64, np.float32])
@pytest.mark.parametrize("coarse", [False, True])
@pytest.mark.parametrize("prior", [0.0, 0.05])
def test_gauss_seidel_conjugate_gradients_solve_to_the_asked_residual(prior, coarse, weight_type):
    cells = random_cells(400, 1200, seed=1)
    adjacency, weight, diagonal, rhs, a = system(cells, prior, 2, weight_type)
    exact = spla.spsolve(a.tocsc(), rhs) if prior else spla.lsqr(a, rhs, atol=1e-14, btol=1e-14)[0]
    guess = guess_for(adjacency, weight, diagonal, rhs) if coarse else None
    errors = []
    for rtol in (1e-2, 1e-6, 1e-10):
        s, reached, _ = solve(adjacency, weight, diagonal, rhs, rtol, guess)
        assert reached <= rtol
        if prior == 0:
            s, exact = s - s.mean(), exact - exact.mean()
        errors.append(np.abs(s - exact).max() / np.abs(exact).max())
    assert errors[0] < 0.1 and errors[2] < 1e-8 and errors[2] < errors[1] < errors[0]
    assert solve(adjacency, weight, diagonal, rhs, 1e-10, guess)[0].tobytes() == solve(adjacency, weight, diagonal, rhs, 1e-10,
                                                                                         guess)[0].tobytes()


@pytest.mark.parametrize("prior", [0.0, 0.05])
def test_the_coarse_guess_is_the_galerkin_solution_on_the_blocks_and_no_worse_than_zero(prior):
    cells = random_cells(300, 900, seed=11)
    adjacency, weight, diagonal, rhs, a = system(cells, prior, 12)
    blocks = 7  # blocks of unequal sizes: 300 agents
    bounds, block = coarse_blocks(cells.n, blocks)
    z = np.zeros((cells.n, blocks))
    z[np.arange(cells.n), block] = 1.0
    coarse = coarse_system(adjacency.start, adjacency.split, adjacency.other, weight, diagonal, bounds, block)
    assert np.abs(coarse - z.T @ (a @ z)).max() < 1e-12 * np.abs(coarse).max()
    guess = guess_for(adjacency, weight, diagonal, rhs, blocks)
    assert np.abs(z.T @ (rhs - a @ guess)).max() < 1e-10 * np.abs(rhs).sum()  # Galerkin: the residual is orthogonal to Z
    exact = spla.spsolve(a.tocsc(), rhs) if prior else spla.lsqr(a, rhs, atol=1e-14, btol=1e-14)[0]
    energy = lambda v: float(v @ (a @ v))
    assert energy(exact - guess) < energy(exact)
    assert np.ptp(guess[bounds[2]: bounds[3]]) == 0 and len(np.unique(guess)) == blocks


def test_the_coarse_guess_of_a_prior_free_system_with_fewer_agents_than_blocks():
    cells = random_cells(5, 9, seed=13)
    adjacency, weight, diagonal, rhs, a = system(cells, 0.0, 14)
    guess = guess_for(adjacency, weight, diagonal, rhs, blocks=16)  # blocks of one agent: the exact solution, grounded
    assert np.isfinite(guess).all() and guess[-1] == 0.0
    assert np.abs(a @ guess - rhs).max() < 1e-10
    s, reached, taken = solve(adjacency, weight, diagonal, rhs, 1e-8, guess)
    assert taken == 0 and reached <= 1e-8 and s.tobytes() == guess.tobytes()


@pytest.mark.parametrize("prior", [0.0, 0.01])
def test_a_round_reaches_the_plain_fit_from_a_start_far_away(prior):
    cells = heavy_tailed_cells(seed=3) if prior else random_cells(200, 800, seed=3)
    rng = np.random.default_rng(4)
    wx, wy = rng.poisson(1.0, len(cells.x)) * 1.0 + cells.x_wins, rng.poisson(1.0, len(cells.x)) * 1.0 + cells.y_wins
    resampled = cells.with_weights(wx, wy, np.zeros(len(cells.x)))
    plain = fit(resampled, prior=prior, tol=1e-7)  # dense Cholesky: at most 256 agents, or few pairs
    beta = fit(cells, prior=prior).beta + rng.normal(0, 1, cells.n)  # far from the resample's answer
    outcome = newton(Round(cells.x, cells.y, Adjacency.of(cells.n, cells.x, cells.y), wx, wy, prior), beta, 1e-7, 100)
    assert outcome.stopped == "converged" and outcome.iterations <= plain.iterations + 3
    if prior == 0:
        beta -= beta.mean()
    assert np.abs(beta - plain.beta).max() < 1e-9  # natural units: 6e-8 Elo points


def test_the_step_bound_is_never_below_the_exact_newton_step_and_is_reached_by_an_agent_without_comparisons():
    rng = np.random.default_rng(15)
    for seed in range(20):
        cells = heavy_tailed_cells(n=60, matches=150, seed=seed)  # agents drawn by activity: some never compared
        prior = float(rng.choice([1e-4, 0.01, 1.0]))
        h = rng.uniform(0.0, 0.25, len(cells.x))
        hessian = laplacian(cells, h, prior).toarray()
        gradient = rng.normal(0, 1, cells.n) * rng.random(cells.n) ** 4
        exact = np.linalg.solve(hessian, gradient)
        assert np.abs(exact).max() <= step_bound(np.abs(gradient).max(), prior) * (1 + 1e-12)
    alone = np.flatnonzero(np.bincount(np.r_[cells.x, cells.y], minlength=cells.n) == 0)[0]
    gradient = np.zeros(cells.n)
    gradient[alone] = 3e-9
    assert np.linalg.solve(hessian, gradient)[alone] == pytest.approx(step_bound(3e-9, prior), rel=1e-12)  # the bound is tight
    assert step_bound(1.0, 0.0) == np.inf


@pytest.mark.parametrize("prior", [0.0, 0.01])
def test_a_round_started_at_its_answer_is_certified_with_a_prior_and_confirmed_by_a_solve_without(prior):
    cells = heavy_tailed_cells(seed=16) if prior else random_cells(200, 800, seed=16)
    plain = fit(cells, prior=prior, tol=1e-7)
    beta = plain.beta.copy()
    outcome = newton(Round(cells.x, cells.y, Adjacency.of(cells.n, cells.x, cells.y), *cells.half(), prior), beta, 1e-7, 100)
    assert outcome.stopped == "converged" and outcome.iterations == 1
    if prior:  # no solve: the gradient bounds the step below what a confirming solve would resolve
        assert outcome.products == 0 and not outcome.step.any() and outcome.last_step <= STEP_ACCURACY * 1e-7
    else:
        assert outcome.products > 0 and 0 < outcome.last_step <= 1e-7
        beta -= beta.mean()
    assert np.abs(beta - plain.beta).max() < 1e-9


@pytest.mark.parametrize("change", ["float64 weights", "no coarse guess"])
def test_float32_weights_and_the_coarse_guess_change_no_answer_beyond_the_solves_accuracy(monkeypatch, change):
    cells = heavy_tailed_cells(seed=17)
    rng = np.random.default_rng(18)
    wx, wy = rng.poisson(1.0, len(cells.x)) + cells.x_wins, rng.poisson(1.0, len(cells.x)) + cells.y_wins
    adjacency, start = Adjacency.of(cells.n, cells.x, cells.y), fit(cells, prior=0.01).beta

    def rounds():
        beta = start.copy()
        outcome = newton(Round(cells.x, cells.y, adjacency, wx, wy, 0.01), beta, 1e-7, 100)
        return beta, outcome

    kept, kept_outcome = rounds()
    if change == "float64 weights":
        monkeypatch.setattr(bradley_terry_newton, "WEIGHT", np.float64)
    else:
        monkeypatch.setattr(bradley_terry_newton, "coarse_guess", lambda lower, rhs, block: np.zeros(len(rhs)))
    other, other_outcome = rounds()
    assert kept_outcome.stopped == other_outcome.stopped == "converged"
    assert np.abs(kept - other).max() < 1e-9
    if change == "no coarse guess":  # the guess is in use: on this graph 13 conjugate-gradient iterations against 20
        assert kept_outcome.products < other_outcome.products


def test_a_round_out_of_iterations_says_so():
    cells = heavy_tailed_cells(seed=5)
    beta = np.zeros(cells.n)
    outcome = newton(Round(cells.x, cells.y, Adjacency.of(cells.n, cells.x, cells.y), *cells.half(), 0.01), beta, 1e-7, 1)
    assert not outcome.fitted and outcome.stopped == "iterations" and outcome.iterations == 1


@pytest.mark.parametrize("prior", [0.0, 0.01])
def test_bootstrap_rounds_by_compiled_newton_agree_with_a_plain_fit_per_round(monkeypatch, prior):
    """A sparse heavy-tailed graph (players met once move far in a resample): every round's answer
    to 1e-6 Elo points of `fit` on the same resample, and the same rounds dropped."""
    # without a prior: a graph where the MLE exists (rounds without one: test_m_elo)
    cells = heavy_tailed_cells(seed=6) if prior else random_cells(150, 600, seed=6)
    monkeypatch.setattr("pipeline.methods.bradley_terry.m_elo.chord_is_cheaper", lambda cells: False)
    monkeypatch.setattr("pipeline.methods.bradley_terry.core.DENSE_ALWAYS", cells.n)  # the plain fits by dense Cholesky
    monkeypatch.setattr("pipeline.methods.bradley_terry.m_elo.ROUND_TOL", 1e-7)  # the paths compared at the full-data fit's tolerance
    options = {"davidson": False, "prior": prior, "tol": 1e-7, "max_iter": 100}
    full = fit(cells, prior=prior)
    compiled, compiled_info = bootstrap_intervals(cells, full, options, 60, 8, 400.0, 1000.0, algorithm="chord")
    plain, plain_info = bootstrap_intervals(cells, full, options, 60, 8, 400.0, 1000.0, algorithm="newton")
    assert compiled_info == plain_info and compiled_info["bootstrap_unconverged"] == 0
    for key in ("ci_low", "ci_high"):
        assert np.abs(compiled[key] - plain[key]).max() < 1e-6


@pytest.mark.parametrize("prior", [0.0, 0.01])
def test_a_sparse_fit_is_compiled_and_gives_the_answer_of_dense_cholesky_and_of_newton_over_arrays(monkeypatch, prior):
    cells = heavy_tailed_cells(seed=9) if prior else random_cells(400, 1600, seed=9)
    calls = []
    compiled_fit = bradley_terry._compiled_fit
    monkeypatch.setattr("pipeline.methods.bradley_terry.core._compiled_fit", lambda *args: calls.append(1) or compiled_fit(*args))
    compiled = fit(cells, prior=prior)
    assert calls == [1]
    monkeypatch.setattr("pipeline.methods.bradley_terry.core.COMPILED", False)
    arrays = fit(cells, prior=prior)
    monkeypatch.setattr("pipeline.methods.bradley_terry.core.DENSE_ALWAYS", cells.n)
    dense = fit(cells, prior=prior)
    assert calls == [1] and compiled.stopped == arrays.stopped == dense.stopped == "converged"
    for other in (arrays, dense):
        assert np.abs(compiled.beta - other.beta).max() < 1e-9
        assert compiled.log_likelihood == pytest.approx(other.log_likelihood, rel=1e-12)


def test_a_sparse_fit_out_of_iterations_names_the_agents_with_the_largest_steps():
    """The fit runs on the agents renumbered (`Banded`); the message names agents by the cells' numbering:
    those whose step is largest in one Newton step on the agents as numbered."""
    cells = heavy_tailed_cells(seed=10)
    assert not np.array_equal(Banded.of(cells.n, cells.x, cells.y).order, np.arange(cells.n))
    beta = np.zeros(cells.n)
    step = newton(Round(cells.x, cells.y, Adjacency.of(cells.n, cells.x, cells.y), *cells.half(), 0.01), beta, 1e-7, 1).step
    with pytest.raises(ConvergenceError, match=r"did not converge in 1 iterations \(largest step [0-9.e+-]+ > tol=1e-07\)") as error:
        fit(cells, prior=0.01, max_iter=1, agents=np.arange(cells.n) * 3)
    assert error.value.agents == (3 * np.argsort(-np.abs(step), kind="stable")[:3]).tolist()


@pytest.mark.parametrize("prior", [0.0, 0.01])
def test_a_sparse_fit_started_at_its_answer_stops_at_once_in_the_cells_numbering(prior):
    cells = heavy_tailed_cells(seed=9) if prior else random_cells(400, 1600, seed=9)
    full = fit(cells, prior=prior)
    again = fit(cells, prior=prior, start=full)
    assert again.iterations == 1 and np.abs(again.beta - full.beta).max() < 1e-9


def test_a_sparse_fit_does_not_depend_on_the_agents_numbering():
    cells = heavy_tailed_cells(seed=12)
    perm = np.random.default_rng(3).permutation(cells.n)  # agent i becomes agent perm[i]
    x, y = perm[cells.x], perm[cells.y]
    columns = np.column_stack([np.where(x < y, cells.x_wins, cells.y_wins), np.where(x < y, cells.y_wins, cells.x_wins), cells.ties])
    shuffled = Cells.summed(cells.n, np.minimum(x, y), np.maximum(x, y), columns)
    assert np.abs(fit(shuffled, prior=0.01).beta[perm] - fit(cells, prior=0.01).beta).max() < 1e-9


def test_effective_wins_gather_a_rounds_counts_in_the_order_given_with_ties_as_half_wins():
    rng = np.random.default_rng(6)
    draws = rng.poisson(1.5, (4, 3 * 50)).astype(float)  # rounds x (x wins, y wins, ties), as poisson_draws lays them out
    order = rng.permutation(50)
    for k in range(4):
        x_wins, y_wins, ties = draws[k, :50], draws[k, 50:100], draws[k, 100:]
        for columns in ((x_wins, y_wins, ties), (draws.T[:50, k], draws.T[50:100, k], draws.T[100:, k])):
            wx, wy = effective_wins(*columns, order)
            assert wx.tobytes() == (x_wins + ties / 2)[order].tobytes() and wy.tobytes() == (y_wins + ties / 2)[order].tobytes()
    strided = draws[:, :50].T[:, ::2]  # a column of a strided block, as the chord method's fallback may pass
    assert effective_wins(strided[:, 1], strided[:, 1], strided[:, 1], order)[0].tolist() == (1.5 * draws[2, :50])[order].tolist()


@pytest.mark.parametrize("prior", [0.0, 0.01])
def test_a_round_over_only_its_drawn_cells_is_the_round_over_all_of_them_bit_for_bit(prior):
    """A resample draws nothing from many cells (Poisson(1) is 0 a third of the time); `Round` given only the
    others, with their places among the adjacency's cells, must fit the same bits: the same steps, curvatures
    in the same places for the Hessian, the same sums."""
    cells = heavy_tailed_cells(seed=13)
    banded = Banded.of(cells.n, cells.x, cells.y)
    draws = np.random.default_rng(4).poisson(1.0, (3, len(cells.x))).astype(float)
    wx, wy = effective_wins(draws[0], draws[1], draws[2], banded.cells)
    drawn = wx + wy
    position = np.flatnonzero(drawn > 0)
    assert 0 < len(position) < len(cells.x)
    rounds = [Round(banded.x, banded.y, banded.adjacency, wx, wy, prior),
              Round(banded.x[position], banded.y[position], banded.adjacency, wx[position], wy[position], prior, position)]
    betas = [np.zeros(cells.n), np.zeros(cells.n)]
    outcomes = [newton(round_, beta, 1e-7, 100) for round_, beta in zip(rounds, betas)]
    assert outcomes[0].iterations == outcomes[1].iterations > 1
    assert betas[0].tobytes() == betas[1].tobytes()
    one_step_betas = [np.zeros(cells.n), np.zeros(cells.n)]
    assert [bradley_terry_newton.one_step(round_, beta, 3e-2) for round_, beta in zip(rounds, one_step_betas)] == [True, True]
    assert one_step_betas[0].tobytes() == one_step_betas[1].tobytes()
    # which agents the round drew: those in a cell with a positive count (here not agent 7's, nor the
    # agents whose every cell is one of agent 7's)
    drawn[(banded.x == 7) | (banded.y == 7)] = 0.0
    touched = np.zeros(cells.n, dtype=bool)
    touched[banded.x[drawn > 0]] = touched[banded.y[drawn > 0]] = True
    assert drawn_agents(drawn, banded.adjacency.start, banded.adjacency.cell).tolist() == touched.tolist()
    assert not touched[7] and touched.sum() > cells.n / 2
