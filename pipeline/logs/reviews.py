"""Reviews: one council reviewer's ranking of the anonymised answers to one query [Council].

A record as a council emits it (JSON array or JSONL; CSV and Parquet work with the nested values
as JSON text):
```json
{"query_id": "q-17", "reviewer": "gpt-4o", "ranking": ["Response B", "Response A"],
 "abstained": false, "label_to_model": {"Response A": "claude-3", "Response B": "gpt-4o"},
 "scores": {"Response A": 6, "Response B": 8}, "category": "coding", "timestamp": "2024-11-29T10:00:00Z"}
```
The record's own shape is read too: `model` for the reviewer and `ranking`, `scores` and
`abstained` nested in `parsed_ranking` (a top-level value wins over a nested one).

Canonical columns: `query_id`, `reviewer`, `abstained`, `ranking` (labels as given), `scores`
(canonical JSON text or null), `labels` and `models` (label_to_model as two parallel lists, labels
sorted), `order` (the models in ranking order, empty for an abstention), `order_from` (`ranking`,
`scores` or null), `category`, `timestamp`. `order` applies the record's score/rank mismatch rule:
the explicit ranking wins; with no ranking, the scored labels by decreasing score (equal scores in
label order, the record's stable sort over a mapping whose keys the reader sees sorted).

Quarantined (field and reason): missing query_id or reviewer; label_to_model missing, empty, not
a mapping of labels to model names, or naming one model twice; `abstained` not a boolean; a
ranking that is not a list of labels, names a label not in label_to_model, or names one twice;
scores that are not numbers for known labels; a review that neither abstains nor ranks (empty
ranking, no scores); an unparsable timestamp; a second review of a query by the same reviewer
(in the file, or in an earlier file of the store);
a label_to_model that differs from the one of an earlier review of the same query in the file.

Stored: `reviewer`, `models` and `order` as ids of the agents dictionary (reviewers and models
share it: a reviewer is usually also a model, which self-vote exclusion needs). Each review that
does not abstain is a strict order over the models it ranks, its reviewer's own model left out.
"""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import column
from pipeline.logs.kinds import LogKind, register_kind
from pipeline.logs.orders import MAX_RANKED, WeakOrders
from pipeline.logs.records import LINE, RawRecords
from pipeline.logs.triage import Check, ReadResult, Triage, text

SCHEMA = pa.schema(
    [
        ("query_id", pa.string()),
        ("reviewer", pa.string()),
        ("abstained", pa.bool_()),
        ("ranking", pa.list_(pa.string())),
        ("scores", pa.string()),
        ("labels", pa.list_(pa.string())),
        ("models", pa.list_(pa.string())),
        ("order", pa.list_(pa.string())),
        ("order_from", pa.string()),
        ("category", pa.string()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
    ]
)
_PARSED = ("abstained", "ranking", "scores", "labels", "models", "order", "order_from", "mapping_key", "problem_field", "problem")
_LISTS = ("ranking", "labels", "models", "order")


class _Invalid(ValueError):
    def __init__(self, field: str, reason: str):
        super().__init__(reason)
        self.field = field


def _value(raw: object, field: str, invalid: str) -> object:
    """A nested value: JSON text (CSV, JSON readers) or already a Python value (Parquet)."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):  # not JSON, or nested too deep
            raise _Invalid(field, invalid) from None
    return raw


def _mapping(raw: object) -> dict[str, str]:
    invalid = "label_to_model must be a non-empty mapping of labels to models"
    mapping = _value(raw, "label_to_model", invalid)
    if isinstance(mapping, list) and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in mapping):
        mapping = dict(mapping)  # Parquet map columns arrive as (key, value) pairs
    if not isinstance(mapping, dict) or not mapping:
        raise _Invalid("label_to_model", invalid)
    if len(mapping) > MAX_RANKED:
        raise _Invalid("label_to_model", f"label_to_model has more than {MAX_RANKED:,} labels")
    if not all(isinstance(k, str) and k and isinstance(v, str) and v.strip() for k, v in mapping.items()):
        raise _Invalid("label_to_model", "label_to_model must map labels to model names (non-empty strings)")
    models = [v.strip() for v in mapping.values()]
    if len(set(models)) != len(models):
        twice = sorted(m for m in set(models) if models.count(m) > 1)[0]
        raise _Invalid("label_to_model", f"label_to_model gives model {twice!r} two labels")
    return {k: v.strip() for k, v in mapping.items()}


def _ranking(raw: object, mapping: dict[str, str]) -> list[str]:
    ranking = [] if raw is None else _value(raw, "ranking", "ranking must be a list of labels")
    if ranking is None:
        return []
    if not isinstance(ranking, list) or not all(isinstance(label, str) for label in ranking):
        raise _Invalid("ranking", "ranking must be a list of labels")
    for i, label in enumerate(ranking):
        if label not in mapping:
            raise _Invalid("ranking", f"unknown label {label!r} (not in label_to_model)")
        if label in ranking[:i]:
            raise _Invalid("ranking", f"label {label!r} ranked twice")
    return ranking


def _scores(raw: object, mapping: dict[str, str]) -> dict[str, float] | None:
    scores = None if raw is None else _value(raw, "scores", "scores must be a mapping of labels to numbers")
    if scores is None:
        return None
    if not isinstance(scores, dict):
        raise _Invalid("scores", "scores must be a mapping of labels to numbers")
    for label, value in scores.items():
        if label not in mapping:
            raise _Invalid("scores", f"unknown label {label!r} (not in label_to_model)")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(_float(value)):
            raise _Invalid("scores", f"score of {label!r} is not a finite number")
    return {label: float(value) for label, value in scores.items()}


def _float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:  # an integer beyond the float range (10**400)
        return math.inf


def _abstained(raw: object) -> bool:
    value = False if raw is None else _value(raw, "abstained", "abstained is not a boolean")
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _Invalid("abstained", "abstained is not a boolean")
    return value


def parse_review(ranking: object, abstained: object, mapping: object, scores: object) -> dict[str, object]:
    """One review's parsed values, or the field and reason that quarantine it."""
    try:
        labels = _mapping(mapping)
        given = _ranking(ranking, labels)
        scored = _scores(scores, labels)
        abstains = _abstained(abstained)
        if abstains:
            order, source = [], None
        elif given:
            order, source = given, "ranking"  # the record's mismatch rule: trust the ranking
        elif scored:
            order, source = sorted(scored, key=lambda label: -scored[label]), "scores"
        else:
            raise _Invalid("ranking", "empty ranking that is not an abstention (and no scores to fall back on)")
    except _Invalid as bad:
        return dict.fromkeys(_LISTS, []) | {"problem_field": bad.field, "problem": str(bad)}
    keys = sorted(labels)
    return {
        "abstained": abstains,
        "ranking": given,
        "scores": None if scored is None else json.dumps(scored, sort_keys=True),
        "labels": keys,
        "models": [labels[k] for k in keys],
        "order": [labels[k] for k in order],
        "order_from": source,
        "mapping_key": json.dumps([[k, labels[k]] for k in keys]),
    }


def _nested(frame: pl.DataFrame, top: str | None, nested: str | None, key: str) -> list[object]:
    """A field's raw values: the top-level column where set, else the key inside `parsed_ranking`."""
    values = frame[top].to_list() if top else [None] * frame.height
    if nested is None:
        return values
    inner = []
    for obj in frame[nested].to_list():
        try:
            obj = json.loads(obj) if isinstance(obj, str) else obj
        except (ValueError, RecursionError):
            obj = None
        inner.append(obj.get(key) if isinstance(obj, dict) else None)
    return [v if v is not None else w for v, w in zip(values, inner)]


def _any_of(t: Triage, *aliases: str) -> pl.Expr:
    """The first non-empty value among the alias columns present (a council may mix spellings)."""
    present = [c for c in (t.column(a, required=False) for a in aliases) if c is not None]
    if not present:
        t.column(*aliases)  # raises for a non-empty file
        return pl.lit(None, pl.String)
    return pl.coalesce([text(c) for c in present])


def read_reviews(raw: RawRecords, source: str) -> ReadResult:
    t = Triage(source, raw)
    mapping = t.column("label_to_model", nested=True)
    nested = t.column("parsed_ranking", required=False, nested=True)
    category = t.column("category", required=False)
    stamp = t.column("timestamp", "tstamp", required=False)

    fields = {key: _nested(t.frame, t.column(key, required=False, nested=True), nested, key)
              for key in ("ranking", "abstained", "scores")}
    rows = [parse_review(*values) for values in zip(fields["ranking"], fields["abstained"],
                                                    t.frame[mapping].to_list() if mapping else [], fields["scores"])]
    types = {"abstained": pl.Boolean, **dict.fromkeys(_LISTS, pl.List(pl.String))}
    t.frame = t.frame.with_columns(
        pl.Series(f"~{key}", [row.get(key) for row in rows], dtype=types.get(key, pl.String)) for key in _PARSED
    )
    t.derive(
        query_id=_any_of(t, "query_id", "event_id", "query"),
        reviewer=_any_of(t, "reviewer", "model", "reviewer_model"),
        category=text(category) if category else pl.lit(None, pl.String),
    )
    stamp_checks = t.derive_timestamp(stamp)
    checks = [Check("query_id", "missing query_id", pl.col("~query_id").is_null()),
              Check("reviewer", "missing reviewer", pl.col("~reviewer").is_null())]
    checks += stamp_checks
    t.reject(checks)
    for name in ("label_to_model", "abstained", "ranking", "scores"):
        t.reject_rows(pl.col("~problem_field") == name, name, pl.col("~problem"))
    t.reject_repeats(["~query_id", "~reviewer"], "reviewer", "second review of this query by this reviewer")
    first_key = pl.col("~mapping_key").sort_by(LINE).first().over("~query_id")
    first_line = pl.col(LINE).min().over("~query_id")
    t.reject_rows(pl.col("~mapping_key") != first_key, "label_to_model",
                  pl.lit("label_to_model differs from the first review of this query (line ") + first_line.cast(pl.String) + pl.lit(")"))

    return t.result("reviews", {name: pl.col(f"~{name}") for name in SCHEMA.names}, SCHEMA)


def review_orders(table: pa.Table) -> WeakOrders:
    """Each review that does not abstain: a strict order over the models it ranks, weight 1.

    Self-votes are excluded, as [Council] does by default: the reviewer's own model is left out of
    its ranking, so it gains no pairwise wins and no positions from its own review (the others keep
    their order). A review left with no model is no ballot. Abstentions have an empty `order`.
    """
    order = table.column("order").combine_chunks()
    lengths = pc.list_value_length(order).fill_null(0).to_numpy().astype(np.int64)
    ballot = np.repeat(np.arange(len(order)), lengths)
    agent = order.flatten().to_numpy().astype(np.int64)
    position = np.arange(len(agent)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    keep = agent != column(table, "reviewer").astype(np.int64)[ballot]
    return WeakOrders.from_rows(ballot[keep], agent[keep], position[keep].astype(np.float64), np.ones(int(keep.sum())))


REVIEWS = register_kind(LogKind(
    "reviews", holds="one council reviewer's ranking of anonymised answers per row", unit="review",
    read=read_reviews, schema=SCHEMA, ids={"reviewer": "agents", "models": "agents", "order": "agents"},
    # No record_id: a later review of a query by the same reviewer replaces the earlier one (`pipeline.stats.council`).
    columns=("reviewer", "order"), weak_orders=review_orders, category="category",
))
