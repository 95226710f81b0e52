"""The design of a battle-level covariate fit: distinct battles (a, b, outcome, features) with summed weights.

Style control [ArenaStyle] fits Bradley-Terry with covariates that differ from battle to battle
(the lengths of the two answers, their markdown counts), so its likelihood is not a function of
the pair cells. Its exact sufficient statistic is the design: one row per distinct (model_a,
model_b, outcome, feature values of side a, of side b), with the weight of the battles that
share it. Rows are keyed by those values (features by the bits of their float64 value, missing
ones as NaN) and merged by key with integer weight units, so the merge is exact and the result
is the same whatever the partitioning. Battles without features (files without feature columns,
stores written before features existed) collapse to one row per (a, b, outcome): the pair cells.

Feature names are the union over the partials, sorted; a battle lacks the features its file did
not give (NaN), and a method that needs one refuses rather than guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.logs import log_kind
from pipeline.stats.encoding import Arrays
from pipeline.stats.extras import Extra, register_extra, same_ids
from pipeline.weights import UNIT, to_units

FIXED = 3  # key columns before the features: a, b, outcome
NAME_SEPARATOR = "\x1f"  # feature names are [a-z0-9_]: never this


@dataclass(frozen=True, eq=False)
class BattleFeatures:
    """Distinct battles: local agents `a`, `b` (indices into `agents`, store ids), `outcome` (A_WINS,
    B_WINS, TIE of `pipeline.logs.orders`), summed `weight`, and the values of each feature in
    `names` for side a (`side_a[:, j]`) and side b (`side_b[:, j]`), NaN where a battle lacks it."""

    agents: np.ndarray
    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    weight: np.ndarray
    names: tuple[str, ...]
    side_a: np.ndarray
    side_b: np.ndarray

    def __len__(self) -> int:
        return len(self.a)


@dataclass
class Design:
    """A partial: sorted distinct key rows (a, b, outcome, then the bits of side a's and side b's
    values of each feature in `names`) and their weight units."""

    names: tuple[str, ...]
    keys: np.ndarray  # int64, (rows, FIXED + 2 * len(names))
    units: np.ndarray  # int64, (rows,)

    def widened(self, names: tuple[str, ...]) -> Design:
        """The same rows over `names` (a superset, sorted), NaN for the features this partial lacks."""
        if names == self.names:
            return self
        keys = np.full((len(self.keys), FIXED + 2 * len(names)), missing_bits(), np.int64)
        keys[:, :FIXED] = self.keys[:, :FIXED]
        where = np.searchsorted(names, self.names)
        f = len(self.names)
        keys[:, FIXED + where] = self.keys[:, FIXED: FIXED + f]
        keys[:, FIXED + len(names) + where] = self.keys[:, FIXED + f:]
        return Design(names, keys, self.units)

    def __add__(self, other: Design) -> Design:
        names = tuple(sorted(set(self.names) | set(other.names)))
        return summed(names, np.concatenate([self.widened(names).keys, other.widened(names).keys]),
                      np.concatenate([self.units, other.units]))

    def to_arrays(self) -> Arrays:
        return {"names": np.frombuffer(NAME_SEPARATOR.join(self.names).encode(), np.uint8), "keys": self.keys,
                "units": self.units}

    @classmethod
    def from_arrays(cls, arrays: Arrays) -> Design:
        text = arrays["names"].tobytes().decode()
        names = tuple(text.split(NAME_SEPARATOR)) if text else ()
        keys, units = arrays["keys"], arrays["units"]
        if keys.shape != (len(units), FIXED + 2 * len(names)):
            raise ValueError(f"design keys of shape {keys.shape} for {len(units)} rows and {len(names)} features")
        return cls(names, keys, units)


def missing_bits() -> np.int64:
    return np.array([np.nan]).view(np.int64)[0]


def value_bits(values: np.ndarray) -> np.ndarray:
    """float64 values as int64 keys: -0.0 as 0.0 and every NaN as one NaN, so equal values share a key."""
    values = np.asarray(values, dtype=np.float64) + 0.0
    return np.where(np.isnan(values), np.nan, values).view(np.int64)


def summed(names: tuple[str, ...], keys: np.ndarray, units: np.ndarray) -> Design:
    """Distinct key rows, sorted, with their units summed exactly."""
    if not len(keys):
        return Design(names, keys.reshape(0, FIXED + 2 * len(names)).astype(np.int64), units.astype(np.int64))
    distinct, inverse = np.unique(keys, axis=0, return_inverse=True)
    order = np.argsort(inverse.ravel(), kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(inverse.ravel()[order]) != 0])
    return Design(names, distinct, np.add.reduceat(units[order], starts))


def _feature_values(table: pa.Table) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """Feature names and per-row values of sides a and b (NaN where a row lacks a feature)."""
    rows = table.num_rows
    if "features" not in table.column_names:
        return (), np.empty((rows, 0)), np.empty((rows, 0))
    column = table.column("features").combine_chunks()
    lengths = pc.fill_null(pc.list_value_length(column), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    flat = pc.list_flatten(column)
    entry_names = flat.field("name").to_numpy(zero_copy_only=False).astype(str)
    names = tuple(sorted(set(entry_names.tolist())))
    a, b = np.full((rows, len(names)), np.nan), np.full((rows, len(names)), np.nan)
    row = np.repeat(np.arange(rows), lengths)
    slot = np.searchsorted(names, entry_names)
    a[row, slot] = flat.field("a").to_numpy(zero_copy_only=False)
    b[row, slot] = flat.field("b").to_numpy(zero_copy_only=False)
    return names, a, b


def _partial(table: pa.Table, kind: str, n: int) -> Design:
    rows = log_kind(kind).comparisons(table)
    names, side_a, side_b = _feature_values(table)
    keys = np.column_stack([rows.a.astype(np.int64), rows.b.astype(np.int64), rows.outcome.astype(np.int64),
                            value_bits(side_a), value_bits(side_b)])
    return summed(names, keys, to_units(rows.weights))


def _finalize(design: Design, present: np.ndarray, name_orders: Mapping[str, np.ndarray]) -> BattleFeatures:
    f = len(design.names)
    keys = design.keys
    kept = design.units > 0
    keys, units = keys[kept], design.units[kept]
    values = np.ascontiguousarray(keys[:, FIXED:]).view(np.float64)
    return BattleFeatures(present, np.searchsorted(present, keys[:, 0]), np.searchsorted(present, keys[:, 1]),
                          keys[:, 2].astype(np.int8), units / UNIT, design.names, values[:, :f].copy(), values[:, f:].copy())


BATTLE_FEATURES = register_extra(Extra(
    "battle_features", {"battles": ("features",)}, _partial, lambda p, q: p + q, _finalize, Design.to_arrays, Design.from_arrays,
    resize=same_ids,  # key rows hold store ids
))
