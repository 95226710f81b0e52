import numpy as np
import pytest

from pipeline.backtest.units import NO_TIME
from pipeline.backtest.splits import random_splits, temporal_splits


def test_random_splits_partition_the_units_and_are_seeded():
    splits = random_splits(100, 5, 20, seed=7)
    for s in splits:
        assert len(s.test) == 20 and len(s.train) == 80
        assert np.array_equal(np.union1d(s.train, s.test), np.arange(100))
    assert len({tuple(s.test) for s in splits}) == 5  # different splits
    again = random_splits(100, 8, 20, seed=7)  # a split does not depend on how many others there are
    assert all(np.array_equal(a.test, b.test) and a.seed == b.seed for a, b in zip(splits, again))
    assert not np.array_equal(random_splits(100, 1, 20, seed=8)[0].test, splits[0].test)


def test_random_splits_reject_bad_sizes():
    with pytest.raises(ValueError, match="test size"):
        random_splits(10, 2, 10, 0)
    with pytest.raises(ValueError, match="splits"):
        random_splits(10, 0, 2, 0)
    with pytest.raises(ValueError, match="splits must be between 1 and 1,000"):
        random_splits(10, 1_001, 2, 0)
    with pytest.raises(ValueError, match="splits must be between 1 and 1,000"):
        temporal_splits(np.arange(10), 1_001, 1, 0)


def test_temporal_splits_roll_forward():
    day = 86_400 * 10**6
    times = np.r_[np.arange(10) * day, NO_TIME]  # days 0..9, and one unit without a timestamp
    splits = temporal_splits(times, 3, 2 * day, seed=0)
    # Last time is day 9; cuts at days 3, 5, 7; test windows [3, 5), [5, 7), [7, 9].
    assert [s.test.tolist() for s in splits] == [[3, 4], [5, 6], [7, 8, 9]]
    assert [s.train.tolist() for s in splits] == [[0, 1, 2], [0, 1, 2, 3, 4], [0, 1, 2, 3, 4, 5, 6]]
    with pytest.raises(ValueError, match="empty"):
        temporal_splits(times, 5, 2 * day, seed=0)
    with pytest.raises(ValueError, match="timestamps"):
        temporal_splits(np.full(3, NO_TIME), 1, day, seed=0)
