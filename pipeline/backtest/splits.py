"""Train/test splits of a log's units (games, battles, tasks, ballots) [VasE] section 4.3.

- `random_splits`: the paper's protocol, N independent splits each holding out `test_size` units
  drawn uniformly without replacement (the paper: 50 splits of 3,000 test games out of 31,049).
- `temporal_splits`: what a nightly leaderboard needs; train on every unit before a cut, test on
  the units of the next window. `splits` rolling windows of `window` microseconds end at the last
  timestamp: the cuts are last - k * window for k = splits..1, and the test window of a cut is
  [cut, cut + window) (the last one closed on the right). Units without a timestamp are left out.

Each split has its own seed, spawned from the run's seed with `np.random.SeedSequence`, so a split
does not depend on how many others there are nor on where it is computed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.backtest.units import NO_TIME

# Every split is held in memory with its units' indices (about 8 bytes a unit: 250 MB for 1,000
# random splits of a Diplomacy-scale log), so their number is bounded, and checked before any is made.
MAX_SPLITS = 1_000


@dataclass(frozen=True, eq=False)
class Split:
    index: int
    seed: int  # for anything random inside this split's tasks
    train: np.ndarray  # sorted unit indices
    test: np.ndarray  # sorted unit indices
    label: str = ""


def check_splits(splits: int) -> None:
    if not 1 <= splits <= MAX_SPLITS:
        raise ValueError(f"splits must be between 1 and {MAX_SPLITS:,}, not {splits:,}")


def _seeds(seed: int, count: int) -> list[int]:
    return [int(s.generate_state(1, np.uint64)[0] >> np.uint64(1)) for s in np.random.SeedSequence(seed).spawn(count)]


def random_splits(units: int, splits: int, test_size: int, seed: int) -> list[Split]:
    """`splits` random splits holding out `test_size` of `units` units each."""
    check_splits(splits)
    if not 1 <= test_size < units:
        raise ValueError(f"test size must be between 1 and {units - 1} (the log has {units} units), not {test_size}")
    result = []
    for index, split_seed in enumerate(_seeds(seed, splits)):
        test = np.sort(np.random.default_rng(split_seed).choice(units, size=test_size, replace=False))
        held = np.zeros(units, bool)
        held[test] = True
        result.append(Split(index, split_seed, np.flatnonzero(~held), test, f"random {index}"))
    return result


def temporal_splits(times: np.ndarray, splits: int, window: int, seed: int) -> list[Split]:
    """`splits` rolling windows of `window` microseconds ending at the last timestamp of `times`."""
    check_splits(splits)
    if window <= 0:
        raise ValueError(f"temporal splits need a positive window, not {window} us")
    times = np.asarray(times, dtype=np.int64)
    known = times != NO_TIME
    if not known.any():
        raise ValueError("temporal splits need timestamps, and no unit of this log has one")
    last = int(times[known].max())
    result = []
    for index, split_seed in enumerate(_seeds(seed, splits)):
        cut = last - (splits - index) * window
        end = cut + window
        train = np.flatnonzero(known & (times < cut))
        test = np.flatnonzero(known & (times >= cut) & ((times < end) | ((times == end) & (end == last))))
        if not len(train) or not len(test):
            raise ValueError(f"temporal split {index} (cut at {cut} us) has an empty training or test set; use fewer or shorter windows")
        result.append(Split(index, split_seed, train, test, f"before {np.datetime64(cut, 'us')}"))
    return result
