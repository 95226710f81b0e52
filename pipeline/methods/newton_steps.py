"""The step control shared by the Newton fits of the Bradley-Terry family (`bradley_terry.fit`,
its compiled sparse path `bradley_terry_newton`, am-Elo and style control), and the layout of a
sparse Hessian those steps solve on.

A step is accepted when it gains at least `ARMIJO` of its predicted gain (Armijo), a fit stops
at the precision floor `FLOOR`, and the line search gives up below `MIN_STEP_SHARE` of the Newton
step; an inexact Newton system is solved to the relative residual `forcing` gives [EW96].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FLOOR = 1e-12  # relative size of a gain the log-likelihood, a sum of many terms, can still resolve
ARMIJO = 1e-4  # share of the predicted gain a step must achieve
MIN_STEP_SHARE = 2.0**-30  # the line search gives up below this share of the Newton step
CG_FORCING = (1e-1, 1e-9)  # loosest and tightest relative residual of the inexact Newton solves
STEP_ACCURACY = 1e-2  # a Newton step is solved no closer than to an error of about this share of `tol`


@dataclass
class SolveLog:
    """Conjugate-gradient solves that stopped short of their relative residual (sparse systems)."""

    shortfalls: int = 0
    worst_residual: float = 0.0

    def record(self, reached: np.ndarray | float, rtol: np.ndarray | float) -> None:
        """Count the solves whose relative residual `reached` is above the `rtol` asked of them."""
        short = np.asarray(reached) > rtol
        if short.any():
            self.shortfalls += int(short.sum())
            self.worst_residual = max(self.worst_residual, float(np.max(reached)))


def forcing(gradient_share, previous_step, tol: float):
    """Relative residual of an inexact Newton solve [EW96], per system: loose while the gradient is a large
    share of the first one (the step is far from the answer anyway), tightening as it shrinks, but never
    tighter than the step needs. For a step about `previous_step` long (the previous step's size, or
    the compiled Newton's `predicted_step`), a residual of STEP_ACCURACY * tol / previous_step leaves
    an error of about STEP_ACCURACY * tol in the step, so the last, confirming step (~1e-12 long) is
    not solved to 1e-9 (30 CG products on the WTA-like graph) only to move the ratings by nothing.
    Between CG_FORCING's bounds: never at machine precision."""
    needed = STEP_ACCURACY * tol / np.asarray(previous_step, dtype=float)
    return np.clip(np.maximum(gradient_share, needed), CG_FORCING[1], CG_FORCING[0])


def predicted_step(previous: float, before: float) -> float:
    """The size of the next Newton step from the last two: Newton's error squares from step to step, so
    once a step has at least halved, the next is about previous^3 / before^2; else the previous one."""
    if not (np.isfinite(before) and previous <= before / 2):
        return previous
    return previous * (previous / before) ** 2


@dataclass(frozen=True, eq=False)
class Adjacency:
    """Each agent's cells and opponents, agent by agent (CSR), opponents in increasing order: row i
    lists the cells `cell[start[i]:start[i + 1]]` of agent i and their other agent `other[...]`,
    those with a lower agent before `split[i]`, those with a higher one from there: the lower and
    upper triangles of the Laplacian, for Gauss-Seidel sweeps (`pipeline.methods.bradley_terry_newton`)."""

    start: np.ndarray
    split: np.ndarray
    cell: np.ndarray
    other: np.ndarray

    @classmethod
    def of(cls, n: int, x: np.ndarray, y: np.ndarray) -> Adjacency:
        """The adjacency of n agents compared in cells (x[c], y[c]), x[c] != y[c]."""
        m = len(x)
        rows, others = np.r_[x, y], np.r_[y, x]
        order = np.lexsort((others, rows))
        start = np.r_[0, np.cumsum(np.bincount(rows, minlength=n))].astype(np.int64)
        split = start[:-1] + np.bincount(np.maximum(x, y), minlength=n)  # agent i is the higher one of its lower opponents' cells
        index = np.int32 if 2 * m < 2**31 else np.int64  # int32: measured 15% faster substitutions at 648k cells
        return cls(start, split.astype(np.int64), np.r_[np.arange(m), np.arange(m)][order].astype(index),
                   others[order].astype(index))


@dataclass(frozen=True, eq=False)
class Banded:
    """The cells' agents renumbered by reverse Cuthill-McKee [CM69] (scipy's), the cells put in the order
    of their agents' new numbers, and their adjacency.

    A log in time (the Diplomacy-scale one) has agents whose opponents are scattered over all
    ids; renumbered, each agent's opponents sit near it, so the substitutions and the passes over
    the cells gather from nearby memory (Diplomacy-scale: rounds 1.2x faster, the same CG
    iterations). Sorting the cells by their lower, then higher agent makes the passes over the cells
    walk the agents in order and the Hessian's entries gather from nearby cells (Diplomacy-scale: rounds
    1.25x faster again). The order comes from the graph alone, so it is the same on every worker.
    `order[j]` is the agent numbered j; `cells[k]` is the cell taken k-th (its weights are `w[cells]`),
    and `x[k]`, `y[k]` are its agents in the new numbers."""

    order: np.ndarray
    cells: np.ndarray
    x: np.ndarray
    y: np.ndarray
    adjacency: Adjacency

    @classmethod
    def of(cls, n: int, x: np.ndarray, y: np.ndarray) -> Banded:
        from scipy.sparse import csr_array
        from scipy.sparse.csgraph import reverse_cuthill_mckee

        pattern = csr_array((np.ones(2 * len(x)), (np.r_[x, y], np.r_[y, x])), shape=(n, n))
        order = reverse_cuthill_mckee(pattern, symmetric_mode=True).astype(np.int64)
        number = np.empty(n, dtype=np.int64)
        number[order] = np.arange(n)
        x, y = number[x], number[y]
        cells = np.lexsort((np.maximum(x, y), np.minimum(x, y)))
        x, y = x[cells], y[cells]
        return cls(order, cells, x, y, Adjacency.of(n, x, y))

    def in_cells_numbering(self, values: np.ndarray) -> np.ndarray:
        """Per-agent values in this numbering, put back in the cells' numbering (the inverse of `values[order]`)."""
        out = np.empty_like(values)
        out[self.order] = values
        return out
