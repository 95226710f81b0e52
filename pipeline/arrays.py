"""Array helpers shared by the log kinds, the reductions, the backtests and the methods.

A table handed to a kind's builders is one unit of work's rows; when it was read from several
partition files, the column `SOURCE` holds each row's file (its position in the unit), because
a game id or a task name names one ballot per source file.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.weights import check_sums

SOURCE = "__file__"


def column(table: pa.Table, name: str, fill: float | None = None) -> np.ndarray:
    """A column as a numpy array; nulls replaced by `fill` when given."""
    values = table.column(name)
    if fill is not None:
        values = pc.fill_null(values, fill)
    return values.to_numpy()


def unit_codes(table: pa.Table, name: str) -> np.ndarray:
    """int64 codes of the values of `name`, distinct per source file (the same game id or task
    name in two files are two units); codes follow the values' first appearance."""
    codes = pc.dictionary_encode(table.column(name).combine_chunks()).indices.to_numpy().astype(np.int64)
    if SOURCE not in table.column_names:  # a table read from one file
        return codes
    return table.column(SOURCE).to_numpy().astype(np.int64) * (codes.max(initial=0) + 1) + codes


def sum_by_key(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct keys and the integer sum of the value rows (axis 0) of each: non-negative
    int64 units, whose sums past 2^63 raise `WeightOverflow` instead of wrapping around."""
    if not len(keys):
        return keys.astype(np.int64), values.reshape(0, *values.shape[1:]).astype(np.int64)
    order = np.argsort(keys, kind="stable")
    keys, values = keys[order], values[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    sums = np.add.reduceat(values, starts, axis=0)
    check_sums(values, starts, sums)
    return keys[starts], sums


def sort_positions(keys: np.ndarray) -> np.ndarray:
    """Each key's position in increasing order of the keys (equal keys in their given order)."""
    positions = np.empty(len(keys), np.int64)
    positions[np.argsort(keys, kind="stable")] = np.arange(len(keys))
    return positions


def uniform(value: np.generic | np.ndarray, length: int) -> np.ndarray:
    """`length` copies of `value` as a read-only view of that one value (no memory per row)."""
    return np.broadcast_to(np.asarray(value), (length,))


def is_uniform(array: np.ndarray) -> bool:
    """Whether `array` is a `uniform` view (every element the same value, stored once)."""
    return array.ndim == 1 and len(array) > 1 and array.strides == (0,)
