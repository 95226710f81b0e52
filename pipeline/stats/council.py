"""The `council_reviews` statistic: every council review, grouped by query, for [Council] scoring.

Council Borda needs what the core statistics lose: which query a review belongs to, who reviewed
(self-votes), abstentions, each query's number of answers N, category and time. A partial value
is the sorted tuple of the unit's review rows; merging sorts the union by the whole row (a total
key), so the merged value is the same whatever the partitioning and the merge order. It is
O(reviews) in memory, which suits council logs (one row per reviewer and query).

The same reviews reduce to the core statistics through `pipeline.stats.reduce.review_orders`
(self-votes excluded); `CouncilReviews.statistics()` does that in memory, so that other methods
rate exactly these reviews next to council Borda.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.logs.records import RawRecords, _frame_from_objects
from pipeline.logs.reviews import read_reviews
from pipeline.stats.counts import Statistics
from pipeline.stats.extras import EXTRAS, Extra, register_extra
from pipeline.stats.partials import DENSE_MAX_AGENTS, finalize, weak_order_partial
from pipeline.stats.reduce import STATISTICS, review_orders
from pipeline.store.dictionary import IdMap
from pipeline.store.store import _encode

COLUMNS = ("query_id", "reviewer", "abstained", "models", "order", "order_from", "category", "timestamp")

# (query_id, reviewer, dated, timestamp us, categorised, category, abstained, models, order, from_scores)
Row = tuple[str, int, bool, int, bool, str, bool, tuple[int, ...], tuple[int, ...], bool]


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
    `names` maps store ids to names, for the record's alphabetical tie-break only.
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
    names: dict[int, str] = field(default_factory=dict)
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

    def statistics(self, want: frozenset[str] = STATISTICS) -> Statistics:
        """The core statistics of these reviews, exactly as the store reduction computes them."""
        lists = [self.ranked[a:b].tolist() for a, b in zip(self.order_offsets[:-1], self.order_offsets[1:])]
        table = pa.table({"reviewer": pa.array(self.reviewer, pa.int64()), "order": pa.array(lists, pa.list_(pa.int64()))})
        n = int(max(self.candidates.max(initial=-1), self.reviewer.max(initial=-1))) + 1
        partial = weak_order_partial(review_orders(table), n, want, n <= DENSE_MAX_AGENTS)
        partial.extra = {name: EXTRAS[name].partial(table, "reviews", n) for name in sorted(want & EXTRAS.keys())}
        return finalize("reviews", partial, want)


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


def council_reviews(rows: tuple[Row, ...], names: dict[int, str]) -> CouncilReviews:
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
    return CouncilReviews(
        tuple(query_ids), tuple(categories), stamp, dated, candidate_offsets, candidate_ids,
        np.array([index[row[0]] for row in kept], np.int64), column(1, np.int64), column(6, bool),
        np.array([len(row[7]) for row in kept], np.int64), column(9, bool), order_offsets, ranked,
        {int(i): names[i] for i in sorted(set(candidate_ids.tolist()) | set(column(1, np.int64).tolist()))},
        len(rows) - len(kept),
    )


def _finalize(rows: tuple[Row, ...], present: np.ndarray, store: object) -> CouncilReviews:
    if store is None:
        raise ValueError("council_reviews needs the store's agent dictionary (model names break ties)")
    return council_reviews(rows, dict(enumerate(store.dictionary("agents").names)))


COUNCIL_REVIEWS = register_extra(Extra("council_reviews", {"reviews": COLUMNS}, _partial, _merge, _finalize))


def council_profile(records: Sequence[dict]) -> Statistics:
    """Statistics of in-memory review records (dicts as a council emits them): for tests and notebooks.

    The records go through the reviews reader (a quarantined record raises), names get ids in
    sorted order, and the result holds the core statistics plus `extra["council_reviews"]`.
    """
    result = read_reviews(RawRecords(_frame_from_objects(list(enumerate(records, start=1))), []), "<memory>")
    if result.rows_quarantined:
        bad = result.quarantined.to_pylist()[0]
        raise ValueError(f"review {bad['line']}: {bad['field']}: {bad['reason']}")
    idmap = IdMap()
    table = _encode("reviews", result.table, {"agents": idmap, "judges": IdMap(), "prompts": IdMap()})
    reviews = council_reviews(_partial(table, "reviews", len(idmap)), dict(enumerate(idmap.names)))
    stats = reviews.statistics()
    return dataclasses.replace(stats, extra={"council_reviews": reviews})
