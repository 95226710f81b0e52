"""The `council_reviews` statistic: every council review, grouped by query, for [Council] scoring.

Council Borda needs what the core statistics lose: which query a review belongs to, who reviewed
(self-votes), abstentions, each query's number of answers N, category and time. A partial value
is the sorted tuple of the unit's review rows; merging sorts the union by the whole row (a total
key), so the merged value is the same whatever the partitioning and the merge order. It is
O(reviews) in memory, which suits council logs (one row per reviewer and query). The reviews are
built from the latest row of each query and reviewer on whole columns (`reviews_of_table`), and
kept between nightlies (`Extra.kept`): new reviews merge again only the queries they name.

The same reviews reduce to the core statistics as the reviews kind says
(`pipeline.logs.reviews.review_orders`, self-votes excluded); `CouncilReviews.statistics()` does
that in memory, so that other methods rate exactly these reviews next to council Borda.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.stats.counts import CORE_STATISTICS, Statistics
from pipeline.stats.encoding import Arrays, arrays_table, table_arrays, table_from_ipc, table_to_ipc
from pipeline.stats.extras import Extra, Kept, register_extra, same_ids
from pipeline.stats.in_memory import statistics_of_records
from pipeline.arrays import sort_positions
from pipeline.stats.partials import DENSE_MAX_AGENTS, finalize
from pipeline.stats.reduce import reduce_table

COLUMNS = ("query_id", "reviewer", "abstained", "models", "order", "order_from", "category", "timestamp")

# (query_id, reviewer, dated, timestamp us, categorised, category, abstained, models, order, from_scores)
Row = tuple[str, int, bool, int, bool, str, bool, tuple[int, ...], tuple[int, ...], bool]
ROW_SCHEMA = pa.schema([("query_id", pa.string()), ("reviewer", pa.int64()), ("dated", pa.bool_()), ("micros", pa.int64()),
                        ("categorised", pa.bool_()), ("category", pa.string()), ("abstained", pa.bool_()),
                        ("models", pa.list_(pa.int64())), ("order", pa.list_(pa.int64())), ("from_scores", pa.bool_())])


def _csr(lists: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.array([len(x) for x in lists], dtype=np.int64)
    values = np.array([v for x in lists for v in x], dtype=np.int64)
    return np.r_[0, np.cumsum(lengths)].astype(np.int64), values


@dataclass(frozen=True, eq=False)
class CouncilReviews:
    """Reviews (one per query and reviewer) in (query, reviewer) order; queries sorted by id.

    Per query q: `query_ids[q]`, `category[q]` (the smallest category its reviews give, None if
    none does), `timestamp[q]` (the latest review time, UTC microseconds; `dated[q]` false if no
    review has one) and its answering models `candidates[candidate_offsets[q]:candidate_offsets[q+1]]`
    (store ids). Per review r: `query[r]`, `reviewer[r]`, `abstained[r]`, `size[r]` (N, the number
    of answers it saw), `from_scores[r]` (ranking derived from scores) and the models in ranking
    order `ranked[order_offsets[r]:order_offsets[r+1]]` (position = index in that slice).
    `name_order` maps each store id of these reviews to the position of its name among theirs in
    code-point order: the record's alphabetical tie-break, without the names.
    """

    query_ids: tuple[str, ...]
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
        n = int(max(self.candidates.max(initial=-1), self.reviewer.max(initial=-1))) + 1
        partial = reduce_table(table, "reviews", n, statistics, n <= DENSE_MAX_AGENTS)
        name_order = np.zeros(n, np.int64)
        name_order[list(self.name_order)] = list(self.name_order.values())
        return finalize("reviews", partial, statistics, {"agents": name_order})


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
    return reviews_of_table(_rows_table(kept), len(rows) - len(kept), name_order)


def sorted_distinct(keys: np.ndarray, bound: int) -> np.ndarray:
    """The distinct values of `keys` (integers in [0, bound)), sorted: marked in a table of
    `bound` flags where it is not much larger than the keys (10x faster than `np.unique`), else sorted."""
    if bound <= 8 * len(keys) + 4096:
        seen = np.zeros(bound, bool)
        seen[keys] = True
        return np.flatnonzero(seen).astype(np.int64)
    keys = np.sort(keys)
    return keys[np.r_[True, keys[1:] != keys[:-1]]] if len(keys) else keys


def reviews_of_table(table: pa.Table, duplicates: int, name_order: np.ndarray) -> CouncilReviews:
    """The reviews of `table` (`ROW_SCHEMA`, one row per query and reviewer, in that order): per
    query the union of the answering models, the smallest category and the latest time, computed
    on whole columns (no Python loop over the reviews, which a nightly's kept table is as large as)."""
    r = table.num_rows
    query_id = table.column("query_id").combine_chunks()
    new_query = np.r_[True, pc.not_equal(query_id[1:], query_id[:-1]).to_numpy(zero_copy_only=False)] if r else np.zeros(0, bool)
    starts = np.flatnonzero(new_query)
    query = np.cumsum(new_query, dtype=np.int64) - 1
    queries = len(starts)
    category = pa.table({"query": query, "category": pc.if_else(table.column("categorised"), table.column("category"), pa.scalar(None, pa.string()))})
    smallest = category.group_by("query").aggregate([("category", "min")]).sort_by("query").column("category_min")
    dated = table.column("dated").to_numpy()
    latest = np.where(dated, table.column("micros").to_numpy(), np.iinfo(np.int64).min)
    any_dated = np.logical_or.reduceat(dated, starts) if queries else np.zeros(0, bool)
    stamp = np.where(any_dated, np.maximum.reduceat(latest, starts), 0) if queries else np.zeros(0, np.int64)
    models = table.column("models").combine_chunks()
    answering = np.asarray(pc.list_flatten(models).to_numpy(), np.int64)
    width = int(answering.max(initial=0)) + 1
    pairs = sorted_distinct(query[np.asarray(pc.list_parent_indices(models).to_numpy(), np.int64)] * width + answering,
                            queries * width)
    candidate_offsets = np.r_[0, np.cumsum(np.bincount(pairs // width, minlength=queries))].astype(np.int64)
    candidates = pairs % width
    order = table.column("order").combine_chunks()
    ranked = np.asarray(pc.list_flatten(order).to_numpy(), np.int64)
    order_offsets = np.r_[0, np.cumsum(pc.list_value_length(order).to_numpy(zero_copy_only=False))].astype(np.int64)
    reviewer = np.asarray(table.column("reviewer").to_numpy(), np.int64)
    ids = np.flatnonzero(np.bincount(np.r_[candidates, reviewer]))  # the agents of these reviews, sorted
    return CouncilReviews(
        tuple(query_id.take(pa.array(starts)).to_pylist()), tuple(smallest.to_pylist()), stamp.astype(np.int64),
        any_dated.astype(bool), candidate_offsets, candidates, query, reviewer, table.column("abstained").to_numpy().astype(bool),
        np.asarray(pc.list_value_length(models).to_numpy(zero_copy_only=False), np.int64), table.column("from_scores").to_numpy().astype(bool),
        order_offsets, ranked, dict(zip(ids.tolist(), sort_positions(name_order[ids]).tolist())), duplicates,
    )


def _finalize(rows: tuple[Row, ...], present: np.ndarray, name_orders: Mapping[str, np.ndarray]) -> CouncilReviews:
    return council_reviews(rows, name_orders["agents"])


def _finalize_kept(rows: tuple[Row, ...], present: np.ndarray, name_orders: Mapping[str, np.ndarray]) -> tuple[CouncilReviews, Arrays]:
    """The reviews, and their snapshot (`Kept`): the latest row of each query and reviewer, in
    that order, as a table, and how many earlier ones were dropped."""
    kept = _latest(rows)
    [table] = _narrowed([_rows_table(kept)])
    duplicates = len(rows) - len(kept)
    return reviews_of_table(table, duplicates, name_orders["agents"]), _snapshot(table, duplicates)


IDS = ("reviewer", "models", "order")  # the columns of agent ids


def _narrowed(tables: Sequence[pa.Table]) -> list[pa.Table]:
    """The tables with agent ids in the smallest unsigned type that holds them all: a kept table
    is sorted, encoded and decoded every night, and a list of bytes moves 8 times as fast."""
    largest = max([0] + [pc.max(pc.list_flatten(t.column(c)) if c != "reviewer" else t.column(c)).as_py() or 0
                         for t in tables for c in IDS if t.num_rows])
    ids = pa.from_numpy_dtype(np.min_scalar_type(largest))
    schema = pa.schema([pa.field(f.name, pa.list_(ids) if f.name in IDS[1:] else ids) if f.name in IDS else f for f in ROW_SCHEMA])
    return [t.cast(schema) for t in tables]


def _snapshot(table: pa.Table, duplicates: int) -> Arrays:
    return {"table": table_to_ipc(table), "duplicates": np.asarray(duplicates, np.int64)}


def _extend(kept: Arrays, tail: tuple[Row, ...] | None, present: np.ndarray,
            name_orders: Mapping[str, np.ndarray]) -> tuple[CouncilReviews, Arrays]:
    """The reviews of a snapshot and of the merged rows of the units it lacks: only the queries
    these rows name are merged again (from the snapshot's kept rows of those queries, since a
    kept row is the latest of its query and reviewer among all the earlier ones), then put in
    their place by query id. Reviews never depend on order of arrival, so there is no late data."""
    table = table_from_ipc(kept["table"])
    duplicates = int(kept["duplicates"])
    if tail:
        named = pa.array(sorted({row[0] for row in tail}), pa.string())
        touched = pc.is_in(table.column("query_id"), value_set=named)
        earlier = _decode(table_arrays(table.filter(touched).cast(ROW_SCHEMA)))
        merged = tuple(sorted(earlier + tail))
        latest = _latest(merged)
        duplicates += len(merged) - len(latest)
        table = pa.concat_tables(_narrowed([table.filter(pc.invert(touched)), _rows_table(latest)]))
        table = table.take(pc.sort_indices(table, [("query_id", "ascending"), ("reviewer", "ascending")]))
    return reviews_of_table(table, duplicates, name_orders["agents"]), _snapshot(table, duplicates)


COUNCIL_REVIEWS = register_extra(Extra("council_reviews", {"reviews": COLUMNS}, _partial, _merge, _finalize, _encode, _decode,
                                        resize=same_ids, kept=Kept(_finalize_kept, _extend)))


def council_profile(records: Sequence[dict]) -> tuple[Statistics, list[str]]:
    """Statistics of in-memory review records (dicts as a council emits them): for tests and notebooks.

    The core statistics plus `extra["council_reviews"]`, and the agent names in id order (names
    get ids in sorted order); a record the reviews reader would quarantine raises.
    """
    return statistics_of_records(records, "reviews", CORE_STATISTICS | {"council_reviews"})
