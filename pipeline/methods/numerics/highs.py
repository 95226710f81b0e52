"""One way to solve a linear or mixed-integer program with HiGHS [HiGHS].

Every LP and MIP of the rating methods goes through `solve`, with one policy:
- **One thread, fixed seed.** HiGHS's parallel simplex, IPM and branch and bound may take other
  paths with other thread counts; a rating must not depend on the machine, so the solver runs
  on one thread (parallelism comes from Dask, across boards and methods) with its default seed.
- **One error policy.** A status other than optimal raises a one-line `RatingError` naming the
  model and the status: `Infeasible` and `Unbounded` for those verdicts (they mean the model was
  built wrong or the data break an assumption the model relies on), `ConvergenceError` for a
  limit or a solver failure. Statuses a caller expects (a MIP proving that nothing beats a bound)
  are listed in `allow` and come back in `Solution.status` instead of raising.
- **One retry.** When the simplex method of an LP ends in an error or an undecided status (HiGHS
  1.15's dual simplex does on some dense antisymmetric games of a few hundred agents), the LP is
  solved once more by the interior-point method with crossover; `Solution.retried` keeps the
  first status, for the method's `info`.
- **Stoppable.** The solve runs on a helper thread (`pipeline.cancellation.run_native`) so SIGTERM
  reaches the caller at once, and HiGHS's interrupt callbacks end it once the run is being stopped.
- **One input form.** min cost @ x subject to row_lower <= A x <= row_upper and
  col_lower <= x <= col_upper, with A a dense array or any scipy sparse matrix (passed to HiGHS
  column-wise, no densifying), bounds as arrays with +-inf for free sides, and `integer` marking
  the integer columns of a MIP.

Usage: `solve("maximal-lotteries essential set", cost, a, rl, ru, cl, cu).x`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import highspy
import numpy as np
import scipy.sparse as sp

from pipeline.cancellation import STOP, raise_if_stopped, run_native
from pipeline.methods.convergence import ConvergenceError, RatingError

INF = highspy.kHighsInf
OPTIMAL = "optimal"
INFEASIBLE = "infeasible"
UNBOUNDED = "unbounded"
OBJECTIVE_BOUND = "objective bound"
TIME_LIMIT = "time limit reached"  # an allowed status when the caller sets the `time_limit` option

_STATUS = {
    highspy.HighsModelStatus.kOptimal: OPTIMAL,
    highspy.HighsModelStatus.kInfeasible: INFEASIBLE,
    highspy.HighsModelStatus.kUnbounded: UNBOUNDED,
    highspy.HighsModelStatus.kUnboundedOrInfeasible: "unbounded or infeasible",
    highspy.HighsModelStatus.kObjectiveBound: OBJECTIVE_BOUND,
}
_DECIDED = (OPTIMAL, INFEASIBLE, UNBOUNDED, OBJECTIVE_BOUND)
FIXED_OPTIONS = ("threads", "random_seed", "output_flag")


class Infeasible(RatingError):
    """HiGHS proved the program has no feasible point."""


class Unbounded(RatingError):
    """HiGHS proved the objective unbounded (or could not tell unbounded from infeasible)."""


@dataclass(frozen=True)
class Solution:
    """x (column values), row duals and the objective; empty arrays when `status` is not optimal."""

    x: np.ndarray
    row_duals: np.ndarray
    objective: float
    status: str
    retried: str | None = None  # the status of a first, failed simplex run
    bound: float = float("nan")  # a MIP's dual bound (a MIP stopped by an allowed limit: with `objective`, its incumbent's)


def solve(model: str, cost: np.ndarray, matrix: np.ndarray | sp.sparray | sp.spmatrix,
          row_lower: np.ndarray, row_upper: np.ndarray, col_lower: np.ndarray, col_upper: np.ndarray, *,
          integer: np.ndarray | None = None, options: Mapping[str, object] | None = None,
          allow: Iterable[str] = ()) -> Solution:
    """Minimise cost @ x subject to row and column bounds; `model` names the program in errors.

    `integer` is a boolean mask of integer columns (a MIP); `options` are further HiGHS options
    (e.g. {"solver": "ipm", "run_crossover": "off"}, {"mip_rel_gap": 0.0}); the thread count,
    seed and output are fixed here and cannot be overridden.
    """
    if fixed := set(options or {}) & set(FIXED_OPTIONS):
        raise ValueError(f"{model}: HiGHS options {sorted(fixed)} are fixed by pipeline.methods.numerics.highs")
    a = sp.csc_array(matrix, dtype=np.float64)
    a.sum_duplicates()
    lp = highspy.HighsLp()
    lp.num_row_, lp.num_col_ = a.shape
    lp.col_cost_ = np.asarray(cost, dtype=np.float64)
    lp.col_lower_, lp.col_upper_ = np.asarray(col_lower, dtype=np.float64), np.asarray(col_upper, dtype=np.float64)
    lp.row_lower_, lp.row_upper_ = np.asarray(row_lower, dtype=np.float64), np.asarray(row_upper, dtype=np.float64)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = a.indptr, a.indices, a.data
    if integer is not None and np.any(integer):
        lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                           for i in np.asarray(integer, dtype=bool)]
    status, h = _run(lp, options or {})
    retried = None
    if status not in _DECIDED and integer is None and "solver" not in (options or {}):
        retried, (status, h) = status, _run(lp, {**(options or {}), "solver": "ipm"})
    if status == OPTIMAL and lp.num_col_ == 0:
        return Solution(np.zeros(0), np.zeros(a.shape[0]), 0.0, OPTIMAL, retried)
    if status == OPTIMAL:
        solution = h.getSolution()
        return Solution(np.asarray(solution.col_value), np.asarray(solution.row_dual),
                        float(h.getInfo().objective_function_value), OPTIMAL, retried)
    if status in set(allow):
        info = h.getInfo()
        incumbent = float(info.objective_function_value) if info.mip_gap < INF else float("nan")
        return Solution(np.zeros(0), np.zeros(0), incumbent, status, retried, bound=float(info.mip_dual_bound))
    message = (f"{model}: HiGHS stopped with status '{status}' ({a.shape[0]} rows, {a.shape[1]} columns"
               + (f"; the simplex run before had ended '{retried}')" if retried else ")"))
    if status == INFEASIBLE:
        raise Infeasible(message)
    if status in (UNBOUNDED, "unbounded or infeasible"):
        raise Unbounded(message)
    raise ConvergenceError(message)


def _run(lp: highspy.HighsLp, options: Mapping[str, object]) -> tuple[str, highspy.Highs]:
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("random_seed", 0)
    for key, value in options.items():
        h.setOptionValue(key, value)
    for interrupt in (h.cbSimplexInterrupt, h.cbIpmInterrupt, h.cbMipInterrupt):
        interrupt.subscribe(_interrupt_when_stopped)
    h.passModel(lp)
    run_native(h.run, "vase-highs")
    raise_if_stopped()  # a solve cut short by a stop is no verdict
    raw = h.getModelStatus()
    if raw == highspy.HighsModelStatus.kModelEmpty:  # no columns: the empty point is optimal
        return OPTIMAL, h
    return _STATUS.get(raw, h.modelStatusToString(raw).lower()), h


def _interrupt_when_stopped(event: highspy.HighsCallbackEvent) -> None:
    """HiGHS's interrupt callbacks (simplex, IPM, branch and bound): stop the solve once the run is being stopped."""
    if STOP.is_set():
        event.interrupt()
