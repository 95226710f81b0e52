"""Two sorted runs of rows merged in one compiled pass: the id index's runs (`pipeline.logs.identity`).

A run is a (k, n) array whose row 0 is sorted; the merge writes the columns of both runs into
`out` in the order a stable sort of their concatenation by row 0 gives (the left run's column
first among equal keys). One sequential pass, nothing allocated beyond `out` (a memory-mapped
file keeps a big merge out of memory), and the GIL released, so that ingest's other stages run
meanwhile. numba compiles the loop (numpy would need a search, a scatter and a block buffer per
block); the compiled code is cached on disk. Imported on first use, so that importing the log
readers does not import numba.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _merge(left: np.ndarray, right: np.ndarray, out: np.ndarray) -> None:
    rows, n_left, n_right = left.shape[0], left.shape[1], right.shape[1]
    i = j = k = 0
    while i < n_left and j < n_right:
        if right[0, j] < left[0, i]:
            for r in range(rows):
                out[r, k] = right[r, j]
            j += 1
        else:
            for r in range(rows):
                out[r, k] = left[r, i]
            i += 1
        k += 1
    while i < n_left:
        for r in range(rows):
            out[r, k] = left[r, i]
        i += 1
        k += 1
    while j < n_right:
        for r in range(rows):
            out[r, k] = right[r, j]
        j += 1
        k += 1


def merge_sorted(left: np.ndarray, right: np.ndarray, out: np.ndarray) -> None:
    """Fill `out` (shape (k, left + right columns), same dtype) with the columns of `left` and
    `right` (each sorted by row 0) in stable order by row 0."""
    if left.shape[0] != right.shape[0] or out.shape != (left.shape[0], left.shape[1] + right.shape[1]):
        raise ValueError(f"runs of shapes {left.shape} and {right.shape} do not merge into {out.shape}")
    _merge(np.asarray(left), np.asarray(right), np.asarray(out))


@njit(cache=True, nogil=True)
def _first_at_least(keys: np.ndarray, key, start: int) -> int:
    """The first index at or after `start` whose key is >= `key` (keys sorted): a galloping
    search, so that sorted needles walk the run once, in O(log gap) each."""
    n = len(keys)
    if start >= n or keys[start] >= key:
        return start
    low, step = start, 1  # keys[low] < key
    high = low + step
    while high < n and keys[high] < key:
        low, step = high, step * 2
        high = low + step
    high = min(high, n)
    low += 1
    while low < high:
        middle = (low + high) // 2
        if keys[middle] < key:
            low = middle + 1
        else:
            high = middle
    return low


@njit(cache=True, nogil=True)
def _find(keys: np.ndarray, seconds: np.ndarray, values: np.ndarray, needles: np.ndarray, second_needles: np.ndarray,
          found: np.ndarray, missing) -> None:
    at = 0
    for i in range(len(needles)):
        if found[i] != missing:
            continue
        at = _first_at_least(keys, needles[i], at)
        j = at
        while j < len(keys) and keys[j] == needles[i]:  # equal first keys with different second ones are rare
            if seconds[j] == second_needles[i]:
                found[i] = values[j]
                break
            j += 1


def find_sorted(run: np.ndarray, first: np.ndarray, second: np.ndarray, found: np.ndarray, missing: int) -> None:
    """For each needle (`first`, `second`; sorted by `first`) whose `found` is still `missing`,
    set `found` to row 2 of the column of `run` (a (3, n) array sorted by row 0) with that row 0
    and row 1, if there is one."""
    run = np.asarray(run)
    _find(run[0], run[1], run[2], np.asarray(first), np.asarray(second), found, found.dtype.type(missing))
