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


def stable_order(keys: np.ndarray, bound: int, items: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`items` (default 0, 1, ...) in the order of their `keys`, integers in [0, bound), those with equal keys in
    the order given; and where each key's run starts (`bound` + 1 entries). A counting sort, O(len + bound):
    scipy converts a matrix with one entry per row (`items[t]` at row t, column `keys[t]`) to column-major
    order, whose rows come out increasing within each column (`has_sorted_indices`). np.lexsort's two passes
    (O(m log m)) cost most of `Banded.of` at 648k cells (0.32 of 0.39 s)."""
    from scipy.sparse import csr_array

    items = np.arange(len(keys)) if items is None else items
    index = np.int32 if max(len(keys), bound) < 2**31 else np.int64  # scipy's own choice, made before it copies
    by_key = csr_array((items, keys.astype(index), np.arange(len(keys) + 1, dtype=index)), shape=(len(keys), bound)).tocsc()
    return by_key.data, by_key.indptr.astype(np.int64)


@dataclass(frozen=True, eq=False)
class Adjacency:
    """Each agent's cells and opponents, agent by agent (CSR), opponents in increasing order: row i
    lists the cells `cell[start[i]:start[i + 1]]` of agent i and their other agent `other[...]`,
    those with a lower agent before `split[i]`, those with a higher one from there: the lower and
    upper triangles of the Laplacian, for Gauss-Seidel sweeps (`pipeline.methods.bradley_terry.newton`).
    A pair in several cells lists them where agent i is the cell's x first, then where it is the cell's y,
    each in the cells' order."""

    start: np.ndarray
    split: np.ndarray
    cell: np.ndarray
    other: np.ndarray

    @classmethod
    def of(cls, n: int, x: np.ndarray, y: np.ndarray) -> Adjacency:
        """The adjacency of n agents compared in cells (x[c], y[c]), x[c] != y[c]."""
        m = len(x)
        rows, others = np.r_[x, y], np.r_[y, x]
        entries, _ = stable_order(others, n)
        cell, start = stable_order(rows[entries], n, entries % m)
        return cls.from_rows(n, start, cell, x, y)

    @classmethod
    def from_rows(cls, n: int, start: np.ndarray, cell: np.ndarray, x: np.ndarray, y: np.ndarray) -> Adjacency:
        """The adjacency whose row i lists the cells `cell[start[i]:start[i + 1]]` of cells (x[c], y[c])."""
        row = np.repeat(np.arange(n), np.diff(start))
        other = (x.astype(np.int64) + y)[cell] - row  # the cell's agent that is not the row's
        split = start[:-1] + np.bincount(np.maximum(x, y), minlength=n)  # agent i is the higher one of its lower opponents' cells
        index = np.int32 if 2 * len(x) < 2**31 else np.int64  # int32: measured 15% faster substitutions at 648k cells
        return cls(start, split, cell.astype(index), other.astype(index))


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
    and `x[k]`, `y[k]` are its agents in the new numbers.

    Built in time linear in the cells and agents (counting sorts, `stable_order`): the sorted cells are
    already the upper triangle of the adjacency, row by row, so one more pass puts every agent's lower
    opponents before them (Diplomacy-scale: 0.10 s against 0.31-0.39 s with np.lexsort; see the design notes)."""

    order: np.ndarray
    cells: np.ndarray
    x: np.ndarray
    y: np.ndarray
    adjacency: Adjacency

    @classmethod
    def of(cls, n: int, x: np.ndarray, y: np.ndarray) -> Banded:
        from scipy.sparse import coo_array
        from scipy.sparse.csgraph import reverse_cuthill_mckee

        m = len(x)
        pattern = coo_array((np.ones(2 * m, dtype=bool), (np.r_[x, y], np.r_[y, x])), shape=(n, n)).tocsr()
        order = reverse_cuthill_mckee(pattern, symmetric_mode=True).astype(np.int64)
        number = np.empty(n, dtype=np.int64)
        number[order] = np.arange(n)
        x, y = number[x], number[y]
        cells, _ = stable_order(np.maximum(x, y), n)
        cells, _ = stable_order(np.minimum(x, y)[cells], n, cells)
        x, y = x[cells], y[cells]
        lower, higher, x_first = np.minimum(x, y), np.maximum(x, y), x < y
        below, above = cls.pair_runs(lower, higher, x_first)
        # agent i's lower opponents, each pair's cells where i is x first (the adjacency's order), then its higher ones
        cell, start = stable_order(np.r_[higher[below], lower[above]], n, np.r_[below, above])
        return cls(order, cells, x, y, Adjacency.from_rows(n, start, cell, x, y))

    @staticmethod
    def pair_runs(lower: np.ndarray, higher: np.ndarray, x_first: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The sorted cells in the order the adjacency lists them under their higher agent (`below`) and their
        lower one (`above`): a pair in several cells lists those whose x is the row's agent first, so under
        the lower agent the cells with x < y come first, under the higher one those with x > y. Pairs in
        one cell each (`Cells` sums them) keep the cells' order."""
        repeats = (lower[1:] == lower[:-1]) & (higher[1:] == higher[:-1])
        if not repeats.any():
            return np.arange(len(lower)), np.arange(len(lower))
        pair = 2 * np.r_[0, np.cumsum(~repeats)]
        below, _ = stable_order(pair + x_first, 2 * len(lower))
        above, _ = stable_order(pair + ~x_first, 2 * len(lower))
        return below, above

    def in_cells_numbering(self, values: np.ndarray) -> np.ndarray:
        """Per-agent values in this numbering, put back in the cells' numbering (the inverse of `values[order]`)."""
        out = np.empty_like(values)
        out[self.order] = values
        return out
