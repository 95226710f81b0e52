"""Pairwise counts per annotator (the `judge` of a battle): the input of am-Elo [AmElo, 4.2].

One cell per (annotator, unordered pair x < y) that has votes: the weight of votes for x, for
y, and of ties. Battles without a judge are counted under one pseudo-annotator (store id -1,
`NO_JUDGE`). Cells are summed as integer units with sorted keys, so merges are exact and
order-free. Annotators are judge ids; `pipeline.report` names them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import sort_positions, sum_by_key
from pipeline.logs import log_kind
from pipeline.logs.orders import A_WINS, B_WINS, TIE
from pipeline.stats.encoding import Arrays, scalar
from pipeline.stats.extras import Extra, register_extra
from pipeline.weights import UNIT, to_units

NO_JUDGE = -1


@dataclass(frozen=True, eq=False)
class AnnotatorCounts:
    """Cells (annotator `judge`, agents `x` < `y`) with weights `x_wins`, `y_wins`, `ties`.

    `judge` indexes `judges` (store ids in the judges dictionary, -1 for battles without one);
    `judge_keys[k]` is annotator k's position in name order (battles without a judge first), so
    that a fit can visit annotators in an order that does not depend on store ids; x and y are
    local agent indices.
    """

    agents: np.ndarray
    judges: np.ndarray
    judge: np.ndarray
    x: np.ndarray
    y: np.ndarray
    x_wins: np.ndarray
    y_wins: np.ndarray
    ties: np.ndarray
    judge_keys: np.ndarray | None = None  # None: the judges' ids are in name order

    def __post_init__(self) -> None:
        if self.judge_keys is None:
            object.__setattr__(self, "judge_keys", np.arange(len(self.judges), dtype=np.int64))
        if not np.array_equal(np.sort(self.judge_keys), np.arange(len(self.judges))):
            raise ValueError("judge_keys must be a permutation of 0..m-1, one per annotator")
        m = len(self.judge)
        if any(len(v) != m for v in (self.x, self.y, self.x_wins, self.y_wins, self.ties)):
            raise ValueError("one value per cell in every column")
        if np.any(self.x >= self.y):
            raise ValueError("cells must have x < y")
        if any(np.any(v < 0) for v in (self.x_wins, self.y_wins, self.ties)):
            raise ValueError("weights must be non-negative")

    @property
    def records(self) -> np.ndarray:
        """Total weight of the votes of each annotator."""
        return np.bincount(self.judge, self.x_wins + self.y_wins + self.ties, minlength=len(self.judges))

    def select(self, keep: np.ndarray) -> AnnotatorCounts:
        """The cells of the annotators whose index is in `keep` (increasing), re-indexed."""
        keep = np.asarray(keep, dtype=np.int64)
        new = np.full(len(self.judges), -1, np.int64)
        new[keep] = np.arange(len(keep))
        rows = new[self.judge] >= 0
        return AnnotatorCounts(self.agents, self.judges[keep], new[self.judge][rows], self.x[rows], self.y[rows],
                               self.x_wins[rows], self.y_wins[rows], self.ties[rows], sort_positions(self.judge_keys[keep]))

    def replace(self, x_wins: np.ndarray, y_wins: np.ndarray, ties: np.ndarray) -> AnnotatorCounts:
        return AnnotatorCounts(self.agents, self.judges, self.judge, self.x, self.y, x_wins, y_wins, ties, self.judge_keys)


@dataclass
class _Cells:
    n: int
    keys: np.ndarray  # ((judge + 1) * n + x) * n + y, sorted, distinct
    values: np.ndarray  # units: x wins, y wins, ties

    def __add__(self, other: _Cells) -> _Cells:
        keys, values = sum_by_key(np.concatenate([self.keys, other.keys]), np.concatenate([self.values, other.values]))
        return _Cells(self.n, keys, values)

    def resized(self, n: int) -> _Cells:
        """The same cells keyed in an id space of size n (the key order, judge then x then y, is kept)."""
        old = np.int64(self.n)
        judge_slot, x, y = self.keys // (old * old), self.keys // old % old, self.keys % old
        return _Cells(n, (judge_slot * n + x) * n + y, self.values)

    def to_arrays(self) -> Arrays:
        return {"n": scalar(self.n), "keys": self.keys, "values": self.values}

    @classmethod
    def from_arrays(cls, arrays: Arrays) -> _Cells:
        if arrays["values"].shape != (len(arrays["keys"]), 3):
            raise ValueError("three unit counts per annotator cell")
        return cls(int(arrays["n"]), arrays["keys"], arrays["values"])


def _partial(table: pa.Table, kind: str, n: int) -> _Cells:
    judges = pc.fill_null(table.column("judge"), NO_JUDGE).to_numpy().astype(np.int64)
    if len(judges) and (int(judges.max()) + 2) * n * n >= 2**63:
        raise ValueError("too many annotators x agents^2 for int64 cell keys")
    rows = log_kind(kind).comparisons(table)
    x, y = np.minimum(rows.a, rows.b), np.maximum(rows.a, rows.b)
    x_won = np.where(rows.a < rows.b, rows.outcome == A_WINS, rows.outcome == B_WINS)
    values = np.zeros((len(rows), 3), np.int64)
    column = np.where(rows.outcome == TIE, 2, np.where(x_won, 0, 1))
    values[np.arange(len(rows)), column] = to_units(rows.weights)
    keys, values = sum_by_key(((judges + 1) * n + x) * n + y, values)
    return _Cells(n, keys, values)


def _finalize(cells: _Cells, present: np.ndarray, name_orders: Mapping[str, np.ndarray]) -> AnnotatorCounts:
    n = np.int64(cells.n)
    judge, x, y = cells.keys // (n * n) - 1, cells.keys // n % n, cells.keys % n
    judges, index = np.unique(judge, return_inverse=True)
    v = cells.values / UNIT
    named = judges >= 0
    by_name = np.full(len(judges), -1, np.int64)  # battles without a judge come first
    by_name[named] = np.asarray(name_orders["judges"])[judges[named]]
    return AnnotatorCounts(present, judges, index.ravel().astype(np.int64), np.searchsorted(present, x),
                           np.searchsorted(present, y), v[:, 0].copy(), v[:, 1].copy(), v[:, 2].copy(),
                           sort_positions(by_name))


ANNOTATORS = register_extra(Extra(
    "annotators", {"battles": ("judge",)}, _partial, lambda p, q: p + q, _finalize, _Cells.to_arrays, _Cells.from_arrays,
    resize=_Cells.resized,
))
