"""Per-partition reductions to mergeable partial statistics, and their exact merge.

Every weight is a multiple of 2^-24 (ingest quantises it, `pipeline.weights`), so each is an
integer number of *units*. Partials hold int64 units and merging adds integers: the sum is exact,
hence the same whatever the partitioning or the merge order. Within one partition the units are
summed by `pipeline.weights.sum_units` (float64 bincounts of parts small enough to be exact), and
merges by `add_units`: every count is exact up to 2^63 units (5e11 weight per cell), and one
beyond it stops the reduction with `WeightOverflow` instead of wrapping around.

Pairwise counts use a dense (n*n) bincount while the id space is small and sorted sparse keys
beyond (`dense=False`): per-partition bincounts summed in a tree cost about 2x one in-memory
bincount (benchmarks/bench_reduce.py), where a dataframe group-by cost about 14x.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from pipeline.arrays import sort_positions, sum_by_key
from pipeline.logs import log_kind
from pipeline.logs.orders import A_WINS, TIE, Comparisons, WeakOrders
from pipeline.stats.counts import BallotHistogram, PairwiseCounts, PositionCounts, Statistics
from pipeline.stats.encoding import Arrays, scalar, under_prefix, with_prefix
from pipeline.stats.extras import EXTRAS
from pipeline.weights import UNIT, add_units, sum_units, to_units

DENSE_MAX_AGENTS = 2048
_BLOCK_CELLS = 4_000_000  # pairs expanded at once when counting within ballots


@dataclass
class PairCounter:
    """N and T in units over the global id space: dense (n*n vectors) or sparse (sorted keys)."""

    n: int
    dense: bool
    keys: np.ndarray | None = None  # sparse: int64 a*n+b, sorted, distinct
    wins: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    ties: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @classmethod
    def empty(cls, n: int, dense: bool) -> PairCounter:
        if dense:
            return cls(n, True, None, np.zeros(n * n, np.int64), np.zeros(n * n, np.int64))
        return cls(n, False, np.zeros(0, np.int64))

    @classmethod
    def count(cls, n: int, dense: bool, winner: np.ndarray, loser: np.ndarray, win_units: np.ndarray | None,
              tie_a: np.ndarray, tie_b: np.ndarray, tie_units: np.ndarray | None) -> PairCounter:
        """Strict comparisons winner > loser and ties a = b (counted in both directions)."""
        n64 = np.int64(n)
        win_keys = winner.astype(np.int64) * n64 + loser
        tie_keys = np.concatenate([tie_a.astype(np.int64) * n64 + tie_b, tie_b.astype(np.int64) * n64 + tie_a])
        tie_units2 = None if tie_units is None else np.concatenate([tie_units, tie_units])
        if dense:
            return cls(n, True, None, sum_units(win_keys, win_units, n * n), sum_units(tie_keys, tie_units2, n * n))
        unit = lambda units, size: np.full(size, np.int64(UNIT)) if units is None else units  # noqa: E731
        keys = np.concatenate([win_keys, tie_keys])
        values = np.zeros((len(keys), 2), np.int64)
        values[: len(win_keys), 0] = unit(win_units, len(win_keys))
        values[len(win_keys):, 1] = unit(tie_units2, len(tie_keys))
        keys, values = sum_by_key(keys, values)
        return cls(n, False, keys, values[:, 0].copy(), values[:, 1].copy())

    def __add__(self, other: PairCounter) -> PairCounter:
        if (self.n, self.dense) != (other.n, other.dense):
            raise ValueError("cannot merge pair counts over different id spaces")
        if self.dense:
            return PairCounter(self.n, True, None, add_units(self.wins, other.wins), add_units(self.ties, other.ties))
        keys, values = sum_by_key(
            np.concatenate([self.keys, other.keys]),
            np.column_stack([np.concatenate([self.wins, other.wins]), np.concatenate([self.ties, other.ties])]),
        )
        return PairCounter(self.n, False, keys, values[:, 0].copy(), values[:, 1].copy())

    def __sub__(self, other: PairCounter) -> PairCounter:
        """The counts of `self` without those of `other`, which counted a subset of the same records;
        sparse cells left with no weight are dropped (as `finalize` drops them)."""
        if (self.n, self.dense) != (other.n, other.dense):
            raise ValueError("cannot subtract pair counts over different id spaces")
        if self.dense:
            return PairCounter(self.n, True, None, _sub_units(self.wins, other.wins), _sub_units(self.ties, other.ties))
        cells = np.searchsorted(self.keys, other.keys)
        if np.any(cells >= len(self.keys)) or np.any(self.keys[np.minimum(cells, len(self.keys) - 1)] != other.keys):
            raise ValueError("pair counts to subtract hold a pair the others do not")
        wins, ties = self.wins.copy(), self.ties.copy()
        wins[cells] = _sub_units(wins[cells], other.wins)
        ties[cells] = _sub_units(ties[cells], other.ties)
        kept = (wins != 0) | (ties != 0)
        return PairCounter(self.n, False, self.keys[kept], wins[kept], ties[kept])

    def resized(self, n: int) -> PairCounter:
        """The same counts in a larger id space (dictionary ids only grow)."""
        if self.dense:
            grow = lambda v: np.pad(v.reshape(self.n, self.n), ((0, n - self.n), (0, n - self.n))).ravel()  # noqa: E731
            return PairCounter(n, True, None, grow(self.wins), grow(self.ties))
        keys = (self.keys // self.n) * np.int64(n) + self.keys % self.n  # monotone: stays sorted
        return PairCounter(n, False, keys, self.wins, self.ties)

    def to_arrays(self) -> Arrays:
        keys = {} if self.dense else {"keys": self.keys}
        return {"n": scalar(self.n), "wins": self.wins, "ties": self.ties} | keys

    @classmethod
    def from_arrays(cls, arrays: Arrays) -> PairCounter:
        n, dense = int(arrays["n"]), "keys" not in arrays
        counter = cls(n, dense, arrays.get("keys"), arrays["wins"], arrays["ties"])
        cells = n * n if dense else len(counter.keys)
        if counter.wins.shape != (cells,) or counter.ties.shape != (cells,):
            raise ValueError(f"pair counts of {cells} cells expected")
        return counter

    def finalize(self, present: np.ndarray) -> PairwiseCounts:
        local = np.full(self.n, -1, np.int64)
        local[present] = np.arange(len(present))
        k = len(present)
        if self.dense:
            pick = np.ix_(present, present)
            wins = self.wins.reshape(self.n, self.n)[pick] / UNIT
            ties = self.ties.reshape(self.n, self.n)[pick] / UNIT
            return PairwiseCounts(present, wins, ties)
        rows, cols = local[self.keys // self.n], local[self.keys % self.n]
        make = lambda v: sp.csr_array((v / UNIT, (rows, cols)), shape=(k, k))  # noqa: E731
        wins, ties = make(self.wins), make(self.ties)
        wins.eliminate_zeros()
        ties.eliminate_zeros()
        return PairwiseCounts(present, wins, ties)


@dataclass
class PositionCounter:
    n: int
    groups: dict[tuple[int, int, int], np.ndarray] = field(default_factory=dict)

    def resized(self, n: int) -> PositionCounter:
        return PositionCounter(n, {key: np.pad(units, (0, n - self.n)) for key, units in self.groups.items()})

    def __add__(self, other: PositionCounter) -> PositionCounter:
        merged = dict(self.groups)
        for key, units in other.groups.items():
            merged[key] = merged[key] + units if key in merged else units
        return PositionCounter(self.n, merged)

    def __sub__(self, other: PositionCounter) -> PositionCounter:
        """The counts of `self` without those of `other`, which counted a subset of the same ballots.
        A group left with no weight is dropped: exact when every ballot weighs more than 0 (else a
        group of ballots of weight 0 only would be counted, with zeros, and is dropped here)."""
        left = dict(self.groups)
        for key, units in other.groups.items():
            if key not in left:
                raise ValueError(f"position counts to subtract hold a group {key} the others do not")
            left[key] = _sub_units(left[key], units)
        return PositionCounter(self.n, {key: units for key, units in left.items() if units.any()})

    def to_arrays(self) -> Arrays:
        keys = sorted(self.groups)
        units = np.stack([self.groups[k] for k in keys]) if keys else np.zeros((0, self.n), np.int64)
        return {"n": scalar(self.n), "keys": np.array(keys, np.int64).reshape(-1, 3), "units": units}

    @classmethod
    def from_arrays(cls, arrays: Arrays) -> PositionCounter:
        keys, units = arrays["keys"], arrays["units"]
        if units.shape != (len(keys), int(arrays["n"])):
            raise ValueError("one row of position units per key")
        return cls(int(arrays["n"]), {tuple(key): row for key, row in zip(keys.tolist(), units)})

    def finalize(self, present: np.ndarray) -> PositionCounts:
        return PositionCounts(present, {key: units[present] / UNIT for key, units in sorted(self.groups.items())})


@dataclass
class HistogramCounter:
    """Per ballot length L: distinct rows [L agent ids, L group starts] and their units."""

    rows: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def __add__(self, other: HistogramCounter) -> HistogramCounter:
        merged = dict(self.rows)
        for length, (rows, units) in other.rows.items():
            if length in merged:
                rows = np.concatenate([merged[length][0], rows])
                units = np.concatenate([merged[length][1], units])
                rows, units = _unique_rows(rows, units)
            merged[length] = (rows, units)
        return HistogramCounter(merged)

    def to_arrays(self) -> Arrays:
        arrays = {"lengths": np.array(sorted(self.rows), np.int64)}
        for length, (rows, units) in sorted(self.rows.items()):
            arrays |= {f"{length}.rows": rows, f"{length}.units": units}
        return arrays

    @classmethod
    def from_arrays(cls, arrays: Arrays) -> HistogramCounter:
        return cls({length: (arrays[f"{length}.rows"], arrays[f"{length}.units"]) for length in arrays["lengths"].tolist()})

    def finalize(self, present: np.ndarray, n: int) -> BallotHistogram:
        local = np.full(n, -1, np.int64)
        local[present] = np.arange(len(present))
        entries = [entry for length, (rows, units) in self.rows.items()
                   for entry in zip(ballot_tuples(rows, length, local), units.tolist())]
        entries.sort()
        return BallotHistogram(present, tuple(e[0] for e in entries), np.array([e[1] for e in entries], dtype=np.float64) / UNIT)


def ballot_tuples(rows: np.ndarray, length: int, local: np.ndarray) -> list[tuple[tuple[int, ...], ...]]:
    """Histogram rows of ballots of one length, [L store ids, L group starts], as `BallotHistogram`
    ballots: tie groups of local indices (`local[store id]`), best first, each sorted."""
    out = []
    for row in rows.tolist():
        groups: dict[int, list[int]] = {}
        for agent, start in zip(row[:length], row[length:]):
            groups.setdefault(start, []).append(int(local[agent]))
        out.append(tuple(tuple(sorted(g)) for _, g in sorted(groups.items())))
    return out


def _sub_units(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a - b for unit counts where b counted a subset of a's records: never negative."""
    left = a - b
    if left.size and left.min() < 0:
        raise ValueError("counts to subtract exceed the counts they are subtracted from")
    return left


def _unique_rows(rows: np.ndarray, units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    distinct, inverse = np.unique(rows, axis=0, return_inverse=True)
    order = np.argsort(inverse.ravel(), kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(inverse.ravel()[order]) != 0])
    return distinct, np.add.reduceat(units[order], starts)


@dataclass
class Partial:
    """The mergeable reduction of one partition; fields not asked for stay None."""

    n: int
    appearances: np.ndarray
    pairs: PairCounter | None = None
    positions: PositionCounter | None = None
    histogram: HistogramCounter | None = None
    extra: dict[str, object] = field(default_factory=dict)  # see pipeline.stats.extras

    @property
    def resizable(self) -> bool:
        """Whether every extra statistic it holds can be re-embedded in a larger id space (`Extra.resize`)."""
        return all(EXTRAS[name].resize is not None for name in self.extra)

    def resized(self, n: int) -> Partial:
        """The partial in a larger id space (dictionary ids only grow), extras by their `Extra.resize`."""
        if not self.resizable:
            raise ValueError("a partial with extra statistics that cannot be re-embedded cannot be resized")
        grow = lambda x: None if x is None else x.resized(n)  # noqa: E731
        extra = {name: EXTRAS[name].resize(value, n) for name, value in self.extra.items()}
        return Partial(n, np.pad(self.appearances, (0, n - self.n)), grow(self.pairs), grow(self.positions), self.histogram, extra)

    def to_arrays(self) -> Arrays:
        """Every field as named arrays (extras by their `Extra.encode`), for the store's cache;
        `fields` lists the fields present."""
        core = {"pairs": self.pairs, "positions": self.positions, "histogram": self.histogram}
        parts = {name: part.to_arrays() for name, part in core.items() if part is not None}
        parts |= {f"extra.{name}": EXTRAS[name].encode(value) for name, value in sorted(self.extra.items())}
        arrays = {"n": scalar(self.n), "appearances": self.appearances, "fields": np.array(list(parts), dtype=np.str_)}
        for name, part in parts.items():
            arrays |= with_prefix(name, part)
        return arrays

    @classmethod
    def from_arrays(cls, arrays: Arrays) -> Partial:
        n, fields = int(arrays["n"]), set(arrays["fields"].tolist())
        if arrays["appearances"].shape != (n,):
            raise ValueError(f"appearances of {n} agents expected")
        core = [kind.from_arrays(under_prefix(name, arrays)) if name in fields else None
                for name, kind in [("pairs", PairCounter), ("positions", PositionCounter), ("histogram", HistogramCounter)]]
        extras = sorted(name.removeprefix("extra.") for name in fields if name.startswith("extra."))
        return cls(n, arrays["appearances"], *core, {name: EXTRAS[name].decode(under_prefix(f"extra.{name}", arrays)) for name in extras})

    def __add__(self, other: Partial) -> Partial:
        """The partial of both's records. An extra one of them lacks is the other's: a cached
        reduction leaves out of a unit the kept statistics (`Extra.kept`) whose snapshot holds its rows."""
        add = lambda x, y: None if x is None else x + y  # noqa: E731
        extra = {name: EXTRAS[name].merge(self.extra[name], other.extra[name]) if name in self.extra and name in other.extra
                 else self.extra.get(name, other.extra.get(name)) for name in sorted(self.extra.keys() | other.extra.keys())}
        return Partial(self.n, self.appearances + other.appearances, add(self.pairs, other.pairs),
                       add(self.positions, other.positions), add(self.histogram, other.histogram), extra)

    def __sub__(self, other: Partial) -> Partial:
        """The partial of the records of `self` that `other` did not count (`other` counted a subset
        of them, with the same fields): a backtest's training set as the whole log minus the held-out
        units. The histogram and extras without `Extra.subtract` cannot be subtracted."""
        if self.histogram is not None or other.histogram is not None:
            raise ValueError("a ballot histogram cannot be subtracted")
        if self.extra.keys() != other.extra.keys():
            raise ValueError("partials to subtract hold different extra statistics")
        fixed = [name for name in self.extra if EXTRAS[name].subtract is None]
        if fixed:
            raise ValueError(f"statistic {fixed[0]!r} cannot be subtracted")
        sub = lambda x, y: None if x is None else x - y  # noqa: E731
        extra = {name: EXTRAS[name].subtract(value, other.extra[name]) for name, value in self.extra.items()}
        return Partial(self.n, _sub_units(self.appearances, other.appearances), sub(self.pairs, other.pairs),
                       sub(self.positions, other.positions), None, extra)


def ballot_blocks(orders: WeakOrders) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """(L, ballots, agents, group starts, group sizes, units) for chunks of ballots of equal length
    L: the ballots' indices in `orders`, then one row per ballot (its members by level)."""
    lengths = np.diff(orders.offsets)
    units = to_units(orders.weights)
    for length in np.unique(lengths):
        length = int(length)
        chosen = np.flatnonzero(lengths == length)
        step = max(1, _BLOCK_CELLS // max(1, length * length))
        for lo in range(0, len(chosen), step):
            sel = chosen[lo: lo + step]
            idx = orders.offsets[sel][:, None] + np.arange(length)
            lv = orders.levels[idx]
            pos = np.broadcast_to(np.arange(length), lv.shape)
            first = np.ones(lv.shape, bool)
            first[:, 1:] = lv[:, 1:] != lv[:, :-1]
            if first.all():  # no ties in the block: every member is its own group
                yield length, sel, orders.agents[idx], pos, np.ones(lv.shape, np.int64), units[sel]
                continue
            last = np.ones(lv.shape, bool)
            last[:, :-1] = lv[:, :-1] != lv[:, 1:]
            start = np.maximum.accumulate(np.where(first, pos, 0), axis=1)
            end = np.minimum.accumulate(np.where(last, pos, length)[:, ::-1], axis=1)[:, ::-1]
            yield length, sel, orders.agents[idx], start, end - start + 1, units[sel]


def _block_pairs(n: int, dense: bool, length: int, agents: np.ndarray, start: np.ndarray, size: np.ndarray,
                 units: np.ndarray) -> PairCounter:
    """Pair counts of a block of ballots of one length; members are sorted by level, so in a pair
    (i, j) with i < j, i is ahead of j unless both start the same tie group."""
    if dense and (size == 1).all() and (units == units[0]).all():
        # The common case (strict ballots, equal weights): per position, one bincount of its pairs
        # with every later position, on contiguous rows instead of gathered pair arrays.
        cols = np.ascontiguousarray(agents.T)
        ahead = cols * n
        wins = np.zeros(n * n, np.int64)
        for pos in range(length - 1):
            wins += np.bincount((ahead[pos] + cols[pos + 1:]).ravel(), minlength=n * n)
        return PairCounter(n, True, None, wins * units[0], np.zeros(n * n, np.int64))
    i, j = np.triu_indices(length, 1)
    a, b = agents[:, i], agents[:, j]
    strict = start[:, i] != start[:, j]
    w = np.broadcast_to(units[:, None], a.shape)
    return PairCounter.count(n, dense, a[strict], b[strict], w[strict], a[~strict], b[~strict], w[~strict])


def weak_order_partial(orders: WeakOrders, n: int, statistics: frozenset[str], dense: bool) -> Partial:
    appearances = np.bincount(orders.agents, minlength=n).astype(np.int64)
    pairs = PairCounter.empty(n, dense) if "pairwise" in statistics else None
    positions = PositionCounter(n) if "positions" in statistics else None
    histogram = HistogramCounter() if "histogram" in statistics else None
    for length, _, agents, start, size, units in ballot_blocks(orders):
        if pairs is not None and length > 1:
            pairs = pairs + _block_pairs(n, dense, length, agents, start, size, units)
        if positions is not None:
            w = np.broadcast_to(units[:, None], agents.shape)
            code = start * (length + 1) + size
            for key in np.unique(code):
                counted = sum_units(agents[code == key], w[code == key], n)
                positions = positions + PositionCounter(n, {(length, int(key // (length + 1)), int(key % (length + 1))): counted})
        if histogram is not None:
            rows, summed = _unique_rows(np.concatenate([agents, start], axis=1), units)
            histogram = histogram + HistogramCounter({length: (rows, summed)})
    return Partial(n, appearances, pairs, positions, histogram)


def comparison_partial(comparisons: Comparisons, n: int, dense: bool) -> Partial:
    """Pair counts of comparisons, counted directly (positions and the histogram follow in `finalize`)."""
    a, b, outcome = comparisons.a, comparisons.b, comparisons.outcome
    units = None if np.all(comparisons.weights == 1.0) else to_units(comparisons.weights)
    decided = outcome != TIE
    a_won = outcome == A_WINS
    win, lose = np.where(a_won, a, b)[decided], np.where(a_won, b, a)[decided]
    sub = lambda mask: None if units is None else units[mask]  # noqa: E731
    pairs = PairCounter.count(n, dense, win, lose, sub(decided), a[~decided], b[~decided], sub(~decided))
    appearances = np.bincount(a, minlength=n).astype(np.int64) + np.bincount(b, minlength=n)
    return Partial(n, appearances, pairs)


def finalize(kind: str, partial: Partial, statistics: frozenset[str], name_orders: Mapping[str, np.ndarray]) -> Statistics:
    """The statistics of a merged partial, over the agents that appear in it.

    `name_orders[space][i]` is the position of the name of id i of a dictionary (`agents`, `judges`,
    ...) in code-point order (`IdMap.name_order`; `arange` where ids were given in name order):
    extras and `Statistics.agent_keys` order ids by name without holding names. The partial is
    finalized once: an extra may take its value's contents out (the `sequence` runs are released
    as the sequence is built).
    """
    present = np.flatnonzero(partial.appearances > 0)
    extra = {name: EXTRAS[name].finalize(value, present, name_orders) for name, value in sorted(partial.extra.items())}
    pairwise = partial.pairs.finalize(present) if partial.pairs is not None else None
    positions = partial.positions.finalize(present) if partial.positions is not None else None
    histogram = partial.histogram.finalize(present, partial.n) if partial.histogram is not None else None
    if log_kind(kind).comparisons is not None and pairwise is not None:  # each comparison is a ballot of two
        positions = comparison_positions(pairwise) if "positions" in statistics else None
        histogram = comparison_histogram(pairwise) if "histogram" in statistics else None
    return Statistics(kind, present, partial.appearances[present], pairwise, positions, histogram, extra,
                      agent_keys=sort_positions(np.asarray(name_orders["agents"])[present]))


def comparison_positions(pairs: PairwiseCounts) -> PositionCounts:
    """A comparison is a ballot of length 2: the winner at 0, the loser at 1, a tie shares 0..1."""
    rows = lambda m: np.asarray(m.sum(axis=1)).ravel()  # noqa: E731
    cols = lambda m: np.asarray(m.sum(axis=0)).ravel()  # noqa: E731
    groups = {(2, 0, 1): rows(pairs.wins), (2, 1, 1): cols(pairs.wins), (2, 0, 2): rows(pairs.ties)}
    return PositionCounts(pairs.agents, {k: v for k, v in groups.items() if np.any(v)})


def comparison_histogram(pairs: PairwiseCounts) -> BallotHistogram:
    """A comparison is a ballot of two: x ahead of y for each win, one tie group for each tie."""
    wins, ties = sp.coo_array(pairs.wins), sp.triu(sp.coo_array(pairs.ties), k=1).tocoo()
    entries = [(((int(x),), (int(y),)), w) for x, y, w in zip(wins.row, wins.col, wins.data) if w]
    entries += [(((int(x), int(y)),), w) for x, y, w in zip(ties.row, ties.col, ties.data) if w]
    entries.sort()
    return BallotHistogram(pairs.agents, tuple(e[0] for e in entries), np.array([e[1] for e in entries], dtype=np.float64))
