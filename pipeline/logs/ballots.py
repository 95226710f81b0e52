"""Ranked ballots: weak orders, maybe partial, with real-valued weights.

Canonical columns: `ballot_id`, `ranking` (canonical text, e.g. `a>b=c>d`, names inside a tie
sorted), `weight`, plus the parsed order as `agents` (names) and `levels` (0 for the top group,
then 1, 2, ... in group order). `>` separates groups and `=` joins ties. A ballot without an id
gets `<file name>:<line>`.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow as pa

from pipeline.logs.records import LINE, RawRecords
from pipeline.logs.triage import Check, ReadResult, Triage, number, quantize_weight, weight_value, text, weight_checks

SCHEMA = pa.schema(
    [
        ("ballot_id", pa.string()),
        ("ranking", pa.string()),
        ("weight", pa.float64()),
        ("agents", pa.list_(pa.string())),
        ("levels", pa.list_(pa.int16())),
    ]
)


def parse_rankings(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """Per row of `frame` (keyed by LINE): parsed names and levels, canonical text and a problem, if any."""
    groups = (
        frame.select(LINE, pl.col(column).str.split(">").alias("group"))
        .explode("group")
        .with_columns(pl.int_range(pl.len()).over(LINE).alias("level"))
    )
    names = groups.with_columns(pl.col("group").str.split("=")).explode("group").with_columns(
        pl.col("group").str.strip_chars().alias("name")
    )
    problem = (
        pl.when(pl.col("name").is_null().any() | (pl.col("name") == "").any())
        .then(pl.lit("malformed ranking (an empty name)"))
        .when(pl.col("name").is_duplicated().any())
        .then(pl.lit("ranking names a player twice: ") + pl.col("name").filter(pl.col("name").is_duplicated()).first())
        .otherwise(None)
    )
    ordered = names.sort(LINE, "level", "name")
    text_groups = ordered.group_by(LINE, "level", maintain_order=True).agg(pl.col("name").str.join("="))
    canonical = text_groups.group_by(LINE, maintain_order=True).agg(pl.col("name").str.join(">").alias("~ranking"))
    parsed = ordered.group_by(LINE, maintain_order=True).agg(
        pl.col("name").alias("~agents"), pl.col("level").cast(pl.Int16).alias("~levels"), problem.alias("~problem")
    )
    return parsed.join(canonical, on=LINE)


def read_ballots(raw: RawRecords, source: str) -> ReadResult:
    t = Triage(source, raw)
    ranking = t.column("ranking", "vote", "ballot")
    ident = t.column("ballot_id", "id", required=False)
    weight = t.column("weight", "count", required=False)
    schema = t.frame.schema
    stem = Path(source).name

    t.derive(
        ballot_id=text(ident) if ident else pl.lit(stem + ":") + pl.col(LINE).cast(pl.String),
        text=text(ranking),
        weight=weight_value(weight, schema.get(weight)),
    )
    t.reject(
        [Check("ballot_id", "missing ballot_id", pl.col("~ballot_id").is_null()),
         Check("ranking", "empty ranking", pl.col("~text").is_null())]
        + weight_checks("~weight", weight)
    )
    if t.frame.height:
        t.frame = t.frame.join(parse_rankings(t.frame, "~text"), on=LINE, how="left")
        t.reject_rows(pl.col("~problem").is_not_null(), "ranking", pl.col("~problem"))
    first = pl.col(LINE).min().over("~ballot_id")
    t.reject_rows(pl.col(LINE) != first, "ballot_id", pl.lit("duplicate ballot_id (first at line ") + first.cast(pl.String) + pl.lit(")"))

    canonical = {
        "ballot_id": pl.col("~ballot_id"),
        "ranking": pl.col("~ranking"),
        "weight": quantize_weight(pl.col("~weight")),
        "agents": pl.col("~agents"),
        "levels": pl.col("~levels"),
    }
    return t.result("ballots", canonical, SCHEMA)
