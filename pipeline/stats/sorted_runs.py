"""Sorted runs interleaved by a two-integer key, compiled: the k-way merge of the `sequence` statistic.

A run's column is one array per run (a numba typed `List` of them), never concatenated: an array
shorter than its run (one value) stands for that value in every row, so a column a run does not
store costs nothing. Rows are numbered as in the runs laid end to end: run r holds rows
[starts[r], starts[r + 1]).

A heap of the runs' next rows gives each row in O(log k) for k runs, with no memory beyond the
output (the row order and its ties); `gather` then reads a column in that order straight from
the runs. numba compiles the loops, as Python would spend a microsecond per row.
`pipeline.stats.sequence` imports this module on first use, so that importing the statistics does
not import numba; the compiled code is cached on disk by numba.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.typed import List


def run_columns(arrays: list[np.ndarray]) -> List:
    """Per-run arrays of one column (one dtype) as the compiled loops take them: read-only,
    contiguous (the arrays are not copied when they already are)."""
    columns = List()
    for array in arrays:
        array = np.ascontiguousarray(array)
        array.setflags(write=False)
        columns.append(array)
    return columns


@njit(cache=True, inline="always")
def _at(column: np.ndarray, i: int):
    return column[min(i, len(column) - 1)]


@njit(cache=True)
def _before(first, second, head: np.ndarray, r: int, s: int) -> bool:
    """Run r's next row comes before run s's: by (first, second), then the smaller run."""
    x, y = _at(first[r], head[r]), _at(first[s], head[s])
    if x != y:
        return x < y
    x, y = _at(second[r], head[r]), _at(second[s], head[s])
    if x != y:
        return x < y
    return r < s


@njit(cache=True)
def merge_order(first, second, starts: np.ndarray, order: np.ndarray, tied: np.ndarray) -> None:
    """Fill `order` with the rows of the runs, each sorted by (first, second), interleaved by
    (first, second), an earlier run's rows first among equal keys; and `tied[i]` with whether row
    order[i] has the key of row order[i - 1]."""
    runs = len(starts) - 1
    head = np.zeros(runs, np.int64)  # the next row of each run, counted within the run
    heap = np.empty(runs, np.int64)
    size = 0
    for r in range(runs):
        if starts[r] < starts[r + 1]:
            heap[size] = r
            child = size
            size += 1
            while child > 0 and _before(first, second, head, heap[child], heap[(child - 1) // 2]):
                parent = (child - 1) // 2
                heap[child], heap[parent] = heap[parent], heap[child]
                child = parent
    last_first, last_second = 0, 0
    for out in range(len(order)):
        r = heap[0]
        row = head[r]
        order[out] = starts[r] + row
        key_first, key_second = _at(first[r], row), _at(second[r], row)
        tied[out] = out > 0 and key_first == last_first and key_second == last_second
        last_first, last_second = key_first, key_second
        head[r] += 1
        if head[r] == starts[r + 1] - starts[r]:
            size -= 1
            heap[0] = heap[size]
        parent = 0
        while True:
            child = 2 * parent + 1
            if child >= size:
                break
            if child + 1 < size and _before(first, second, head, heap[child + 1], heap[child]):
                child += 1
            if not _before(first, second, head, heap[child], heap[parent]):
                break
            heap[child], heap[parent] = heap[parent], heap[child]
            parent = child


@njit(cache=True)
def gather(columns, starts: np.ndarray, rows: np.ndarray, lookup: np.ndarray, out: np.ndarray) -> None:
    """out[i] = lookup[the value of row rows[i]] (rows numbered across the runs; `lookup` maps
    values 0..len-1, or is empty for the value itself)."""
    mapped = len(lookup) > 0
    for i in range(len(rows)):
        row = rows[i]
        r = np.searchsorted(starts, row, side="right") - 1
        value = _at(columns[r], row - starts[r])
        out[i] = lookup[value] if mapped else value
