"""Two sorted runs of rows merged in one compiled pass, sorted needles searched in a run, the
Bloom filter that spares most needles that search, and the sort of a batch of hashes: the id
index's compiled passes (`pipeline.logs.identity`).

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


# The split block Bloom filter of the Parquet format, a blocked Bloom filter [PSS07]: a 64-bit hash picks one 256-bit block of eight 32-bit
# words by its high half and sets one bit of each word by its low half, so that a probe reads one
# cache line. The ids' hashes are uniform already, so they are used as they are.
SALT = np.array([0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D, 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31],
                np.uint64)
BLOCK_WORDS = 8


@njit(cache=True, nogil=True)
def _block_of(key, blocks):
    return (key >> np.uint64(32)) * blocks >> np.uint64(32)


@njit(cache=True, nogil=True)
def _bloom_add(filter_: np.ndarray, keys: np.ndarray, salt: np.ndarray) -> None:
    blocks = np.uint64(filter_.shape[0])
    low_half, shift = np.uint64(0xFFFFFFFF), np.uint64(27)
    for i in range(len(keys)):
        block = _block_of(keys[i], blocks)
        low = keys[i] & low_half
        for w in range(BLOCK_WORDS):
            filter_[block, w] |= np.uint32(1) << np.uint32((low * salt[w] & low_half) >> shift)


@njit(cache=True, nogil=True)
def _bloom_check(filter_: np.ndarray, keys: np.ndarray, salt: np.ndarray, maybe: np.ndarray) -> None:
    blocks = np.uint64(filter_.shape[0])
    low_half, shift = np.uint64(0xFFFFFFFF), np.uint64(27)
    for i in range(len(keys)):
        block = _block_of(keys[i], blocks)
        low = keys[i] & low_half
        present = True
        for w in range(BLOCK_WORDS):
            if not filter_[block, w] & (np.uint32(1) << np.uint32((low * salt[w] & low_half) >> shift)):
                present = False
                break
        maybe[i] = present


def bloom_add(filter_: np.ndarray, keys: np.ndarray) -> None:
    """Set the bits of `keys` (uint64 hashes) in `filter_` (a (blocks, 8) uint32 array)."""
    _bloom_add(filter_, np.ascontiguousarray(keys, np.uint64), SALT)


def bloom_check(filter_: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """For each of `keys`, False if it was never added to `filter_` (certain), True if it may have been."""
    maybe = np.empty(len(keys), np.bool_)
    _bloom_check(filter_, np.ascontiguousarray(keys, np.uint64), SALT, maybe)
    return maybe


# Hashes are spread evenly, so one pass by their top bits into buckets of a few keys each, then an
# insertion sort of each bucket, sorts them: 10x faster than numpy's stable argsort of uint64
# (a timsort). Keys that crowd into one bucket (not hashes) take numpy's sort instead.
CROWDED_BUCKET = 256


@njit(cache=True, nogil=True)
def _bucket_order(keys: np.ndarray, bits: int, order: np.ndarray) -> bool:
    shift = np.uint64(64 - bits)
    buckets = 1 << bits
    starts = np.zeros(buckets + 1, np.int64)
    for i in range(len(keys)):
        starts[(keys[i] >> shift) + 1] += 1
    for b in range(buckets):
        if starts[b + 1] > CROWDED_BUCKET:
            return False
        starts[b + 1] += starts[b]
    fill = starts[:-1].copy()
    bucketed = np.empty_like(keys)  # the keys beside their positions: the insertion sorts read no key at random
    for i in range(len(keys)):  # in input order: the buckets keep it, so the sort is stable
        b = keys[i] >> shift
        order[fill[b]] = i
        bucketed[fill[b]] = keys[i]
        fill[b] += 1
    for b in range(buckets):
        lo, hi = starts[b], starts[b + 1]
        for j in range(lo + 1, hi):
            item, key = order[j], bucketed[j]
            k = j - 1
            while k >= lo and bucketed[k] > key:
                order[k + 1], bucketed[k + 1] = order[k], bucketed[k]
                k -= 1
            order[k + 1], bucketed[k + 1] = item, key
    return True


def hash_order(keys: np.ndarray) -> np.ndarray:
    """The stable order that sorts uint64 `keys` (`np.argsort(keys, kind="stable")`), fast for
    evenly spread keys such as hashes."""
    keys = np.ascontiguousarray(keys, np.uint64)
    order = np.empty(len(keys), np.int64)
    bits = min(max(len(keys).bit_length() - 3, 1), 24)  # about 4 to 8 keys per bucket
    if len(keys) < 2 or not _bucket_order(keys, bits, order):
        return np.argsort(keys, kind="stable")
    return order
