"""The weight grid: every stored weight is a multiple of 2^-24, so sums of weights are exact.

Ingest puts weights on the grid (`quantize_expr`); the reductions count them as integer *units*
(`to_units`), so that a sum is the same whatever the partitioning or the order of the merge
(see `pipeline.stats.partials`); in-memory paths quantise the same way (`quantize`). Rounding is
half to even in both numpy and polars.
"""

from __future__ import annotations

import numpy as np
import polars as pl

UNIT = 2.0**24  # units per unit of weight


def quantize(weights: np.ndarray | float) -> np.ndarray:
    """Weights rounded to the grid."""
    return np.rint(np.asarray(weights, dtype=np.float64) * UNIT) / UNIT


def quantize_expr(expr: pl.Expr) -> pl.Expr:
    """A polars column of weights rounded to the grid (the same rounding as `quantize`)."""
    return (expr * UNIT).round() / UNIT


def to_units(weights: np.ndarray) -> np.ndarray:
    """Weights on the grid as int64 units."""
    return np.rint(np.asarray(weights, dtype=np.float64) * UNIT).astype(np.int64)
