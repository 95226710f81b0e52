"""The `council_reviews` statistic: every council review, grouped by query, for [Council] scoring.

Council Borda needs what the core statistics lose: which query a review belongs to, who reviewed
(self-votes), abstentions, each query's number of answers N, category and time. A partial value
is the sorted tuple of the unit's review rows; merging sorts the union by the whole row (a total
key), so the merged value is the same whatever the partitioning and the merge order. It is
O(reviews) in memory, which suits council logs (one row per reviewer and query). The reviews are
built from the latest row of each query and reviewer on whole columns (`Held.of_table`), and
kept between nightlies (`Extra.kept`) finalized per query, as plain arrays (`Held`): new reviews
merge again only the queries they name, which are finalized alone and spliced in by position
(a binary search among the sorted query ids), so that a nightly neither sorts nor groups the
kept reviews; what it does on the whole snapshot is a few passes over its arrays (about 13 bytes
a review where reviews are undated and uncategorised, as each review's models are a flag when
they are its query's candidates; a review's time adds 8 bytes and its category its length, as
they are not compressed).

The same reviews reduce to the core statistics as the reviews kind says
(`pipeline.logs.reviews.review_orders`, self-votes excluded); `CouncilReviews.statistics()` does
that in memory, so that other methods rate exactly these reviews next to council Borda.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import sort_positions
from pipeline.stats.counts import CORE_STATISTICS, Statistics
from pipeline.stats.encoding import Arrays, arrays_table, table_arrays
from pipeline.stats.extras import Extra, Kept, register_extra, same_ids
from pipeline.stats.in_memory import statistics_of_records
from pipeline.stats.partials import DENSE_MAX_AGENTS, finalize
from pipeline.stats.reduce import reduce_table

COLUMNS = ("query_id", "reviewer", "abstained", "models", "order", "order_from", "category", "timestamp")

# (query_id, reviewer, dated, timestamp us, categorised, category, abstained, models, order, from_scores)
Row = tuple[str, int, bool, int, bool, str, bool, tuple[int, ...], tuple[int, ...], bool]
ROW_SCHEMA = pa.schema([("query_id", pa.string()), ("reviewer", pa.int64()), ("dated", pa.bool_()), ("micros", pa.int64()),
                        ("categorised", pa.bool_()), ("category", pa.string()), ("abstained", pa.bool_()),
                        ("models", pa.list_(pa.int64())), ("order", pa.list_(pa.int64())), ("from_scores", pa.bool_())])


@dataclass(frozen=True, eq=False)
class CouncilReviews:
    """Reviews (one per query and reviewer) in (query, reviewer) order; queries sorted by id.

    Per query q: `query_ids[q]` (an Arrow array: no Python string per query, 2e6 of them for 1e7
    reviews), `category[q]` (the smallest category its reviews give, None if
    none does), `timestamp[q]` (the latest review time, UTC microseconds; `dated[q]` false if no
    review has one) and its answering models `candidates[candidate_offsets[q]:candidate_offsets[q+1]]`
    (store ids). Per review r: `query[r]`, `reviewer[r]`, `abstained[r]`, `size[r]` (N, the number
    of answers it saw), `from_scores[r]` (ranking derived from scores) and the models in ranking
    order `ranked[order_offsets[r]:order_offsets[r+1]]` (position = index in that slice).
    The store ids (`candidates`, `reviewer`, `ranked`) are in the smallest unsigned type that holds
    them, as the kept reviews hold them (`Held`): widened to int64 they were most of the bytes a
    nightly wrote in memory (5 ranked models a review: 40 bytes against 5), and most of its time.
    `name_order` maps each store id of these reviews to the position of its name among theirs in
    code-point order: the record's alphabetical tie-break, without the names.
    """

    query_ids: pa.LargeStringArray
    category: tuple[str | None, ...]
    timestamp: np.ndarray
    dated: np.ndarray
    candidate_offsets: np.ndarray
    candidates: np.ndarray
    query: np.ndarray
    reviewer: np.ndarray
    abstained: np.ndarray
    size: np.ndarray
    from_scores: np.ndarray
    order_offsets: np.ndarray
    ranked: np.ndarray
    name_order: dict[int, int] = field(default_factory=dict)
    duplicates: int = 0  # reviews dropped because a later one of the same query and reviewer exists

    def __post_init__(self) -> None:
        q, r = len(self.query_ids), len(self.query)
        if not (len(self.category) == len(self.timestamp) == len(self.dated) == len(self.candidate_offsets) - 1 == q):
            raise ValueError("one category, timestamp and candidate list per query")
        if not (len(self.reviewer) == len(self.abstained) == len(self.size) == len(self.from_scores) == len(self.order_offsets) - 1 == r):
            raise ValueError("one reviewer, abstention flag, size and ranking per review")
        if r and (self.query.min() < 0 or self.query.max() >= q):
            raise ValueError("review query indices out of range")

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    def positions(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every ranked entry: (review, model, position in that review's ranking)."""
        lengths = np.diff(self.order_offsets)
        review = np.repeat(np.arange(len(lengths)), lengths)
        return review, self.ranked, np.arange(len(self.ranked)) - self.order_offsets[:-1][review]

    def statistics(self, statistics: frozenset[str] = CORE_STATISTICS) -> Statistics:
        """The core statistics of these reviews, exactly as the store reduction computes them."""
        lists = [self.ranked[a:b].tolist() for a, b in zip(self.order_offsets[:-1], self.order_offsets[1:])]
        table = pa.table({"reviewer": pa.array(self.reviewer, pa.int64()), "order": pa.array(lists, pa.list_(pa.int64()))})
        n = id_space(self.candidates, self.reviewer)
        partial = reduce_table(table, "reviews", n, statistics, n <= DENSE_MAX_AGENTS)
        name_order = np.zeros(n, np.int64)
        name_order[list(self.name_order)] = list(self.name_order.values())
        return finalize("reviews", partial, statistics, {"agents": name_order})


def id_space(*ids: np.ndarray) -> int:
    """One past the largest store id among `ids` (0 without any): the size of an id space holding them
    (whatever their integer type: `max(initial=-1)` fails on unsigned ones)."""
    return max((int(values.max()) + 1 for values in ids if len(values)), default=0)


def _partial(table: pa.Table, kind: str, n: int) -> tuple[Row, ...]:
    micros = pc.cast(table.column("timestamp"), pa.int64()).to_pylist()
    rows = zip(table.column("query_id").to_pylist(), table.column("reviewer").to_pylist(), micros,
               table.column("category").to_pylist(), table.column("abstained").to_pylist(),
               table.column("models").to_pylist(), table.column("order").to_pylist(), table.column("order_from").to_pylist())
    return tuple(sorted(
        (q, int(r), t is not None, t or 0, c is not None, c or "", bool(a), tuple(sorted(m)), tuple(o), f == "scores")
        for q, r, t, c, a, m, o, f in rows
    ))


def _merge(a: tuple[Row, ...], b: tuple[Row, ...]) -> tuple[Row, ...]:
    return tuple(sorted(a + b))


def _encode(rows: tuple[Row, ...]) -> Arrays:
    return table_arrays(_rows_table(rows))


def _decode(arrays: Arrays) -> tuple[Row, ...]:
    table = arrays_table(arrays).cast(ROW_SCHEMA)
    columns = [table.column(name).to_pylist() for name in ROW_SCHEMA.names]
    return tuple((q, r, d, t, c, category, a, tuple(m), tuple(o), f) for q, r, d, t, c, category, a, m, o, f in zip(*columns))


def _rows_table(rows: Sequence[Row]) -> pa.Table:
    columns = list(zip(*rows)) if rows else [()] * len(ROW_SCHEMA)
    return pa.table([pa.array(column, field.type) for column, field in zip(columns, ROW_SCHEMA)], schema=ROW_SCHEMA)


def _latest(rows: Sequence[Row]) -> list[Row]:
    """Of sorted rows, the last of each (query, reviewer): a later review replaces an earlier one."""
    return [row for i, row in enumerate(rows) if i + 1 == len(rows) or rows[i + 1][:2] != row[:2]]


def council_reviews(rows: tuple[Row, ...], name_order: np.ndarray) -> CouncilReviews:
    """Group merged rows by query; of several reviews by one reviewer of one query, keep the latest."""
    kept = _latest(rows)
    return Held.of_table(_rows_table(kept)).council_reviews(len(rows) - len(kept), name_order)


def sorted_distinct(keys: np.ndarray, bound: int) -> np.ndarray:
    """The distinct values of `keys` (integers in [0, bound)), sorted: marked in a table of
    `bound` flags where it is not much larger than the keys (10x faster than `np.unique`), else sorted."""
    if bound <= 8 * len(keys) + 4096:
        seen = np.zeros(bound, bool)
        seen[keys] = True
        return np.flatnonzero(seen).astype(np.int64)
    keys = np.sort(keys)
    return keys[np.r_[True, keys[1:] != keys[:-1]]] if len(keys) else keys


ABSTAINED, FROM_SCORES, DATED, CATEGORISED, OWN_MODELS = 1, 2, 4, 8, 16  # bits of a kept review's flags
HELD_FORMAT = 1  # the layout of `Held` in a snapshot (a snapshot without it, or of another, is built again)


def narrowed(values: np.ndarray) -> np.ndarray:
    """`values` (integers >= 0) in the smallest unsigned type that holds them, whatever their type
    (so that arrays of the same values have the same bytes however they were built): a snapshot is
    read, checked and written whole every night, and its bytes are most of what that costs."""
    return values.astype(np.min_scalar_type(int(values.max(initial=0))), copy=False)


@dataclass(frozen=True)
class Ragged:
    """A list per item: item i's values are `values[offsets[i]:offsets[i+1]]`, offsets the running sum of `lengths`."""

    lengths: np.ndarray
    values: np.ndarray

    @classmethod
    def of_list(cls, array: pa.Array) -> Ragged:
        """Of an Arrow list array (a null list: empty)."""
        array = pc.fill_null(array, pa.scalar([], array.type)) if array.null_count else array
        return cls(np.asarray(pc.list_value_length(array).to_numpy(zero_copy_only=False), np.int64),
                   np.asarray(pc.list_flatten(array).to_numpy(zero_copy_only=False)))

    @classmethod
    def of_strings(cls, array: pa.Array) -> Ragged:
        """Of an Arrow string array, as UTF-8 bytes (a null string: empty)."""
        array = pc.fill_null(array, "").cast(pa.large_string())
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks() if array.num_chunks else pa.array([], pa.large_string())
        offsets = np.frombuffer(array.buffers()[1], np.int64, len(array) + 1, array.offset * 8)
        data = array.buffers()[2]
        values = np.frombuffer(data, np.uint8)[offsets[0]:offsets[-1]] if data is not None else np.zeros(0, np.uint8)
        return cls(np.diff(offsets), values)

    @cached_property
    def offsets(self) -> np.ndarray:
        return running_sum(self.lengths)

    def strings(self, valid: np.ndarray | None = None) -> pa.LargeStringArray:
        """The items as strings (None where `valid` is false)."""
        bitmap = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
        return pa.LargeStringArray.from_buffers(len(self.lengths), pa.py_buffer(self.offsets), pa.py_buffer(self.values), bitmap)

    def spliced(self, drop: np.ndarray, at: np.ndarray, new: Ragged) -> Ragged:
        """Items `drop` (sorted) removed and `new`'s items put before the items `at` (one per new
        item, nondecreasing; positions before the removal; `len(self)` for the end)."""
        offsets = self.offsets
        dropped = ranges(offsets[drop], offsets[drop + 1])
        return Ragged(spliced(self.lengths, drop, at, new.lengths),
                      spliced(self.values, dropped, np.repeat(offsets[at], new.lengths), new.values))

    def arrays(self, prefix: str) -> Arrays:
        return {f"{prefix}.lengths": narrowed(self.lengths), f"{prefix}.values": narrowed(self.values)}

    @classmethod
    def from_arrays(cls, arrays: Arrays, prefix: str) -> Ragged:
        return cls(arrays[f"{prefix}.lengths"], arrays[f"{prefix}.values"])


def running_sum(lengths: np.ndarray) -> np.ndarray:
    """0 then the running sum of `lengths`, as int64 (summed into its place: numpy's cumsum of
    narrow integers into a new int64 array is 8x as slow)."""
    sums = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, dtype=np.int64, out=sums[1:])
    return sums


def ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """The integers of every range [starts[i], stops[i]), concatenated (without a Python loop)."""
    lengths = stops - starts
    return np.repeat(starts - running_sum(lengths)[:-1], lengths) + np.arange(lengths.sum(), dtype=np.int64)


def spliced(values: np.ndarray, drop: np.ndarray, at: np.ndarray, new: np.ndarray) -> np.ndarray:
    """`values` without the positions `drop` (sorted), with `new[j]` put before position `at[j]`
    (positions before the removal, nondecreasing): two passes over the values, whatever their number.
    The type is the narrowest holding both (a new model id may not fit the kept one's)."""
    if not len(new):
        fitting = values.dtype  # nothing inserted: the kept type (an empty array of int64 would widen it)
    elif new.dtype.kind in "iu" and new.min() >= 0:
        fitting = np.min_scalar_type(int(new.max()))
    else:
        fitting = new.dtype
    kind = np.promote_types(values.dtype, fitting)
    kept = np.delete(values, drop) if len(drop) else values
    return np.insert(kept.astype(kind, copy=False), at - np.searchsorted(drop, at), new.astype(kind, copy=False))


@dataclass(frozen=True)
class Held:
    """The kept reviews between nightlies (`Extra.kept`), as plain arrays, finalized per query, so that
    new reviews recompute only the queries they name and splice them in by position.

    Per query (sorted by id): `query_ids` (UTF-8 bytes), `reviews` (its number of kept reviews, which
    follow in reviewer order), `candidates` (the union of its reviews' models, sorted), `dated` and
    `micros` (the latest review time, 0 if undated), `categorised` and `category` (the smallest).
    Per review: `reviewer`, `flags` (`ABSTAINED`...), `order` (the ranking). Only for the reviews
    flagged so: `models` (`OWN_MODELS`: those that saw other models than their query's candidates, which
    all the others saw), `review_micros` (`DATED`), `review_category` (`CATEGORISED`).
    """

    query_ids: Ragged
    reviews: np.ndarray
    candidates: Ragged
    dated: np.ndarray
    micros: np.ndarray
    categorised: np.ndarray
    category: Ragged
    reviewer: np.ndarray
    flags: np.ndarray
    order: Ragged
    models: Ragged
    review_micros: np.ndarray
    review_category: Ragged

    RAGGED = ("query_ids", "candidates", "category", "order", "models", "review_category")
    SIGNED = ("micros", "review_micros")  # times before 1970 are negative: never narrowed

    @classmethod
    def of_table(cls, table: pa.Table) -> Held:
        """The reviews of `table` (`ROW_SCHEMA`, one row per query and reviewer, in that order): per
        query the union of the answering models, the smallest category and the latest time, computed
        on whole columns (no Python loop over the reviews: a first night's table is the whole log)."""
        r = table.num_rows
        query_id = table.column("query_id").combine_chunks()
        new_query = np.r_[True, pc.not_equal(query_id[1:], query_id[:-1]).to_numpy(zero_copy_only=False)] if r else np.zeros(0, bool)
        starts = np.flatnonzero(new_query)
        query = running_sum(new_query)[1:] - 1
        queries = len(starts)
        categorised = table.column("categorised").to_numpy(zero_copy_only=False).astype(bool)
        category = pc.if_else(table.column("categorised"), table.column("category"), pa.scalar(None, pa.string()))
        smallest = pa.table({"query": query, "category": category}).group_by("query").aggregate([("category", "min")])
        smallest = smallest.sort_by("query").column("category_min")
        dated = table.column("dated").to_numpy(zero_copy_only=False).astype(bool)
        micros = table.column("micros").to_numpy()
        latest = np.where(dated, micros, np.iinfo(np.int64).min)
        any_dated = np.logical_or.reduceat(dated, starts) if queries else np.zeros(0, bool)
        stamp = np.where(any_dated, np.maximum.reduceat(latest, starts), 0) if queries else np.zeros(0, np.int64)
        models = Ragged.of_list(table.column("models").combine_chunks())
        answering = models.values.astype(np.int64)
        width = int(answering.max(initial=0)) + 1
        review_of = np.repeat(np.arange(r), models.lengths)
        pairs = sorted_distinct(query[review_of] * width + answering, queries * width)
        candidates = Ragged(np.bincount(pairs // width, minlength=queries).astype(np.int64), pairs % width)
        # A review saw its query's candidates (the common case, kept as a flag) unless it saw fewer
        # models (the candidates are the union of its query's models, so as many means the same ones).
        own = models.lengths != candidates.lengths[query]
        flags = (table.column("abstained").to_numpy(zero_copy_only=False).astype(np.uint8) * ABSTAINED
                 | table.column("from_scores").to_numpy(zero_copy_only=False).astype(np.uint8) * FROM_SCORES
                 | dated.astype(np.uint8) * DATED | categorised.astype(np.uint8) * CATEGORISED | own.astype(np.uint8) * OWN_MODELS)
        own_models = Ragged.of_list(table.column("models").combine_chunks().filter(pa.array(own)))
        return cls(Ragged.of_strings(query_id.take(pa.array(starts))), np.diff(np.r_[starts, r]).astype(np.int64), candidates,
                   any_dated, stamp.astype(np.int64), smallest.is_valid().to_numpy(zero_copy_only=False).astype(bool),
                   Ragged.of_strings(smallest), np.asarray(table.column("reviewer").to_numpy(), np.int64), flags,
                   Ragged.of_list(table.column("order").combine_chunks()), own_models, micros[dated].astype(np.int64),
                   Ragged.of_strings(table.column("category").filter(pa.array(categorised))))

    @classmethod
    def files(cls) -> frozenset[str]:
        """The names of the arrays of `arrays()` as large as the reviews (`Kept.files`)."""
        return frozenset(name for f in fields(cls) for name in ([f"{f.name}.lengths", f"{f.name}.values"] if f.name in cls.RAGGED else [f.name]))

    def arrays(self) -> Arrays:
        ragged = {name: getattr(self, name) for name in self.RAGGED}
        plain = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ragged}
        return ({"held.format": np.asarray(HELD_FORMAT, np.int64)}
                | {name: value.astype(np.uint8) if value.dtype == bool else value if name in self.SIGNED else narrowed(value)
                   for name, value in plain.items()}
                | {k: v for name, value in ragged.items() for k, v in value.arrays(name).items()})

    @classmethod
    def from_arrays(cls, arrays: Arrays) -> Held | None:
        """The kept reviews of a snapshot; None if it holds another layout (an earlier version's)."""
        if "held.format" not in arrays or int(arrays["held.format"]) != HELD_FORMAT:
            return None
        return cls(**{f.name: Ragged.from_arrays(arrays, f.name) if f.name in cls.RAGGED
                      else arrays[f.name].astype(bool) if f.name in ("dated", "categorised") else arrays[f.name]
                      for f in fields(cls)})

    @cached_property
    def review_offsets(self) -> np.ndarray:
        return running_sum(self.reviews)

    @cached_property
    def flagged(self) -> dict[int, np.ndarray]:
        """By flag (`OWN_MODELS`, `DATED`, `CATEGORISED`): the reviews so flagged, in order."""
        return {bit: np.flatnonzero(self.flags & bit) for bit in (OWN_MODELS, DATED, CATEGORISED)}

    def flagged_before(self, bit: int, reviews: np.ndarray) -> np.ndarray:
        """The number of reviews flagged `bit` before each of `reviews`: where a review's values are
        among those kept for the flagged ones only."""
        return np.searchsorted(self.flagged[bit], reviews)

    def rows(self, queries: np.ndarray) -> list[Row]:
        """The kept rows of the queries at these positions (a Python loop over their reviews only)."""
        offsets = self.review_offsets
        picked = ranges(offsets[queries], offsets[queries + 1])
        query_of = np.repeat(queries, self.reviews[queries])
        ids = self.query_ids.strings().take(pa.array(queries)).to_pylist()
        names = dict(zip(queries.tolist(), ids))
        flags = self.flags[picked]
        order, candidates, models = self.order.offsets, self.candidates.offsets, self.models.offsets
        own, dated, categorised = (self.flagged_before(bit, picked) for bit in (OWN_MODELS, DATED, CATEGORISED))
        category = self.review_category.strings()
        rows = []
        for i, (r, q, f) in enumerate(zip(picked.tolist(), query_of.tolist(), flags.tolist())):
            answering = (self.models.values[models[own[i]]:models[own[i] + 1]] if f & OWN_MODELS
                         else self.candidates.values[candidates[q]:candidates[q + 1]])
            rows.append((names[q], int(self.reviewer[r]), bool(f & DATED), int(self.review_micros[dated[i]]) if f & DATED else 0,
                         bool(f & CATEGORISED), category[int(categorised[i])].as_py() if f & CATEGORISED else "",
                         bool(f & ABSTAINED), tuple(answering.tolist()), tuple(self.order.values[order[r]:order[r + 1]].tolist()),
                         bool(f & FROM_SCORES)))
        return rows

    def spliced(self, drop: np.ndarray, at: np.ndarray, new: Held) -> Held:
        """These reviews without the queries `drop` (sorted), with `new`'s queries put before the
        queries `at` (one per new query, nondecreasing; `n_queries` for the end)."""
        offsets = self.review_offsets
        drop_reviews = ranges(offsets[drop], offsets[drop + 1])
        at_reviews = np.repeat(offsets[at], new.reviews)

        def subset(bit: int) -> tuple[np.ndarray, np.ndarray]:
            return (self.flagged_before(bit, drop_reviews[self.flags[drop_reviews] & bit != 0]),
                    self.flagged_before(bit, at_reviews[new.flags & bit != 0]))

        own, dated, categorised = subset(OWN_MODELS), subset(DATED), subset(CATEGORISED)
        return Held(self.query_ids.spliced(drop, at, new.query_ids), spliced(self.reviews, drop, at, new.reviews),
                    self.candidates.spliced(drop, at, new.candidates), spliced(self.dated, drop, at, new.dated),
                    spliced(self.micros, drop, at, new.micros), spliced(self.categorised, drop, at, new.categorised),
                    self.category.spliced(drop, at, new.category), spliced(self.reviewer, drop_reviews, at_reviews, new.reviewer),
                    spliced(self.flags, drop_reviews, at_reviews, new.flags), self.order.spliced(drop_reviews, at_reviews, new.order),
                    self.models.spliced(*own, new.models), spliced(self.review_micros, *dated, new.review_micros),
                    self.review_category.spliced(*categorised, new.review_category))

    def council_reviews(self, duplicates: int, name_order: np.ndarray) -> CouncilReviews:
        queries = len(self.reviews)
        query = np.repeat(np.arange(queries, dtype=np.int64), self.reviews)
        own = self.flags & OWN_MODELS != 0
        size = np.repeat(self.candidates.lengths.astype(np.int64), self.reviews)
        size[own] = self.models.lengths
        candidates, reviewer = narrowed(self.candidates.values), narrowed(self.reviewer)
        seen = np.zeros(id_space(candidates, reviewer), bool)
        seen[self.candidates.values] = seen[self.reviewer] = True
        ids = np.flatnonzero(seen)  # the agents of these reviews, sorted
        return CouncilReviews(
            self.query_ids.strings(),
            tuple(self.category.strings(self.categorised).to_pylist()) if self.categorised.any() else (None,) * queries,
            self.micros.astype(np.int64, copy=False), self.dated.astype(bool, copy=False), self.candidates.offsets, candidates, query,
            reviewer, self.flags & ABSTAINED != 0, size, self.flags & FROM_SCORES != 0, self.order.offsets, narrowed(self.order.values),
            dict(zip(ids.tolist(), sort_positions(name_order[ids]).tolist())), duplicates,
        )


def _finalize(rows: tuple[Row, ...], present: np.ndarray, name_orders: Mapping[str, np.ndarray]) -> CouncilReviews:
    return council_reviews(rows, name_orders["agents"])


def _finalize_kept(rows: tuple[Row, ...], present: np.ndarray, name_orders: Mapping[str, np.ndarray]) -> tuple[CouncilReviews, Arrays]:
    """The reviews, and their snapshot (`Kept`): the kept reviews (`Held`) and how many earlier ones were dropped."""
    kept = _latest(rows)
    held = Held.of_table(_rows_table(kept))
    duplicates = len(rows) - len(kept)
    return held.council_reviews(duplicates, name_orders["agents"]), _snapshot(held, duplicates)


def _snapshot(held: Held, duplicates: int) -> Arrays:
    return held.arrays() | {"duplicates": np.asarray(duplicates, np.int64)}


def _extend(kept: Arrays, tail: tuple[Row, ...] | None, present: np.ndarray,
            name_orders: Mapping[str, np.ndarray]) -> tuple[CouncilReviews, Arrays] | None:
    """The reviews of a snapshot and of the merged rows of the units it lacks: only the queries
    these rows name are merged again (with the snapshot's kept rows of those queries, since a kept
    row is the latest of its query and reviewer among all the earlier ones) and finalized, then
    spliced in by position: each named query is found among the sorted kept ids by a binary search,
    replacing the kept query of the same id or put before the first larger one. The cost beyond
    the new rows is a few passes over the snapshot's arrays, no sort nor grouping of them. Reviews
    never depend on order of arrival, so there is no late data; None for a snapshot of another layout."""
    held = Held.from_arrays(kept)
    if held is None:
        return None
    duplicates = int(kept["duplicates"])
    if not tail:  # every unit in the snapshot: it stays as it is
        return held.council_reviews(duplicates, name_orders["agents"]), kept
    named = sorted({row[0] for row in tail})
    ids = held.query_ids.strings()
    at = pl.from_arrow(ids).search_sorted(pl.Series(named, dtype=pl.String), side="left").to_numpy().astype(np.int64)
    inside = np.flatnonzero(at < len(ids))
    found = np.zeros(len(named), bool)
    found[inside] = np.array(ids.take(pa.array(at[inside])).to_pylist(), object) == np.array(named, object)[inside]
    drop = at[found]
    merged = sorted(held.rows(drop) + list(tail))
    latest = _latest(merged)
    duplicates += len(merged) - len(latest)
    held = held.spliced(drop, at, Held.of_table(_rows_table(latest)))
    return held.council_reviews(duplicates, name_orders["agents"]), _snapshot(held, duplicates)


COUNCIL_REVIEWS = register_extra(Extra("council_reviews", {"reviews": COLUMNS}, _partial, _merge, _finalize, _encode, _decode,
                                        resize=same_ids, kept=Kept(_finalize_kept, _extend, unit_partials=False, files=Held.files())))


def council_profile(records: Sequence[dict]) -> tuple[Statistics, list[str]]:
    """Statistics of in-memory review records (dicts as a council emits them): for tests and notebooks.

    The core statistics plus `extra["council_reviews"]`, and the agent names in id order (names
    get ids in sorted order); a record the reviews reader would quarantine raises.
    """
    return statistics_of_records(records, "reviews", CORE_STATISTICS | {"council_reviews"})
