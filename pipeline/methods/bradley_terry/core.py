"""The Bradley-Terry core shared by m-Elo, am-Elo and the stability experiments [BT52]; [AmElo, 4.1].

P(x beats y) = 1 / (1 + exp(-(b_x - b_y))) in natural units b; the log-likelihood is
[AmElo, eq. 2] with C = 1, summed over count cells (`Cells`: one per unordered pair, with the
weight of x's wins, y's wins and ties), so a fit costs the same for 10^3 or 10^8 battles. Ties
count as half a win each way, or follow Davidson's model [Dav70] (P(tie) proportional to
nu * sqrt(pi_x pi_y), nu fitted jointly). `prior=p` adds the Gaussian penalty p/2 * sum(b^2).

Canonical order: `Cells.from_counts(pairs, keys)` relabels the agents by `keys` (each local
agent's position among the agents' names sorted by code point), so cells, sums and random draws
come in an order that depends on the names only, never on the ids a store assigned: the same
battles give the same bits whatever the numbering.

Newton's method (`fit`) with a backtracking line search on the concave log-likelihood; the
Hessian is a weighted graph Laplacian (`laplacian_solve`: dense Cholesky where that is cheaper,
`dense_is_cheaper`, a cost model with a memory bound; otherwise conjugate gradients, work
proportional to the nonzeros, solved loosely while the gradient is large and never tighter than
the step needs, `forcing` [EW96]: with ties as half wins compiled and preconditioned by symmetric
Gauss-Seidel, `pipeline.methods.bradley_terry.newton`; with Davidson ties Jacobi-preconditioned
over arrays). Its stopping rules are
scale-aware, so multiplying every weight by a constant gives the same ratings and no decision
rests on the last bits of a sum:
- converged when the largest Newton step, in natural units (a ratio of gradient to curvature,
  free of the weights' scale), is at most `tol`; that last step is taken, so with quadratic
  convergence the ratings are accurate to about tol^2;
- at the precision floor when the predicted gain of a step (half the Newton decrement
  g' H^-1 g) is below `FLOOR` times the size of the log-likelihood and the steps have stopped
  shrinking: floating point can tell no better point apart (`Fit.stopped` says so, with the
  last step in `Fit.last_step`);
- a step is accepted when it gains at least ARMIJO of its predicted gain (Armijo), or outright
  below the floor; a line search that finds no gain, or `max_iter` steps, raise a
  `ConvergenceError` naming the agents with the largest last steps and the numbers.

Existence [Zermelo; Ford 1957]: with `prior=0` the MLE exists iff the graph "x beat y or tied
with y" is strongly connected; `existence_problems` says why not, and `fit_or_refuse` raises
`NoEstimate` naming the agents.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.special import expit

from pipeline.methods.bradley_terry.steps import ARMIJO, CG_FORCING, FLOOR, MIN_STEP_SHARE, Banded, SolveLog, forcing
from pipeline.methods.convergence import ConvergenceError, NoEstimate
from pipeline.stats.counts import PairwiseCounts

LN10 = float(np.log(10.0))
STEP_TOL = 1e-7  # natural units: 1.7e-5 Elo points, and the step after it is ~tol^2
DENSE_ALWAYS = 256  # below this many agents a dense factorisation costs less than sparse bookkeeping
DENSE_BYTES = 1 << 28  # memory bound of a dense Hessian (and of its factor or inverse): 5,792 agents
DENSE_SPEEDUP = 10  # a dense (BLAS-3) flop costs about a tenth of a sparse, memory-bound one
CG_STEPS = 50  # Jacobi-preconditioned CG iterations of a typical Newton solve
COMPILED = True  # sparse fits with ties=half by `bradley_terry_newton` (False: Newton over arrays, as Davidson's)


@dataclass(frozen=True, eq=False)
class Cells:
    """Unordered pairs x < y (agent indices) with the weight of x's wins, y's wins and ties."""

    n: int
    x: np.ndarray
    y: np.ndarray
    x_wins: np.ndarray
    y_wins: np.ndarray
    ties: np.ndarray

    @classmethod
    def from_counts(cls, pairs: PairwiseCounts, keys: np.ndarray | None = None) -> Cells:
        """The cells of pairwise counts; with `keys`, agent i of the counts is agent keys[i] of the cells."""
        n = pairs.n
        keys = np.arange(n) if keys is None else np.asarray(keys, dtype=np.int64)
        wins, ties = sp.coo_array(pairs.wins), sp.coo_array(pairs.ties)
        winner, loser = keys[wins.row], keys[wins.col]
        tie_a, tie_b = keys[ties.row], keys[ties.col]
        upper = tie_a < tie_b
        x = np.concatenate([np.minimum(winner, loser), tie_a[upper]])
        y = np.concatenate([np.maximum(winner, loser), tie_b[upper]])
        columns = np.zeros((len(x), 3))
        k = len(wins.data)
        columns[:k, 0] = np.where(winner < loser, wins.data, 0.0)
        columns[:k, 1] = np.where(winner < loser, 0.0, wins.data)
        columns[k:, 2] = ties.data[upper]
        return cls.summed(n, x, y, columns)

    @classmethod
    def summed(cls, n: int, x: np.ndarray, y: np.ndarray, columns: np.ndarray) -> Cells:
        """Cells from rows (x < y; x wins, y wins, ties), summed per pair; empty pairs are dropped.

        Each row holds a multiple of the store's 2^-24 weight grid, so the sums are exact."""
        key, inverse = np.unique(np.asarray(x, np.int64) * n + np.asarray(y, np.int64), return_inverse=True)
        inverse = inverse.ravel()
        sums = [np.bincount(inverse, columns[:, c], minlength=len(key)) for c in range(3)]
        keep = (sums[0] + sums[1] + sums[2]) > 0
        return cls(n, key[keep] // n, key[keep] % n, *(s[keep] for s in sums))

    def half(self) -> tuple[np.ndarray, np.ndarray]:
        """Effective wins with each tie counted as half a win for both sides."""
        return self.x_wins + self.ties / 2, self.y_wins + self.ties / 2

    def with_weights(self, x_wins: np.ndarray, y_wins: np.ndarray, ties: np.ndarray) -> Cells:
        return Cells(self.n, self.x, self.y, x_wins, y_wins, ties)


@dataclass(frozen=True)
class Fit:
    beta: np.ndarray  # natural units; centred when prior = 0
    log_nu: float | None  # Davidson's tie parameter, None for ties=half
    iterations: int
    log_likelihood: float
    stopped: str = "converged"  # or "precision floor" (see the module docstring)
    last_step: float = 0.0  # the largest |step| of the last iteration, natural units


def existence_problems(cells: Cells, davidson: bool = False) -> tuple[str, list[int]] | None:
    """Why the unpenalised MLE does not exist (a message with an `{agents}` placeholder, and the
    agents it names), or None if it exists."""
    wx, wy = cells.half()
    n = cells.n
    if n < 2:
        return f"{'one agent, ' if n else 'no agents'}{{agents}}: ratings need comparisons between two or more", list(range(n))
    beat = sp.csr_array((np.r_[wx, wy], (np.r_[cells.x, cells.y], np.r_[cells.y, cells.x])), shape=(n, n))
    beat.eliminate_zeros()
    strong, _ = connected_components(beat, directed=True, connection="strong")
    if strong > 1:
        pieces, piece = connected_components(beat, directed=False)
        won = np.asarray(beat.sum(axis=1)).ravel() > 0
        lost = np.asarray(beat.sum(axis=0)).ravel() > 0
        bad = np.flatnonzero(~won | ~lost)
        shape = f"the comparison graph has {pieces} connected piece(s) and {strong} strongly connected piece(s)"
        if len(bad):
            return f"agents that never win or never lose: {{agents}} ({shape})", bad.tolist()
        smallest = np.argmin(np.bincount(piece))
        return f"{shape}; agents of different pieces were never compared (the smallest piece: {{agents}})", \
            np.flatnonzero(piece == smallest).tolist()
    if davidson and (cells.ties.sum() == 0 or (cells.x_wins.sum() + cells.y_wins.sum()) == 0):
        return "the Davidson tie parameter needs both ties and decisive results", []
    return None


def _dot(u: np.ndarray, v: np.ndarray) -> float:
    """u . v without BLAS: a threaded BLAS dot stalls when the cores are busy (measured 13 ms instead of
    1.5 ms per evaluation on 20k cells under load)."""
    return float(np.sum(u * v))


@dataclass(frozen=True, eq=False)
class Evaluation:
    """The log-likelihood at a point, its per-cell derivatives, and the size of its terms."""

    log_likelihood: float
    slope: np.ndarray  # per cell, d(loglik)/dd with d = b_x - b_y
    curvature: np.ndarray  # per cell, -d2(loglik)/dd2
    davidson: tuple[float, float, np.ndarray] | None  # d/dlog_nu, -d2/dlog_nu2, per-cell cross term
    magnitude: float  # sum of |terms|: the scale of rounding in the log-likelihood


def evaluate(cells: Cells, beta: np.ndarray, log_nu: float | None, prior: float) -> Evaluation:
    d = beta[cells.x] - beta[cells.y]
    penalty = prior / 2 * float(beta @ beta)
    if log_nu is None:
        wx, wy = cells.half()
        data = -(_dot(wx, np.logaddexp(0.0, -d)) + _dot(wy, np.logaddexp(0.0, d)))
        p, q = expit(d), expit(-d)  # q = 1 - p without its cancellation where p is within an ulp of 1
        return Evaluation(data - penalty, wx * q - wy * p, (wx + wy) * p * q, None, penalty - data)
    c = cells.x_wins + cells.y_wins + cells.ties
    lz = np.logaddexp(np.logaddexp(d / 2, -d / 2), log_nu)
    data = _dot(cells.x_wins, d / 2 - lz) + _dot(cells.y_wins, -d / 2 - lz) + _dot(cells.ties, log_nu - lz)
    q1, q2, q3 = np.exp(d / 2 - lz), np.exp(-d / 2 - lz), np.exp(log_nu - lz)
    m = (q1 - q2) / 2
    davidson = (float(cells.ties.sum()) - _dot(c, q3), _dot(c, q3 - q3 * q3), c * (-m * q3))
    # 1/2 - m = q2 + q3/2 and (q1 + q2)/4 - m^2 = (q3 (q1 + q2) + 4 q1 q2) / 4, as sums of positive terms: the
    # differences lose every digit where one outcome is within an ulp of certain (weights 2^40 apart)
    slope = cells.x_wins * (q2 + q3 / 2) - cells.y_wins * (q1 + q3 / 2) - cells.ties * m
    return Evaluation(data - penalty, slope, c * (q3 * (q1 + q2) + 4 * q1 * q2) / 4, davidson, abs(data) + penalty)


def spread(cells: Cells, per_cell: np.ndarray) -> np.ndarray:
    """Sum of a per-cell quantity into agent x with sign +, agent y with sign -."""
    return np.bincount(cells.x, per_cell, minlength=cells.n) - np.bincount(cells.y, per_cell, minlength=cells.n)


def dense_fits(n: int) -> bool:
    """Whether a dense n x n Hessian stays within the memory bound `DENSE_BYTES`."""
    return 8 * n * n <= DENSE_BYTES


def dense_is_cheaper(n: int, pairs: int) -> bool:
    """Whether a dense Cholesky solve beats sparse conjugate gradients on n agents and `pairs` compared pairs.

    Decided by cost, not by a fixed agent count: a dense factorisation costs n^3 / 3 flops at
    BLAS-3 speed (`DENSE_SPEEDUP` times a sparse flop), a sparse solve `CG_STEPS` products with
    the 2 pairs + n nonzeros of the Hessian; below `DENSE_ALWAYS` agents dense always wins, and
    `dense_fits` bounds the memory."""
    if not dense_fits(n):
        return False
    return n <= DENSE_ALWAYS or n**3 / 3 <= DENSE_SPEEDUP * CG_STEPS * 2 * (2 * pairs + n)


def dense_hessian(cells: Cells, h: np.ndarray, prior: float) -> np.ndarray:
    """L_h + prior I as a dense matrix, L_h the Laplacian with edge weights h; with prior = 0 the constant
    c 11' is added, which pins the mean: (L + c 11') x = g with 1'g = 0 gives the centred solution."""
    n = cells.n
    a = np.zeros((n, n))
    a.flat[cells.x * n + cells.y] = -h
    a += a.T
    a.flat[:: n + 1] = np.bincount(cells.x, h, minlength=n) + np.bincount(cells.y, h, minlength=n) + prior
    if prior == 0:
        a += a.diagonal().mean() / n
    return a


def dense_solve(a: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """a^-1 rhs by Cholesky, a from `dense_hessian`; least squares where a is not numerically positive
    definite (an agent with almost no curvature)."""
    try:
        return sla.cho_solve(sla.cho_factor(a, lower=True, check_finite=False), rhs, check_finite=False)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(a, rhs, rcond=None)[0]


def incidence(cells: Cells) -> sp.csr_array:
    """The signed agent-by-cell incidence matrix: +1 at (x, cell), -1 at (y, cell); `spread` as a matrix."""
    index = np.arange(len(cells.x))
    return sp.csr_array((np.r_[np.ones(len(index)), -np.ones(len(index))], (np.r_[cells.x, cells.y], np.r_[index, index])),
                        shape=(cells.n, len(index)))


def block_cg(apply, diagonal: np.ndarray, rhs: np.ndarray, rtol: np.ndarray | float, maxiter: int
             ) -> tuple[np.ndarray, np.ndarray]:
    """Jacobi-preconditioned conjugate gradients on every column at once: column k solves A_k x = rhs[:, k].

    `apply(P, columns)` returns A_k P[:, j] for k = columns[j] (one sparse product for all of
    them, so the work is the nonzeros times the columns, without a Python loop per column);
    `diagonal` holds each A_k's diagonal. Each column stops at its own relative residual `rtol`
    and leaves the block; returns the solutions and the relative residuals reached. No BLAS call
    and no threads: the bits depend on the inputs only."""
    size = np.sqrt(np.sum(rhs * rhs, axis=0))
    goal = np.broadcast_to(np.asarray(rtol, dtype=float), size.shape) * size
    x, residual = np.zeros_like(rhs), size.copy()
    columns = np.flatnonzero(residual > goal)
    r = rhs[:, columns]
    z = r / diagonal[:, columns]
    p, rz = z.copy(), np.sum(r * z, axis=0)
    for _ in range(maxiter):
        if len(columns) == 0:
            break
        q = apply(p, columns)
        pq = np.sum(p * q, axis=0)
        alpha = np.divide(rz, pq, out=np.zeros_like(rz), where=pq > 0)
        x[:, columns] += alpha * p
        r -= alpha * q
        residual[columns] = np.sqrt(np.sum(r * r, axis=0))
        if (going := (residual[columns] > goal[columns]) & (pq > 0)).all():
            z = r / diagonal[:, columns]
        else:
            columns, r, p, rz = columns[going], r[:, going], p[:, going], rz[going]
            z = r / diagonal[:, columns]
        rz_next = np.sum(r * z, axis=0)
        beta = np.divide(rz_next, rz, out=np.zeros_like(rz), where=rz > 0)
        p, rz = z + beta * p, rz_next
    return x, residual / np.maximum(size, np.finfo(float).tiny)


def laplacian_solve(cells: Cells, h: np.ndarray, prior: float, rhs: np.ndarray, rtol: float = CG_FORCING[1],
                    log: SolveLog | None = None) -> np.ndarray:
    """Solve (L_h + prior I) X = rhs, L_h the Laplacian with edge weights h; rhs columns sum to 0 if prior = 0.

    Dense systems (`dense_is_cheaper`) are solved by Cholesky; sparse ones by Jacobi-preconditioned
    conjugate gradients (`block_cg`) to relative residual `rtol`. A solve that stops short is kept
    (Newton's outer test judges the step) and counted in `log`."""
    n = cells.n
    degree = np.bincount(cells.x, h, minlength=n) + np.bincount(cells.y, h, minlength=n) + prior
    if dense_is_cheaper(n, len(cells.x)):
        return dense_solve(dense_hessian(cells, h, prior), rhs)
    b = rhs - rhs.mean(axis=0) if prior == 0 else rhs
    lap = sp.csr_array((np.r_[-h, -h, degree], (np.r_[cells.x, cells.y, np.arange(n)], np.r_[cells.y, cells.x, np.arange(n)])),
                       shape=(n, n))  # one matrix for every column: assembled once, one pass per product
    out, residual = block_cg(lambda v, columns: lap @ v, np.broadcast_to(degree[:, None], rhs.shape), b, rtol, 10 * n)
    if log is not None:
        log.record(residual, rtol)
    return out - out.mean(axis=0) if prior == 0 else out


def _largest(values: np.ndarray, agents: np.ndarray | None) -> list[int]:
    """The three agents (store ids, or indices without them) with the largest |values|, largest first."""
    top = np.argsort(-np.abs(values), kind="stable")[:3]
    return (top if agents is None else agents[top]).tolist()


def fit(cells: Cells, *, davidson: bool = False, prior: float = 0.0, tol: float = STEP_TOL, max_iter: int = 100,
        start: Fit | None = None, method: str = "m-elo", agents: np.ndarray | None = None,
        solves: SolveLog | None = None) -> Fit:
    """Newton's method on the (penalised) log-likelihood; the caller checks existence when prior = 0.

    `agents[i]` is the store id of agent i of the cells, for error messages; `solves` collects
    conjugate-gradient shortfalls. With ties as half wins on a sparse graph (`dense_is_cheaper`
    says no), compiled (`_compiled_fit`)."""
    if COMPILED and not davidson and not dense_is_cheaper(cells.n, len(cells.x)):
        return _compiled_fit(cells, prior, tol, max_iter, start, method, agents, solves)
    beta = np.zeros(cells.n) if start is None else start.beta.copy()
    log_nu = None
    if davidson:
        log_nu = start.log_nu if start is not None and start.log_nu is not None else 0.0
    current = evaluate(cells, beta, log_nu, prior)
    first_gradient, previous_step = None, np.inf
    step, step_nu, size = np.zeros(cells.n), 0.0, np.inf
    for iteration in range(1, max_iter + 1):
        grad = spread(cells, current.slope) - prior * beta
        gradient_size = float(np.abs(grad).max(initial=0.0))
        first_gradient = first_gradient or gradient_size or 1.0
        rtol = float(forcing(gradient_size / first_gradient, previous_step, tol))
        if current.davidson is None:
            step = laplacian_solve(cells, current.curvature, prior, grad[:, None], rtol, solves)[:, 0]
            step_nu, decrement = 0.0, _dot(grad, step)
        else:
            g_nu, h_nu, h_cross = current.davidson
            u = spread(cells, h_cross)
            solved = laplacian_solve(cells, current.curvature, prior, np.column_stack([grad, u]), rtol, solves)
            step_nu = (g_nu - u @ solved[:, 0]) / (h_nu - u @ solved[:, 1])
            step = solved[:, 0] - solved[:, 1] * step_nu
            decrement = _dot(grad, step) + g_nu * step_nu
        size = max(float(np.abs(step).max(initial=0.0)), abs(step_nu))
        floor = FLOOR * current.magnitude
        at_floor = decrement / 2 <= floor
        trial_nu = None if log_nu is None else log_nu + step_nu
        if size <= tol or (at_floor and size > previous_step / 2):
            beta, log_nu = beta + step, trial_nu
            current = evaluate(cells, beta, log_nu, prior)
            stopped = "converged" if size <= tol else "precision floor"
            return Fit(beta - beta.mean() if prior == 0 else beta, log_nu, iteration, current.log_likelihood, stopped, size)
        t = 1.0
        while True:
            trial_nu = None if log_nu is None else log_nu + t * step_nu
            trial = evaluate(cells, beta + t * step, trial_nu, prior)
            if at_floor or trial.log_likelihood - current.log_likelihood >= ARMIJO * t * decrement:
                break
            t /= 2
            if t < MIN_STEP_SHARE:
                raise no_gain(method, iteration, step, decrement / 2, current.log_likelihood, agents)
        beta, log_nu, current, previous_step = beta + t * step, trial_nu, trial, size
    raise out_of_iterations(method, max_iter, step, tol, agents)


def no_gain(method: str, iteration: int, step: np.ndarray, gain: float, log_likelihood: float,
            agents: np.ndarray | None) -> ConvergenceError:
    size = float(np.abs(step).max(initial=0.0))
    return ConvergenceError(f"{method}: Newton's line search found no gain in the log-likelihood at iteration {iteration} "
                            f"(largest step {size:.3g}, predicted gain {gain:.3g}, log-likelihood {log_likelihood:.6g}); "
                            "agents with the largest steps: {agents}", _largest(step, agents))


def out_of_iterations(method: str, max_iter: int, step: np.ndarray, tol: float, agents: np.ndarray | None) -> ConvergenceError:
    size = float(np.abs(step).max(initial=0.0))
    return ConvergenceError(f"{method}: Newton's method did not converge in {max_iter} iterations (largest step "
                            f"{size:.3g} > tol={tol:g}); agents with the largest steps: {{agents}}", _largest(step, agents))


def _compiled_fit(cells: Cells, prior: float, tol: float, max_iter: int, start: Fit | None, method: str,
                  agents: np.ndarray | None, solves: SolveLog | None) -> Fit:
    """`fit` with ties as half wins on a sparse graph, by the compiled Newton of
    `pipeline.methods.bradley_terry.newton` (the same steps and stopping rules, a few nonlinear
    Jacobi sweeps first, Gauss-Seidel-preconditioned CG; measured 3.7x less CPU on the
    Diplomacy-scale graph than Jacobi CG over arrays), on the agents renumbered by reverse
    Cuthill-McKee (`Banded`, once per fit) so that the substitutions gather from nearby memory;
    the ratings and the steps the messages name come back in the cells' numbering."""
    from pipeline.methods.bradley_terry.newton import Round, effective_wins, newton  # numba is imported on first use only

    banded = Banded.of(cells.n, cells.x, cells.y)
    renumbered = np.zeros(cells.n) if start is None else start.beta[banded.order]
    wx, wy = effective_wins(cells.x_wins, cells.y_wins, cells.ties, banded.cells)
    outcome = newton(Round(banded.x, banded.y, banded.adjacency, wx, wy, prior), renumbered, tol, max_iter, solves)
    if outcome.stopped == "no gain":
        raise no_gain(method, outcome.iterations, banded.in_cells_numbering(outcome.step), outcome.gain, outcome.log_likelihood, agents)
    if outcome.stopped == "iterations":
        raise out_of_iterations(method, max_iter, banded.in_cells_numbering(outcome.step), tol, agents)
    beta = banded.in_cells_numbering(renumbered)
    if prior == 0:
        beta -= beta.mean()
    return Fit(beta, None, outcome.iterations, evaluate(cells, beta, None, prior).log_likelihood, outcome.stopped,
               outcome.last_step)


def fit_or_refuse(cells: Cells, agents: np.ndarray, method: str, hint: str = "prior=0.01 for a small Gaussian prior",
                  **options) -> Fit:
    """`fit`, after refusing with `NoEstimate` (naming the agents, and ending `use <method>:<hint>`) when
    prior = 0 and the MLE does not exist.

    `agents[i]` is the store id of agent i of the cells."""
    if options.get("prior", 0.0) == 0:
        problem = existence_problems(cells, options.get("davidson", False))
        if problem is not None:
            message, local = problem
            raise NoEstimate(f"{method}: the maximum-likelihood ratings do not exist: {message}; use {method}:{hint}",
                             agents[local].tolist())
    return fit(cells, method=method, agents=agents, **options)


def elo_tolerance(tol: float, scale: float) -> float:
    """`tol` natural units in Elo points: scores of fits stopped at steps of `tol` that are closer than
    this are equal within the fits' accuracy, and share a rank (not two ranks by the solver's last digits)."""
    return scale / LN10 * tol


def elo_points(beta: np.ndarray, scale: float, anchor: float) -> np.ndarray:
    """Elo points, rounded to 1e-9: agents with the same record get the same rating (and rank),
    not two ratings that differ in the solver's last bits."""
    return np.round(anchor + scale / LN10 * (beta - beta.mean(axis=-1, keepdims=True)), 9)
