"""The weight grid: every stored weight is a multiple of 2^-24, so sums of weights are exact.

Ingest puts weights on the grid (`quantize_expr`) and quarantines a weight above `MAX_WEIGHT`;
the reductions count them as int64 *units* (`to_units`), so that a sum is the same whatever the
partitioning or the order of the merge (see `pipeline.stats.partials`); in-memory paths quantise
the same way (`quantize`). Rounding is half to even in both numpy and polars.

The bound: one record weighs at most `MAX_WEIGHT` = 2^38 (about 2.7e11: a log's weights scaled by
1e11 still ingest), and one count (a pair cell, a position, a distinct ballot) sums to at most
`MAX_TOTAL` = 2^39 (about 5.5e11) weight, which is 2^63 units. Within the bound every sum is an exact integer (`sum_units`, `add_units`);
beyond it, a reduction stops with `WeightOverflow` rather than wrap around. Statistics hand the
sums on as float64 weights, exact below 2^53 units (about 5.4e8 weight) and otherwise rounded
once, from the same integer, whatever the partitioning.
"""

from __future__ import annotations

import numpy as np
import polars as pl

UNIT = 2.0**24  # units per unit of weight
MAX_WEIGHT = 2.0**38  # the largest weight of one record: 2^62 units
MAX_TOTAL = 2.0**39  # the largest total weight of one count: 2^63 units
_LOW_BITS = 26  # units split as high * 2^26 + low, each summed exactly in float64
_BLOCK = 1 << 24  # rows summed per float64 bincount at most (low parts: 2^24 * 2^26 < 2^53)


class WeightOverflow(OverflowError):
    def __init__(self) -> None:
        super().__init__(f"a count's total weight exceeds {MAX_TOTAL:.4g} (2^39), the bound of exact integer sums; "
                         "scale the weights down or split the log")


def quantize(weights: np.ndarray | float) -> np.ndarray:
    """Weights rounded to the grid."""
    return np.rint(np.asarray(weights, dtype=np.float64) * UNIT) / UNIT


def quantize_expr(expr: pl.Expr) -> pl.Expr:
    """A polars column of weights rounded to the grid (the same rounding as `quantize`)."""
    return (expr * UNIT).round() / UNIT


def to_units(weights: np.ndarray) -> np.ndarray:
    """Weights on the grid (at most `MAX_WEIGHT`) as int64 units."""
    return np.rint(np.asarray(weights, dtype=np.float64) * UNIT).astype(np.int64)


def sum_units(keys: np.ndarray, units: np.ndarray | None, size: int) -> np.ndarray:
    """The exact int64 sum of `units` per key in 0..size-1 (`None`: one unit of weight per key).

    float64 bincounts are exact while a sum stays below 2^53: units (at most 2^62 for
    `MAX_WEIGHT`) are split into a low part under 2^26, of which 2^24 rows sum under 2^50, and a
    high part, whose sum is exact up to 2^53 and must stay under 2^37 for a total within the
    bound: a larger sum, exact or not, is refused."""
    if units is None:
        return np.bincount(keys, minlength=size).astype(np.int64) * np.int64(UNIT)
    if float(units.sum(dtype=np.float64)) < 2.0**52:  # every partial sum is an integer below 2^53: one exact pass
        return np.bincount(keys, weights=units.astype(np.float64), minlength=size).astype(np.int64)
    total = np.zeros(size, np.int64)
    for lo in range(0, len(keys), _BLOCK):
        part_keys, part = keys[lo: lo + _BLOCK], units[lo: lo + _BLOCK]
        high = np.bincount(part_keys, weights=(part >> _LOW_BITS).astype(np.float64), minlength=size)
        low = np.bincount(part_keys, weights=(part & ((1 << _LOW_BITS) - 1)).astype(np.float64), minlength=size)
        if high.max(initial=0) >= 2.0 ** (63 - _LOW_BITS):  # the shift below would wrap
            raise WeightOverflow()
        total = add_units(add_units(total, high.astype(np.int64) << _LOW_BITS), low.astype(np.int64))
    return total


def add_units(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a + b for non-negative int64 unit counts, refusing to wrap around."""
    total = a + b
    if total.size and total.min() < 0:  # two values below 2^63 wrap to a negative sum
        raise WeightOverflow()
    return total


def check_sums(values: np.ndarray, starts: np.ndarray, sums: np.ndarray) -> None:
    """Raise `WeightOverflow` if an int64 `np.add.reduceat(values, starts)` (non-negative values)
    may have wrapped: its float64 twin decides, cheaply when the grand total is small."""
    if not values.size or float(values.sum(dtype=np.float64)) < 2.0**62:
        return
    approx = np.add.reduceat(values.astype(np.float64), starts, axis=0)
    if np.any(approx >= 2.0**63 * (1 - 1e-12)) or np.any(sums < 0):
        raise WeightOverflow()
