"""The `council_reviews` statistic: every council review, grouped by query, for [Council] scoring.

Council Borda needs what the core statistics lose: which query a review belongs to, who reviewed
(self-votes), abstentions, each query's number of answers N, category and time. A partial value
is the sorted tuple of the unit's review rows; merging sorts the union by the whole row (a total
key), so the merged value is the same whatever the partitioning and the merge order. It is
O(reviews) in memory, which suits council logs (one row per reviewer and query).

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
from pipeline.stats.encoding import Arrays, arrays_table, table_arrays
from pipeline.stats.extras import Extra, register_extra, same_ids
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
    return table_arrays(pa.Table.from_pylist([dict(zip(ROW_SCHEMA.names, row)) for row in rows], schema=ROW_SCHEMA))


def _decode(arrays: Arrays) -> tuple[Row, ...]:
    table = arrays_table(arrays).cast(ROW_SCHEMA)
    columns = [table.column(name).to_pylist() for name in ROW_SCHEMA.names]
    return tuple((q, r, d, t, c, category, a, tuple(m), tuple(o), f) for q, r, d, t, c, category, a, m, o, f in zip(*columns))


def council_reviews(rows: tuple[Row, ...], name_order: np.ndarray) -> CouncilReviews:
    """Group merged rows by query; of several reviews by one reviewer of one query, keep the latest."""
    kept = [row for i, row in enumerate(rows) if i + 1 == len(rows) or rows[i + 1][:2] != row[:2]]
    query_ids = sorted({row[0] for row in kept})
    index = {q: i for i, q in enumerate(query_ids)}
    candidates: list[set[int]] = [set() for _ in query_ids]
    categories: list[str | None] = [None] * len(query_ids)
    stamp = np.zeros(len(query_ids), np.int64)
    dated = np.zeros(len(query_ids), bool)
    for q, _, has_time, micros, has_category, category, _, models, _, _ in kept:
        i = index[q]
        candidates[i].update(models)
        if has_category and (categories[i] is None or category < categories[i]):
            categories[i] = category
        if has_time and (not dated[i] or micros > stamp[i]):
            stamp[i], dated[i] = micros, True
    candidate_offsets, candidate_ids = _csr([sorted(c) for c in candidates])
    order_offsets, ranked = _csr([row[8] for row in kept])
    column = lambda k, dtype: np.array([row[k] for row in kept], dtype=dtype)  # noqa: E731
    ids = np.union1d(candidate_ids, column(1, np.int64))
    return CouncilReviews(
        tuple(query_ids), tuple(categories), stamp, dated, candidate_offsets, candidate_ids,
        np.array([index[row[0]] for row in kept], np.int64), column(1, np.int64), column(6, bool),
        np.array([len(row[7]) for row in kept], np.int64), column(9, bool), order_offsets, ranked,
        dict(zip(ids.tolist(), sort_positions(name_order[ids]).tolist())), len(rows) - len(kept),
    )


def _finalize(rows: tuple[Row, ...], present: np.ndarray, name_orders: Mapping[str, np.ndarray]) -> CouncilReviews:
    return council_reviews(rows, name_orders["agents"])


COUNCIL_REVIEWS = register_extra(Extra("council_reviews", {"reviews": COLUMNS}, _partial, _merge, _finalize, _encode, _decode,
                                        resize=same_ids))


def council_profile(records: Sequence[dict]) -> tuple[Statistics, list[str]]:
    """Statistics of in-memory review records (dicts as a council emits them): for tests and notebooks.

    The core statistics plus `extra["council_reviews"]`, and the agent names in id order (names
    get ids in sorted order); a record the reviews reader would quarantine raises.
    """
    return statistics_of_records(records, "reviews", CORE_STATISTICS | {"council_reviews"})
