"""Ranked ballots: weak orders, maybe partial, with real-valued weights.

Canonical columns: `ballot_id`, `ranking` (canonical text, e.g. `a>b=c>d`, names inside a tie
sorted), `weight`, plus the parsed order as `agents` (names) and `levels` (0 for the top group,
then 1, 2, ... in group order). `>` separates groups and `=` joins ties. A ballot without an id
gets one of its content (`pipeline.logs.identity.ContentIds`); a `ballot_id` given by the file names the ballot across files (one
stored before is a duplicate). A ranking of more than `MAX_RANKED` names is quarantined. PrefLib
order files (`pipeline.logs.preflib`) are read as ballots too.

Stored: `agents` as ids of the agents dictionary, ordered within each ballot by level, then id
(a canonical form); each ballot is one weak order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import column
from pipeline.logs.kinds import LogKind, register_kind
from pipeline.logs.orders import MAX_RANKED, WeakOrders
from pipeline.logs.preflib import PREFLIB_SUFFIXES, read_preflib
from pipeline.logs.records import LINE, TABULAR_SUFFIXES, RawRecords
from pipeline.logs.triage import Check, ReadResult, Triage, weight_value, text, weight_checks
from pipeline.weights import quantize_expr

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
    """Per row of `frame` (keyed by LINE): parsed names and levels, canonical text and a problem, if any.

    Row-level expressions only: a per-group expression (a join or a duplicate test inside
    `group_by().agg`) runs once per ballot and per level, ~100 times slower on a million ballots.
    """
    def exploded(table: pl.DataFrame, by: str, name: str) -> pl.DataFrame:
        # explode keeps one (null) row for a null or empty list, hence a count of at least 1
        count = pl.col(name).list.len().fill_null(1).clip(lower_bound=1)
        return (table.with_columns((count.cum_sum() - count).alias("~start"))
                .explode(name)
                .with_columns((pl.int_range(pl.len()) - pl.col("~start")).alias(by))
                .drop("~start"))

    groups = exploded(frame.select(LINE, pl.col(column).str.split(">").alias("name")), "level", "name")
    names = groups.with_columns(pl.col("name").str.split("=")).explode("name").with_columns(
        pl.col("name").str.strip_chars()
    )
    ordered = names.sort(LINE, "level", "name")
    empty = ordered.filter(pl.col("name").is_null() | (pl.col("name") == "")).select(
        LINE, pl.lit("malformed ranking (an empty name)").alias("~empty")).unique(LINE)
    by_name = names.sort(LINE, "name")
    twice = by_name.filter((pl.col(LINE) == pl.col(LINE).shift(1)) & (pl.col("name") == pl.col("name").shift(1)))
    repeated = ordered.join(twice.select(LINE).unique(), on=LINE, how="semi").group_by(LINE).agg(
        (pl.lit("ranking names a player twice: ")
         + pl.col("name").filter(pl.col("name").is_duplicated()).first()).alias("~repeated"))
    separator = (pl.when(pl.col(LINE) != pl.col(LINE).shift(1, fill_value=-1)).then(pl.lit(""))
                 .when(pl.col("level") != pl.col("level").shift(1)).then(pl.lit(">"))
                 .otherwise(pl.lit("=")))
    parsed = (ordered.with_columns((separator + pl.col("name").fill_null("")).alias("~piece"))
              .group_by(LINE, maintain_order=True)
              .agg(pl.col("name").alias("~agents"), pl.col("level").cast(pl.Int16).alias("~levels"), pl.col("~piece"))
              .with_columns(pl.col("~piece").list.join("").alias("~ranking"))
              .drop("~piece"))
    problems = parsed.join(empty, on=LINE, how="left").join(repeated, on=LINE, how="left")
    return problems.with_columns(pl.coalesce("~empty", "~repeated").alias("~problem")).drop("~empty", "~repeated")


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
         Check("ranking", "empty ranking", pl.col("~text").is_null()),
         Check("ranking", f"ranking names more than {MAX_RANKED:,} players", pl.col("~text").str.count_matches("[>=]") >= MAX_RANKED)]
        + weight_checks("~weight", weight)
    )
    if t.frame.height:
        t.frame = t.frame.join(parse_rankings(t.frame, "~text"), on=LINE, how="left")
        t.reject_rows(pl.col("~problem").is_not_null(), "ranking", pl.col("~problem"))
    t.reject_repeats(["~ballot_id"], "ballot_id", "duplicate ballot_id")

    canonical = {
        "ballot_id": pl.col("~ballot_id"),
        "ranking": pl.col("~ranking"),
        "weight": quantize_expr(pl.col("~weight")),
        "agents": pl.col("~agents"),
        "levels": pl.col("~levels"),
    }
    return t.result("ballots", canonical, SCHEMA, keyed=ident is not None)


def members_by_level(table: pa.Table) -> pa.Table:
    """Ballot members (now ids) ordered within each ballot by level, then id: a canonical form."""
    agents, levels = table.column("agents").combine_chunks(), table.column("levels").combine_chunks()
    ids, lv = agents.flatten().to_numpy(), levels.flatten().to_numpy()
    offsets = pc.subtract(agents.offsets, agents.offsets[0]).to_numpy()
    group = np.repeat(np.arange(len(agents), dtype=np.int64), np.diff(offsets)) * (int(lv.max(initial=0)) + 1) + lv
    span = int(ids.max(initial=0)) + 1
    if int(group.max(initial=0)) < np.iinfo(np.int64).max // span:
        # one key: parsed members come grouped by ballot and level already, runs a stable sort
        # merges several times faster than a three-key lexsort
        order = np.argsort(group * span + ids, kind="stable")
    else:
        order = np.lexsort((ids, group))
    offsets_arrow = pa.array(offsets, pa.int32())
    table = table.set_column(table.schema.get_field_index("agents"), "agents",
                             pa.ListArray.from_arrays(offsets_arrow, pa.array(ids[order], pa.int32())))
    return table.set_column(table.schema.get_field_index("levels"), "levels",
                            pa.ListArray.from_arrays(offsets_arrow, pa.array(lv[order], pa.int16())))


def ballot_orders(table: pa.Table) -> WeakOrders:
    """Each stored ballot as it is: members already by level, then id."""
    agents = table.column("agents").combine_chunks()
    offsets = agents.offsets.to_numpy().astype(np.int64)
    levels = table.column("levels").combine_chunks().flatten().to_numpy().astype(np.float64)
    return WeakOrders(offsets - offsets[0], agents.flatten().to_numpy().astype(np.int64), levels, column(table, "weight"))


BALLOTS = register_kind(LogKind(
    "ballots", holds="one ranked ballot per row", unit="ballot",
    read=read_ballots, schema=SCHEMA, suffixes=TABULAR_SUFFIXES + PREFLIB_SUFFIXES,
    formats=dict.fromkeys(PREFLIB_SUFFIXES, read_preflib), ids={"agents": "agents"}, canonical=members_by_level,
    columns=("agents", "levels", "weight"), weak_orders=ballot_orders, independent_rows=True, record_id=("ballot_id",),
    rows_per_task=250_000,  # a ballot row holds a whole ranking
))
