"""Battles: one pairwise comparison per row, canonical or in the Chatbot Arena format.

Canonical columns: `battle_id`, `model_a`, `model_b`, `winner` in {model_a, model_b, tie,
tie (bothbad)}, optional `judge`, `prompt`, `category`, `timestamp`, `weight`, and numeric features
of the two answers as `features_a.<name>`, `features_b.<name>` (`pipeline.logs.features`). The Arena dumps
(`judge`, `question_id`, `tstamp`) are read through column aliases. A file without battle ids gets
ids of their content (`pipeline.logs.identity.ContentIds`: the reader's placeholders
`<file name>:<line>` are replaced in `read_batches`), so the same battles in a re-sorted or
cumulative dump are the same ids.

Stored: models as ids of the agents dictionary, `judge` and `prompt` of the judges and prompts
dictionaries, `winner` as its position in `WINNERS` (0 model_a, 1 model_b, 2 tie, 3 tie
(bothbad)). Each battle is a comparison of two models, counted directly as a pair; a tie
(bothbad) counts as a tie. A `battle_id` given by the file identifies the battle across files: one
stored before is a duplicate (`pipeline.logs.identity`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from pipeline.arrays import column
from pipeline.logs.features import FEATURES_TYPE, read_features
from pipeline.logs.kinds import LogKind, register_kind
from pipeline.logs.orders import TIE, Comparisons
from pipeline.logs.records import LINE, RawRecords
from pipeline.logs.triage import Check, ReadResult, Triage, text, weight_checks, weight_value
from pipeline.weights import quantize_expr

WINNERS = ("model_a", "model_b", "tie", "tie (bothbad)")

SCHEMA = pa.schema(
    [
        ("battle_id", pa.string()),
        ("model_a", pa.string()),
        ("model_b", pa.string()),
        ("winner", pa.string()),
        ("judge", pa.string()),
        ("prompt", pa.string()),
        ("category", pa.string()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("weight", pa.float64()),
        ("features", FEATURES_TYPE),
    ]
)


def read_battles(raw: RawRecords, source: str) -> ReadResult:
    t = Triage(source, raw)
    a, b, winner = t.column("model_a"), t.column("model_b"), t.column("winner")
    ident = t.column("battle_id", required=False)
    judge = t.column("judge", "annotator", "worker", required=False)
    prompt = t.column("prompt", "question_id", required=False)
    category = t.column("category", required=False)
    stamp = t.column("timestamp", "tstamp", required=False)
    weight = t.column("weight", required=False)
    schema = t.frame.schema
    stem = Path(source).name
    features, feature_checks = read_features(t)

    t.derive_labels({"model_a": a, "model_b": b})  # one dictionary: a model against itself is one code twice
    winners = t.derive_labels({"winner": winner}, lowercase=True).to_pylist()
    t.derive_labels({"judge": judge})
    t.derive(
        battle_id=text(ident) if ident else pl.lit(stem + ":") + pl.col(LINE).cast(pl.String),
        prompt=text(prompt) if prompt else pl.lit(None, pl.String),
        category=text(category) if category else pl.lit(None, pl.String),
        weight=weight_value(weight, schema.get(weight)),
    )
    stamp_checks = t.derive_timestamp(stamp)
    checks = [
        Check("battle_id", "missing battle_id", pl.col("~battle_id").is_null()),
        Check("model_a", "missing model_a", pl.col("~model_a").is_null()),
        Check("model_b", "missing model_b", pl.col("~model_b").is_null()),
        Check("model_b", "a model against itself", pl.col("~model_a") == pl.col("~model_b")),
        Check("winner", "missing winner", pl.col("~winner").is_null()),
        Check("winner", f"unknown winner value (expected one of {', '.join(WINNERS)})",
              ~pl.col("~winner").is_in([code for code, value in enumerate(winners) if value in WINNERS])),
    ]
    checks += stamp_checks
    checks += weight_checks("~weight", weight) + feature_checks
    t.reject(checks)
    t.reject_repeats(["~battle_id"], "battle_id", "duplicate battle_id")

    canonical = {name: pl.col(f"~{name}") for name in SCHEMA.names}
    canonical["weight"] = quantize_expr(pl.col("~weight"))
    canonical["features"] = features
    return t.result("battles", canonical, SCHEMA, keyed=ident is not None)


def battle_comparisons(table: pa.Table) -> Comparisons:
    """Stored battles as comparisons of model_a and model_b (both ties count as a tie)."""
    return Comparisons(column(table, "model_a").astype(np.int64), column(table, "model_b").astype(np.int64),
                       np.minimum(column(table, "winner"), TIE).astype(np.int8), column(table, "weight"))


BATTLES = register_kind(LogKind(
    "battles", holds="one pairwise comparison per row", unit="battle",
    read=read_battles, schema=SCHEMA,
    ids={"model_a": "agents", "model_b": "agents", "judge": "judges", "prompt": "prompts"}, codes={"winner": WINNERS},
    columns=("model_a", "model_b", "winner", "weight"), comparisons=battle_comparisons, independent_rows=True,
    record_id=("battle_id",), category="category",
))
