"""Sorted runs interleaved by a two-integer key, compiled: the k-way merge of the `sequence` statistic.

A heap of the runs' next rows gives each row in O(log k) for k runs, with no memory beyond the
output (the row order and its ties); numba compiles the loop, as Python would spend a
microsecond per row. `pipeline.stats.sequence` imports this module on first use, so that
importing the statistics does not import numba; the compiled code is cached on disk by numba.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _before(first: np.ndarray, second: np.ndarray, head: np.ndarray, r: int, s: int) -> bool:
    """Run r's next row comes before run s's: by (first, second), then the smaller run."""
    i, j = head[r], head[s]
    if first[i] != first[j]:
        return first[i] < first[j]
    if second[i] != second[j]:
        return second[i] < second[j]
    return r < s


@njit(cache=True)
def merge_order(first: np.ndarray, second: np.ndarray, starts: np.ndarray, order: np.ndarray, tied: np.ndarray) -> None:
    """Fill `order` with the rows of the runs [starts[r], starts[r + 1]), each sorted by (first,
    second), interleaved by (first, second), an earlier run's rows first among equal keys; and
    `tied[i]` with whether row order[i] has the key of row order[i - 1]."""
    runs = len(starts) - 1
    head = starts[:-1].copy()
    heap = np.empty(runs, np.int64)
    size = 0
    for r in range(runs):
        if head[r] < starts[r + 1]:
            heap[size] = r
            child = size
            size += 1
            while child > 0 and _before(first, second, head, heap[child], heap[(child - 1) // 2]):
                parent = (child - 1) // 2
                heap[child], heap[parent] = heap[parent], heap[child]
                child = parent
    for out in range(len(order)):
        r = heap[0]
        row = head[r]
        order[out] = row
        tied[out] = out > 0 and first[row] == first[order[out - 1]] and second[row] == second[order[out - 1]]
        head[r] += 1
        if head[r] == starts[r + 1]:
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
