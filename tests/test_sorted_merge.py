"""The id index's compiled passes: the bucket sort of hashes is numpy's stable argsort."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline import sorted_merge
from pipeline.sorted_merge import hash_order


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1_000, 300_000])
def test_hash_order_is_the_stable_argsort_of_hashes_with_ties(n):
    rng = np.random.default_rng(n)
    keys = rng.integers(0, 2**64, n, np.uint64, endpoint=False)
    keys[: n // 3] = keys[n // 3: 2 * (n // 3)]  # a third repeated: equal keys keep their input order
    assert np.array_equal(hash_order(keys), np.argsort(keys, kind="stable"))


def test_keys_crowding_one_bucket_take_numpys_sort(monkeypatch):
    rng = np.random.default_rng(1)
    small = rng.integers(0, 1_000, 50_000).astype(np.uint64)  # not hashes: all in the first bucket
    extremes = np.r_[np.full(500, 2**64 - 1, np.uint64), np.zeros(500, np.uint64)]
    for keys in (small, extremes):
        assert np.array_equal(hash_order(keys), np.argsort(keys, kind="stable"))
    keys = rng.integers(0, 2**64, 10_000, np.uint64, endpoint=False)
    expected = np.argsort(keys, kind="stable")

    def refused(*args, **kwargs):
        raise AssertionError("spread keys took numpy's sort")

    monkeypatch.setattr(sorted_merge.np, "argsort", refused)
    assert np.array_equal(hash_order(keys), expected)
