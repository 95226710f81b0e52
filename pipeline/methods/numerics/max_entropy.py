"""Maximum-entropy distributions under linear constraints, certified by their KKT residual.

The problem shared by maximal lotteries (the maximum-entropy maximal lottery), Nash averaging
(the maximum-entropy equilibrium strategy) and the affinity CCE (the CCE of least relative
entropy to a target):

    maximise  -sum_i q_i log(q_i / t_i)  over distributions q,
    subject to  E_eq q = 0  and  E_in q >= 0,

with t a prior (uniform unless given). Its dual is smooth and convex [BV04, section 5.2.4]:

    minimise  phi(y) = log sum_i t_i exp((E^T y)_i)  over y = (lam, mu), mu >= 0,

whose gradient is E q for q = softmax(log t + E^T y). So every dual point gives a q that is
stationary for its multipliers, and mu >= 0 is kept by projection: what remains of the KKT
conditions is primal feasibility and complementary slackness, measured by the natural residual

    r(y) = max( |E_eq q|_inf,  max_k |min(mu_k, (E_in q)_k)| )

in the units of E (callers scale E so that its entries are at most 1 and q sums to 1, which
makes r a relative measure). r bounds how far q is from feasible and how far each multiplier is
from complementary; q is the exact optimum of the problem with right-hand sides moved by r.

Algorithm: projected Newton on the dual [Ber82]. At each step the bound constraints with
mu_k <= r and a positive gradient are held at 0 (the active-set guess), and a Newton step is
taken on the others, on the system H + r d I (H the Hessian E_F (diag q - q q^T) E_F^T, d its
largest diagonal entry): the shift keeps the step defined when the guessed active set makes H
singular or inconsistent, and fades as r -> 0, so convergence is quadratic near the optimum.
A step may change the log-odds between two outcomes by at most `STEP_LIMIT` (Newton overshoots
into the flat region of the softmax otherwise, where the Hessian vanishes and no later step is
defined). The Newton system is solved densely when it is small, by Jacobi-preconditioned conjugate
gradients otherwise (forcing term [EW96]). A step is accepted on an Armijo decrease of phi,
or, when the predicted decrease is below the resolution of phi (near the optimum, where phi
moves by less than an ulp), on a decrease of r. The iteration stops when r <= `target`, when no
step decreases r (the precision floor), or after `max_iter` steps; `Solution.converged` says
whether r <= `accept`, `Solution.stopped` why it stopped. Nothing is judged on an absolute
tolerance near machine precision.

When no distribution satisfies the inequalities strictly (some hold with equality at every
feasible point: the CCE of a 2-player zero-sum game), the dual has no minimiser; the multipliers
of those rows grow without bound and r falls linearly rather than quadratically (hundreds of
steps for 1e-12 on the 59 x 18 LiveBench game), which `MAX_ITER` allows for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.special import logsumexp

TARGET = 1e-12  # residual at which Newton stops: a thousand times the rounding error of E q
ACCEPT = 1e-9  # largest residual certified as converged
MAX_ITER = 500  # Newton steps; quadratic convergence needs tens, problems without a strictly feasible point more
DENSE_ROWS = 2000  # free constraints up to which the Newton system is formed and solved densely
DENSE_WORK = 2e8  # and rows^2 * columns up to which it is
ARMIJO = 1e-4
STEP_LIMIT = 8.0  # largest change of the log-odds of two outcomes in one step (a factor e^8 ~ 3000)
RESOLUTION = 1e-12  # relative size below which a predicted change of phi cannot be observed

Constraints = np.ndarray | sp.sparray | sp.spmatrix | spla.LinearOperator


@dataclass(frozen=True)
class Solution:
    """The distribution, the multipliers (lam, mu), the final residual and the work done."""

    q: np.ndarray
    multipliers: np.ndarray
    residual: float
    iterations: int
    converged: bool
    stopped: str = "target"  # why: "target" reached, "floor" (no step lowers the residual), "iterations"

    def summary(self) -> dict[str, object]:
        """JSON-ready diagnostics for a method's `info`."""
        return {"residual": float(f"{self.residual:.3g}"), "iterations": self.iterations, "converged": self.converged,
                "stopped": self.stopped}


def _rows(matrix: Constraints, n: int) -> int:
    if matrix is None:
        return 0
    if matrix.shape[1] != n:
        raise ValueError(f"constraints have {matrix.shape[1]} columns for {n} outcomes")
    return matrix.shape[0]


def _stack(equal: Constraints | None, inequal: Constraints | None, n: int) -> Constraints:
    parts = [m for m in (equal, inequal) if m is not None and m.shape[0]]
    if not parts:
        return np.zeros((0, n))
    if len(parts) == 1:
        return parts[0]
    if any(isinstance(m, spla.LinearOperator) for m in parts):
        ops = [spla.aslinearoperator(m) for m in parts]
        sizes = np.cumsum([0] + [op.shape[0] for op in ops])
        return spla.LinearOperator(
            (int(sizes[-1]), n), dtype=np.float64,
            matvec=lambda x: np.concatenate([op.matvec(x) for op in ops]),
            rmatvec=lambda y: sum(op.rmatvec(y[a:b]) for op, a, b in zip(ops, sizes[:-1], sizes[1:])))
    if any(sp.issparse(m) for m in parts):
        return sp.vstack([sp.csr_array(m) for m in parts], format="csr")
    return np.vstack(parts)


def maximise(equal: Constraints | None, inequal: Constraints | None, n: int, *, log_prior: np.ndarray | None = None,
             target: float = TARGET, accept: float = ACCEPT, max_iter: int = MAX_ITER) -> Solution:
    """argmax of the entropy relative to the prior, over q with equal @ q = 0 and inequal @ q >= 0.

    `equal` and `inequal` are arrays, sparse matrices or linear operators with n columns (None for
    none); scale them so that their entries are at most 1 (the residual is in their units).
    """
    k_eq, k_in = _rows(equal, n), _rows(inequal, n)
    e = _stack(equal, inequal, n)
    operator = isinstance(e, spla.LinearOperator)
    explicit = None if operator else (sp.csr_array(e) if sp.issparse(e) else np.asarray(e, dtype=np.float64))
    bounded = np.arange(k_eq + k_in) >= k_eq
    base = np.zeros(n) if log_prior is None else np.asarray(log_prior, dtype=np.float64)

    def evaluate(y: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, float]:
        theta = base + (e.rmatvec(y) if operator else explicit.T @ y)
        phi = float(logsumexp(theta))
        q = np.exp(theta - phi)
        g = e.matvec(q) if operator else explicit @ q
        return phi, q, g, float(np.abs(np.where(bounded, np.minimum(y, g), g)).max(initial=0.0))

    y = np.zeros(k_eq + k_in)
    phi, q, g, r = evaluate(y)
    iterations, stopped = 0, "target"
    while r > target:
        if iterations >= max_iter:
            stopped = "iterations"
            break
        held = bounded & (y <= r) & (g > 0)
        step = np.where(held, -y, 0.0)
        free = np.flatnonzero(~held)
        step[free] = _newton_step(e if operator else explicit, free, q, g[free], r)
        spread = float(np.ptp(e.rmatvec(step) if operator else explicit.T @ step))
        if spread > STEP_LIMIT:  # far from the optimum, where H is nearly singular, Newton overshoots
            step *= STEP_LIMIT / spread
        alpha, moved = 1.0, False
        while alpha >= 1e-10:
            trial = y + alpha * step
            trial[bounded] = np.maximum(trial[bounded], 0.0)
            phi_t, q_t, g_t, r_t = evaluate(trial)
            predicted = float(g @ (trial - y))
            if abs(predicted) < RESOLUTION * max(1.0, abs(phi)):
                moved = r_t < r  # phi cannot see this step: judge it by the residual
            else:
                moved = phi_t <= phi + ARMIJO * predicted
            if moved:
                break
            alpha /= 2
        iterations += 1
        if not moved:
            stopped = "floor"  # the precision floor: no step lowers phi or the residual
            break
        y, phi, q, g, r = trial, phi_t, q_t, g_t, r_t
    return Solution(q, y, r, iterations, r <= accept, stopped)


def _newton_step(e: Constraints, free: np.ndarray, q: np.ndarray, grad: np.ndarray, r: float) -> np.ndarray:
    """Solve (H_FF + shift I) d = -grad on the free rows F, H = E (diag q - q q^T) E^T."""
    if isinstance(e, spla.LinearOperator):
        pick = np.zeros(e.shape[0])

        def multiply(v: np.ndarray) -> np.ndarray:
            pick[free] = v
            t = e.rmatvec(pick)
            pick[free] = 0.0
            return e.matvec(q * t)[free] - grad * (q @ t)

        return _conjugate_gradients(multiply, grad, r, None)
    ef = e[free]
    if len(free) <= DENSE_ROWS and len(free) ** 2 * e.shape[1] <= DENSE_WORK:
        a = (ef.toarray() if sp.issparse(ef) else ef) * np.sqrt(q)
        h = a @ a.T - np.outer(grad, grad)
        h[np.diag_indices_from(h)] += r * max(float(h.diagonal().max(initial=0.0)), np.finfo(float).tiny)
        return np.linalg.solve(h, -grad)
    eft = ef.T
    diagonal = ((ef.multiply(ef)) @ q if sp.issparse(ef) else (ef * ef) @ q) - grad**2
    return _conjugate_gradients(lambda v: ef @ (q * (eft @ v)) - grad * (q @ (eft @ v)), grad, r, diagonal)


def _conjugate_gradients(multiply, grad: np.ndarray, r: float, diagonal: np.ndarray | None) -> np.ndarray:
    k = len(grad)
    if diagonal is None:  # scale of H from one product, for the shift
        probe = multiply(np.ones(k) / np.sqrt(max(k, 1)))
        top = float(np.abs(probe).max(initial=0.0))
    else:
        top = float(diagonal.max(initial=0.0))
    shift = r * max(top, np.finfo(float).tiny)
    operator = spla.LinearOperator((k, k), matvec=lambda v: multiply(v) + shift * v, dtype=np.float64)
    preconditioner = None
    if diagonal is not None:
        scale = np.maximum(diagonal, 0.0) + shift
        preconditioner = spla.LinearOperator((k, k), matvec=lambda v: v / scale, dtype=np.float64)
    step, _ = spla.cg(operator, -grad, rtol=min(0.1, np.sqrt(r)), maxiter=max(50, min(k, 1000)), M=preconditioner)
    return step
