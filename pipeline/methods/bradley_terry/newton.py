"""Newton's method for one Bradley-Terry fit with ties as half wins, compiled [BT52]; [AmElo, 4.1].

The same method and stopping rules as `pipeline.methods.bradley_terry.core.fit` (ties=half): Newton
steps on the penalised log-likelihood, each system solved by conjugate gradients to the forcing
term `newton_steps.forcing` [EW96] (for the step's size predicted by `newton_steps.predicted_step`;
a last step shorter than predicted is solved again closer), preconditioned by symmetric Gauss-Seidel on the system's
own Hessian with Eisenstat's trick [Eis81] and started from the Galerkin solution over a few blocks
of the agents' numbering (`coarse_guess`, [Nic87]), an Armijo line search, converged when the largest
step is at most `tol`, or at the precision floor; started by `RELAX_SWEEPS` nonlinear Jacobi
sweeps (`Round.relax`). With a prior, a round whose gradient already bounds the Newton step
below what its last solve would resolve (`step_bound`) is converged without that solve. It serves m-Elo's
bootstrap rounds on sparse graphs
(`pipeline.methods.bradley_terry.m_elo`), one round per call, and `fit`'s sparse fits. Written over arrays of
cells x rounds, the same steps spent their time on memory traffic (38 ms a round on the
WTA-like graph at 43k cells: the log-likelihood's evaluations 25%, laying out the Hessian 16%,
the products 25%); here a substitution is one pass over the agents' adjacency lists, each row
summed in a fixed order, and every reduction a plain loop: the bits depend on the inputs only
(no BLAS, no threads, no fast-math reassociation). The Hessian's entries are stored as float32
(`WEIGHT`: the substitutions are memory-bound) and its diagonal summed from the stored entries, so the
solves work on the exact Hessian of curvatures rounded to 6e-8 relative: a Laplacian within a factor
1 +- 6e-8 of the true one, which changes the Newton step by that share and neither the gradient
(float64) nor the answer. The loops release the GIL, so the chunks
run in parallel on local threads as well as on Dask workers.

`pipeline.methods.bradley_terry.m_elo` and `bradley_terry.fit` import this module on first use, so that importing
the methods does not import numba; the compiled code is cached on disk by numba.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import sqrt

import numpy as np
from numba import njit

from pipeline.methods.bradley_terry.steps import ARMIJO, FLOOR, MIN_STEP_SHARE, STEP_ACCURACY, Adjacency, SolveLog, forcing, predicted_step

RELAX_SWEEPS = 5  # nonlinear Jacobi sweeps that warm-start each round before Newton
RELAX_STEP = 2.0  # largest move of one agent in one sweep, natural units (a factor e^2 in odds)
COARSE_BLOCKS = 16  # blocks of the agents' numbering whose offsets start each solve (`coarse_guess`): Diplomacy-scale,
#                   4 to 64 blocks all took 15% fewer CG iterations (the slow, global error has few modes)
WEIGHT = np.float32  # the Hessian's entries as the substitutions read them (module docstring)
PIVOT_FLOOR = 1e-12  # relative size of a Cholesky pivot taken as zero in the coarse system (`coarse_factor`)


@njit(cache=True, nogil=True)
def effective_wins(x_wins, y_wins, ties, cells):
    """A round's effective wins of x and of y, ties as half a win each, in the order `cells` takes the cells:
    one gather from the round's redrawn counts (each a contiguous row of the draws)."""
    wx, wy = np.empty(len(cells)), np.empty(len(cells))
    for k in range(len(cells)):
        c = cells[k]
        half = ties[c] / 2
        wx[k] = x_wins[c] + half
        wy[k] = y_wins[c] + half
    return wx, wy


@njit(cache=True, nogil=True)
def drawn_agents(weight, start, cell):
    """Per agent of an adjacency (`start`, `cell`): whether one of its cells has a positive `weight` (a round
    drew a record of it), each agent's cells scanned until one has."""
    drawn = np.zeros(len(start) - 1, dtype=np.bool_)
    for i in range(len(drawn)):
        for e in range(start[i], start[i + 1]):
            if weight[cell[e]] > 0:
                drawn[i] = True
                break
    return drawn


@njit(cache=True, nogil=True)
def _differences(beta, x, y, d, e):
    """d = b_x - b_y per cell, and e = -|d| (numpy's exp takes it from there)."""
    for c in range(len(x)):
        d[c] = beta[x[c]] - beta[y[c]]
        e[c] = -abs(d[c])


@njit(cache=True, nogil=True)
def _win_and_loss(d, e):
    """P(x beats y) and P(y beats x) from d = b_x - b_y and e = exp(-|d|)."""
    return (1.0 if d >= 0 else e) / (1.0 + e), (e if d >= 0 else 1.0) / (1.0 + e)


@njit(cache=True, nogil=True)
def _combine(beta, x, y, d, e, log1p_e, wx, wy, cc, prior, grad, position, curvature):
    """From d and e = exp(-|d|) per cell, in one pass: the gradient per agent into `grad` and the curvature
    cc p q of cell c into `curvature[position[c]]`, p = P(x beats y) and q = 1 - p (each from e, so neither loses
    its digits where the other is within an ulp of 1); returns the data log-likelihood and the gradient's largest
    entry."""
    for i in range(len(beta)):
        grad[i] = -prior * beta[i]
    data = 0.0
    for c in range(len(d)):
        data -= cc[c] * (max(-d[c], 0.0) + log1p_e[c]) + wy[c] * d[c]  # log(1 + exp(-d)) = max(-d, 0) + log1p(e)
        p, q = _win_and_loss(d[c], e[c])
        g = wx[c] * q - wy[c] * p
        grad[x[c]] += g
        grad[y[c]] -= g
        curvature[position[c]] = cc[c] * p * q
    largest = 0.0
    for i in range(len(beta)):
        if abs(grad[i]) > largest or grad[i] != grad[i]:  # a NaN stays, as in numpy's max
            largest = abs(grad[i])
    return data, largest


@njit(cache=True, nogil=True)
def _relax_sweep(beta, x, y, d, e, wx, wy, cc, prior, longest, grad, curvature):
    """One nonlinear Jacobi sweep on `beta` in place, from d and e = exp(-|d|) at `beta`."""
    for i in range(len(beta)):
        grad[i] = -prior * beta[i]
        curvature[i] = prior
    for c in range(len(x)):
        p, q = _win_and_loss(d[c], e[c])
        g = wx[c] * q - wy[c] * p
        h = cc[c] * p * q
        grad[x[c]] += g
        grad[y[c]] -= g
        curvature[x[c]] += h
        curvature[y[c]] += h
    for i in range(len(beta)):
        if curvature[i] > 0:
            beta[i] += min(max(grad[i] / curvature[i], -longest), longest)


@njit(cache=True, nogil=True)
def _dot(u, v):
    s = 0.0
    for i in range(len(u)):
        s += u[i] * v[i]
    return s


@njit(cache=True, nogil=True)
def _forward_product(start, split, other, weight, diagonal, v, t, d, pure, q):
    """q = (D - W_lower)^-1 v + t (`pure`: the substitution alone, which its later rows read) by forward
    substitution with the lower triangle of D - W; returns d . q, summed in the same pass."""
    dq = 0.0
    for i in range(len(v)):
        s = v[i]
        for e in range(start[i], split[i]):
            s += weight[e] * pure[other[e]]
        pure[i] = s / diagonal[i]
        q[i] = pure[i] + t[i]
        dq += d[i] * q[i]
    return dq


@njit(cache=True, nogil=True)
def _backward(start, split, other, weight, diagonal, v, out, residual):
    """out = (D - W_upper)^-1 v by back substitution with the upper triangle of D - W, and (when `residual`
    is not empty) residual = v - D out, the next forward substitution's right-hand side, in the same pass."""
    for i in range(len(v) - 1, -1, -1):
        s = v[i]
        for e in range(split[i], start[i + 1]):
            s += weight[e] * out[other[e]]
        out[i] = s / diagonal[i]
        if len(residual):
            residual[i] = v[i] - diagonal[i] * out[i]


def coarse_blocks(n: int, blocks: int = COARSE_BLOCKS) -> tuple[np.ndarray, np.ndarray]:
    """The first agent of each of `blocks` contiguous blocks of agents 0..n-1 (and n), and each agent's block."""
    k = max(1, min(blocks, n))
    bounds = np.arange(k + 1, dtype=np.int64) * n // k
    return bounds, np.repeat(np.arange(k, dtype=np.int32), np.diff(bounds))


@njit(cache=True, nogil=True)
def hessian_entries(start, cell, curvature, prior, weight, diagonal):
    """The Hessian's entries agent by agent (`weight`: float32 or float64, as `weight` is) and its diagonal,
    prior + the row's entries as stored, so that D - W is exactly a Laplacian plus prior I."""
    for i in range(len(diagonal)):
        s = prior
        for e in range(start[i], start[i + 1]):
            weight[e] = curvature[cell[e]]
            s += weight[e]
        diagonal[i] = s


@njit(cache=True, nogil=True)
def coarse_system(start, split, other, weight, diagonal, bounds, block):
    """Z^T A Z, Z the indicators of the blocks `bounds` (`block`: each agent's block), A = D - W: one pass
    over the upper triangle, every sum in the agents' order."""
    k = len(bounds) - 1
    coarse = np.zeros((k, k))
    for a in range(k):
        total, inside = 0.0, 0.0
        for i in range(bounds[a], bounds[a + 1]):
            total += diagonal[i]
            for e in range(split[i], start[i + 1]):
                b = block[other[e]]
                if b == a:
                    inside += weight[e]
                else:
                    coarse[a, b] -= weight[e]
        coarse[a, a] = total - 2.0 * inside  # a pair within the block is two entries of A
    for a in range(k):
        for b in range(a + 1, k):
            coarse[b, a] = coarse[a, b]
    return coarse


@njit(cache=True, nogil=True)
def coarse_factor(coarse):
    """The Cholesky factor of the coarse system, in plain loops (a fixed order: the same bits whatever BLAS
    or threads); a pivot at most PIVOT_FLOOR of its diagonal entry is left 0 (its offset is then 0), which
    grounds the singular Laplacian of a prior-free fit (its null space is the constant vector)."""
    k = len(coarse)
    lower = np.zeros((k, k))
    for j in range(k):
        pivot = coarse[j, j]
        for m in range(j):
            pivot -= lower[j, m] * lower[j, m]
        if not pivot > PIVOT_FLOOR * coarse[j, j]:
            continue
        lower[j, j] = sqrt(pivot)
        for i in range(j + 1, k):
            s = coarse[i, j]
            for m in range(j):
                s -= lower[i, m] * lower[j, m]
            lower[i, j] = s / lower[j, j]
    return lower


@njit(cache=True, nogil=True)
def coarse_guess(lower, rhs, block):
    """The start x0 = Z (Z^T A Z)^-1 Z^T rhs, Z the indicators of the agents' blocks, from the coarse system's
    factor (`coarse_factor`): the Galerkin solution over the blocks' offsets [Nic87], so ||x* - x0||_A
    <= ||x*||_A when the factor is A's own. Conjugate gradients with a local preconditioner (Gauss-Seidel) are
    slowest on the smooth, long-range part of the error; this start removes its coarsest part."""
    k = len(lower)
    offsets = np.zeros(k)
    for i in range(len(rhs)):
        offsets[block[i]] += rhs[i]
    for j in range(k):
        if lower[j, j] > 0:
            s = offsets[j]
            for m in range(j):
                s -= lower[j, m] * offsets[m]
            offsets[j] = s / lower[j, j]
        else:
            offsets[j] = 0.0
    for j in range(k - 1, -1, -1):
        if lower[j, j] > 0:
            s = offsets[j]
            for m in range(j + 1, k):
                s -= lower[m, j] * offsets[m]
            offsets[j] = s / lower[j, j]
    guess = np.empty(len(rhs))
    for i in range(len(rhs)):
        guess[i] = offsets[block[i]]
    return guess


@njit(cache=True, nogil=True)
def _start(start, split, other, weight, diagonal, rhs, guess, u, residual):
    """In one pass over the rows: u = (D - W_lower)^-1 rhs, returning u . D u (the right-hand side's size in
    the preconditioner's norm), and the residual of Eisenstat's system at the guess, (D - W_lower)^-1
    (rhs - A guess) = (D - W_lower)^-1 (rhs + W_upper guess) - guess, returning its r . D r."""
    first = 0.0
    for i in range(len(rhs)):
        s, s_guess = rhs[i], rhs[i]
        for e in range(start[i], split[i]):
            s += weight[e] * u[other[e]]
            s_guess += weight[e] * residual[other[e]]
        for e in range(split[i], start[i + 1]):
            s_guess += weight[e] * guess[other[e]]
        u[i] = s / diagonal[i]
        first += u[i] * (diagonal[i] * u[i])
        residual[i] = s_guess / diagonal[i]
    rz = 0.0
    for i in range(len(rhs)):
        residual[i] -= guess[i]
        rz += residual[i] * (diagonal[i] * residual[i])
    return first, rz


@njit(cache=True, nogil=True)
def conjugate_gradients(start, split, other, weight, diagonal, rhs, guess, rtol, maxiter):
    """Conjugate gradients on A s = rhs from s = `guess`, A = D - W (the Laplacian with the entries
    `weight`, agent-major, and the diagonal `diagonal`), preconditioned by symmetric Gauss-Seidel,
    M = (D - W_lower) D^-1 (D - W_upper), with Eisenstat's trick [Eis81]: CG runs on
    (D - W_lower)^-1 A (D - W_upper)^-1, whose product is one forward and one back substitution,
    so an iteration costs about one product with A (and half the iterations of Jacobi's on the
    WTA-like graph). Stops when the residual's M^-1 norm is at most `rtol` times the right-hand
    side's (the preconditioned norm, as PETSc's CG by default: the same test whatever the guess);
    returns s, that ratio and the iterations taken."""
    n = len(rhs)
    r, t, u, q, pure = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    first, rz = _start(start, split, other, weight, diagonal, rhs, guess, u, r)
    goal = rtol * rtol * first
    if rz <= goal:
        return guess.copy(), sqrt(max(rz, 0.0) / first) if first > 0 else 0.0, 0
    solution, z = np.zeros(n), diagonal * r  # solution: the transformed correction (D - W_upper)(s - guess)
    d = z.copy()
    iterations = 0
    for _ in range(maxiter):
        iterations += 1
        _backward(start, split, other, weight, diagonal, d, t, u)
        dq = _forward_product(start, split, other, weight, diagonal, u, t, d, pure, q)
        alpha = rz / dq if dq > 0 else 0.0
        rz_next = 0.0
        for i in range(n):
            solution[i] += alpha * d[i]
            r[i] -= alpha * q[i]
            z[i] = diagonal[i] * r[i]
            rz_next += r[i] * z[i]
        if rz_next <= goal or dq <= 0:
            rz = rz_next
            break
        beta = rz_next / rz
        for i in range(n):
            d[i] = z[i] + beta * d[i]
        rz = rz_next
    _backward(start, split, other, weight, diagonal, solution, t, solution[:0])
    t += guess
    return t, sqrt(max(rz, 0.0) / first), iterations


class Round:
    """The work arrays of one round's fit: the cells' data (x, y, effective wins wx and wy) and the
    adjacency, with buffers reused across steps. The exponentials and logarithms are numpy's, over
    a round's cells at once (vectorised, numpy's SIMD kernels: 5x numba's scalar `exp` and 8x its
    `log1p` at 43k cells, 4x and 7.5x at 648k); the loops that gather and scatter by agent are
    compiled, each summing what it can in its pass (the gradient and curvatures with the
    log-likelihood, the conjugate gradients' dot products and vector updates with the substitutions),
    in the same order as apart, so the bits do not change."""

    def __init__(self, x: np.ndarray, y: np.ndarray, adjacency: Adjacency, wx: np.ndarray, wy: np.ndarray, prior: float,
                 position: np.ndarray | None = None):
        """The cells (x, y, wx, wy) are the adjacency's, or (`position` given: their places among the adjacency's
        cells) some of them: a cell a round drew nothing from adds nothing to its gradient, curvature or
        log-likelihood (zero weights times finite terms), so the passes over the cells may leave it out without
        changing a bit (at Diplomacy scale a third of the cells: Poisson(1) is 0 with probability 1/e)."""
        self.x, self.y, self.adjacency, self.wx, self.wy, self.cc, self.prior = x, y, adjacency, wx, wy, wx + wy, prior
        m = len(x)
        self.position = np.arange(m) if position is None else position
        self.cells = len(adjacency.cell) // 2  # each cell is listed under both its agents
        self.d, self.e, self.log1p_e = np.empty(m), np.empty(m), np.empty(m)

    def curvatures(self) -> np.ndarray:
        """A buffer of the curvature of every cell of the adjacency (`evaluate` fills those of the round's
        cells; the others, drawn empty, stay 0)."""
        return np.zeros(self.cells)

    def exponentials(self, beta: np.ndarray) -> None:
        """d = b_x - b_y and e = exp(-|d|) per cell."""
        _differences(beta, self.x, self.y, self.d, self.e)
        np.exp(self.e, out=self.e)

    def evaluate(self, beta: np.ndarray, grad: np.ndarray, curvature: np.ndarray) -> tuple[float, float, float]:
        """The log-likelihood, the size of its terms and the gradient's largest entry at `beta`; the gradient
        into `grad`, the curvature per cell into `curvature` (`curvatures`; in the same pass: a line search's
        trial is nearly always taken, and Newton's next step needs them)."""
        self.exponentials(beta)
        np.log1p(self.e, out=self.log1p_e)
        data, gradient_size = _combine(beta, self.x, self.y, self.d, self.e, self.log1p_e, self.wx, self.wy, self.cc, self.prior, grad,
                                       self.position, curvature)
        penalty = self.prior / 2 * _dot(beta, beta)
        return data - penalty, penalty - data, gradient_size

    def relax(self, beta: np.ndarray, sweeps: int = RELAX_SWEEPS) -> None:
        """`sweeps` nonlinear Jacobi sweeps on `beta` in place: every agent takes its own one-dimensional
        Newton step with its opponents held, at most `RELAX_STEP` long.

        A resample moves the agents with few comparisons far (one that lost its only win drops by
        several natural units), along a log-likelihood that bends; Newton on the whole graph then
        needs many damped steps. These sweeps cost one pass over the cells each and take those
        agents most of the way, so Newton starts where it converges quadratically (WTA-like graph:
        15 Newton steps to 6). Only the start changes: Newton's own stopping rules decide the answer."""
        grad, curvature = np.empty(len(beta)), np.empty(len(beta))
        for _ in range(sweeps):
            self.exponentials(beta)
            _relax_sweep(beta, self.x, self.y, self.d, self.e, self.wx, self.wy, self.cc, self.prior, RELAX_STEP, grad, curvature)


@dataclass(frozen=True, eq=False)
class Outcome:
    """How `newton` stopped: "converged", "precision floor" (as `Fit.stopped`), "no gain" (the line
    search gave up) or "iterations" (`max_iter` steps); with the steps taken, their conjugate-gradient
    iterations, the last step and its largest entry, its predicted gain and the log-likelihood before it
    (for `fit`'s messages). A round converged by `step_bound` reports a zero step (none is taken) with
    the bound as its largest entry and max|g|^2 / (2 prior) as its gain, both upper bounds."""

    stopped: str
    iterations: int
    products: int  # conjugate-gradient iterations of all its solves, each about one product with the Hessian
    step: np.ndarray
    last_step: float
    gain: float
    log_likelihood: float

    @property
    def fitted(self) -> bool:
        return self.stopped in ("converged", "precision floor")


def step_bound(gradient_size: float, prior: float) -> float:
    """An upper bound on the largest entry of the exact Newton step, from the largest entry of the (penalised)
    gradient: the Hessian is D - W + prior I with W >= 0 and D - W a Laplacian, an M-matrix for prior > 0, so its
    inverse is non-negative and maps the ones vector to 1 / prior, and |H^-1 g| <= H^-1 |g| <= max|g| / prior
    entry by entry. Infinite without a prior (the Hessian is singular along the ratings' mean)."""
    return gradient_size / prior if prior > 0 else np.inf


def _newton_system(adjacency: Adjacency, weight: np.ndarray, diagonal: np.ndarray, rhs: np.ndarray, guess: np.ndarray,
                   rtol: float, prior: float) -> tuple[np.ndarray, float, int]:
    """A Newton step by `conjugate_gradients`, centred when the prior is 0 (the ratings' mean is free)."""
    step, reached, taken = conjugate_gradients(adjacency.start, adjacency.split, adjacency.other, weight, diagonal, rhs, guess, rtol,
                                               10 * len(rhs))
    if prior == 0:
        step -= step.mean()
    return step, reached, taken


def newton(round_: Round, beta: np.ndarray, tol: float, max_iter: int, solves: SolveLog | None = None) -> Outcome:
    """Fit one round from `beta` (changed in place): `Round.relax`, then Newton with `fit`'s steps and
    stopping rules. `solves` collects conjugate-gradient shortfalls.

    Each solve starts from `coarse_guess` with the coarse system of the round's first Hessian (its
    blocks' sums of curvature move little from step to step; at Diplomacy scale one 3.4 ms pass a round
    instead of one every step). With a prior, a round whose `step_bound` is at most STEP_ACCURACY * tol is
    converged without solving: its Newton step is then below the error a confirming solve is asked for,
    so the ratings are as accurate as after that step; its last step is reported as the bound, and no
    step is taken."""
    prior, adjacency = round_.prior, round_.adjacency
    n = len(beta)
    round_.relax(beta)
    grad, curvature, diagonal, weight = np.empty(n), round_.curvatures(), np.empty(n), np.empty(len(adjacency.cell), dtype=WEIGHT)
    bounds, block = coarse_blocks(n)
    lower = None
    loglik, magnitude, gradient_size = round_.evaluate(beta, grad, curvature)
    first, previous, before = -1.0, np.inf, np.inf
    step, size, decrement = np.zeros(n), np.inf, 0.0
    products = 0
    for iteration in range(1, max_iter + 1):
        if first < 0:
            first = gradient_size if gradient_size > 0 else 1.0
        if (bound := step_bound(gradient_size, prior)) <= STEP_ACCURACY * tol:
            return Outcome("converged", iteration, products, np.zeros(n), bound, _dot(grad, grad) / (2 * prior), loglik)
        rhs = grad - grad.mean() if prior == 0 else grad
        hessian_entries(adjacency.start, adjacency.cell, curvature, prior, weight, diagonal)
        if lower is None:  # the first system's; the blocks' sums of curvature move little from step to step
            lower = coarse_factor(coarse_system(adjacency.start, adjacency.split, adjacency.other, weight, diagonal, bounds, block))
        guess = coarse_guess(lower, rhs, block)
        rtol = float(forcing(gradient_size / first, predicted_step(previous, before), tol))
        step, reached, taken = _newton_system(adjacency, weight, diagonal, rhs, guess, rtol, prior)
        products += taken
        size = float(np.abs(step).max(initial=0.0))
        if size <= tol and reached * size > STEP_ACCURACY * tol:  # shorter than predicted: the last step solved closer
            rtol = float(forcing(gradient_size / first, size, tol))
            step, reached, taken = _newton_system(adjacency, weight, diagonal, rhs, guess, rtol, prior)
            products += taken
            size = float(np.abs(step).max(initial=0.0))
        if solves is not None:
            solves.record(reached, rtol)
        decrement = _dot(grad, step)
        at_floor = decrement / 2 <= FLOOR * magnitude
        if size <= tol or (at_floor and size > previous / 2):
            beta += step
            return Outcome("converged" if size <= tol else "precision floor", iteration, products, step, size, decrement / 2, loglik)
        share = 1.0
        while True:
            trial = beta + share * step
            trial_loglik, trial_magnitude, gradient_size = round_.evaluate(trial, grad, curvature)  # this step is done with them
            if at_floor or trial_loglik - loglik >= ARMIJO * share * decrement:
                break
            share /= 2
            if share < MIN_STEP_SHARE:
                return Outcome("no gain", iteration, products, step, size, decrement / 2, loglik)
        beta[:] = trial
        loglik, magnitude, previous, before = trial_loglik, trial_magnitude, size, previous
    return Outcome("iterations", max_iter, products, step, size, decrement / 2, loglik)


def one_step(round_: Round, beta: np.ndarray, rtol: float) -> bool:
    """From `beta` (changed in place), `Round.relax`'s sweeps and then one full Newton step on the round's own
    gradient and Hessian, with no line search: the one-step bootstrap [And02] from the full-data estimate.
    The sweeps (one pass over the cells each) take the agents with few comparisons, whose resampled
    log-likelihood bends far from the full-data one, most of the way, as they do for `newton`; without
    them the one step left 72% of the Diplomacy-scale agents' interval endpoints over 10% of the exact
    bootstrap's width away. The system is solved as `newton`'s are (`coarse_guess`, then
    `conjugate_gradients`) to the relative residual `rtol`; returns whether it reached it."""
    prior, adjacency = round_.prior, round_.adjacency
    grad, curvature = np.empty(len(beta)), round_.curvatures()
    diagonal, weight = np.empty(len(beta)), np.empty(len(adjacency.cell), dtype=WEIGHT)
    round_.relax(beta)
    round_.evaluate(beta, grad, curvature)
    rhs = grad - grad.mean() if prior == 0 else grad
    hessian_entries(adjacency.start, adjacency.cell, curvature, prior, weight, diagonal)
    bounds, block = coarse_blocks(len(beta))
    lower = coarse_factor(coarse_system(adjacency.start, adjacency.split, adjacency.other, weight, diagonal, bounds, block))
    step, reached, _ = _newton_system(adjacency, weight, diagonal, rhs, coarse_guess(lower, rhs, block), rtol, prior)
    beta += step
    return reached <= rtol
