"""Score tables: one agent's score on one task per row; each task is a voter (a weak order).

Canonical columns: `task`, `agent`, `score`, `higher_is_better` (per task, default true),
`task_weight` (default 1), `category` (the task's group, e.g. coding or math; optional, read from
a `category`, `group` or `task_group` column, and the same for every row of a task). Long tables have `task`, `agent` (or `model`) and `score` columns; a
table without a `score` column is wide: the first column names the task and every other column is
an agent, one cell a score. In a wide table an empty cell means the agent was not run on that task
(the task's ballot is partial) and is not a row; every non-empty cell is one row of the accounting.

Stored: agents as ids of the agents dictionary. Each task is a voter: a weak order over its
agents by score (turned around where lower is better); the same task in two source files is two
voters.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from pipeline.arrays import column, unit_codes
from pipeline.logs.kinds import LogKind, register_kind
from pipeline.logs.orders import MAX_RANKED, WeakOrders
from pipeline.logs.records import INVALID, LINE, NESTED, RawRecords, UnreadableFile
from pipeline.logs.triage import (Check, ReadResult, Triage, alias_key, differs, number, text, unparsable, weight_checks,
                                  weight_value)
from pipeline.weights import quantize_expr

SCHEMA = pa.schema(
    [
        ("task", pa.string()),
        ("agent", pa.string()),
        ("score", pa.float64()),
        ("higher_is_better", pa.bool_()),
        ("task_weight", pa.float64()),
        ("category", pa.string()),
    ]
)

_TRUE = ("true", "1", "yes", "t", "y")
_FALSE = ("false", "0", "no", "f", "n")
CATEGORY_ALIASES = ("category", "group", "task_group")
_PER_TASK = ("higher_is_better", "task_weight", *CATEGORY_ALIASES)
CELL = "\x00cell"  # a name no column of a file has (`pipeline.logs.records.internal`)


def _melt_wide(raw: RawRecords, source: str) -> RawRecords:
    """A wide table (task, then one column per agent) as long rows: one per non-empty cell. A
    cell's unusable value (nested, not text) carries over to the row's score."""
    frame = raw.frame
    if not frame.height:
        return raw
    columns = raw.columns
    if not columns:
        raise UnreadableFile(source, "no columns: a score table needs task, agent and score columns (or a wide table: "
                             "the task, then one column per agent)")
    task = columns[0]
    per_task = [c for c in columns if c.lower() in _PER_TASK]
    agents = [c for c in columns[1:] if c not in per_task]
    long_names = [c for c in agents if alias_key(c) in ("task", "agent", "model")]
    if long_names or not agents:  # a long table without its score column, or no agents at all
        raise UnreadableFile(source, "missing column 'score' (a long table has task, agent and score columns; a wide one "
                             "the task, then one column per agent)", line=1, field="score")
    if twice := sorted({c.rpartition("#")[0] for c in agents if c.rpartition("#")[0] in agents}):
        raise UnreadableFile(source, f"agent column {twice[0]!r} appears twice", line=1, field=twice[0])
    task_markers = [pl.col(m).alias(m.replace(":" + task, ":task")) for m in frame.columns if m in (NESTED + task, INVALID + task)]

    def cell(agent: str) -> pl.Expr:
        problem = pl.lit(None, pl.String)
        if INVALID + agent in frame.columns:
            problem = pl.col(INVALID + agent)
        if NESTED + agent in frame.columns:
            problem = pl.when(pl.col(NESTED + agent).fill_null(False)).then(pl.lit("a list or an object, not a number")).otherwise(problem)
        return pl.struct(pl.col(agent).cast(pl.String).alias("score"), problem.alias("problem")).alias(agent)

    long = frame.select(pl.col(task).cast(pl.String).alias("task"), pl.col(LINE), *task_markers, *per_task, *map(cell, agents)).unpivot(
        index=["task", LINE, *(m.meta.output_name() for m in task_markers), *per_task], on=agents,
        variable_name="agent", value_name=CELL)
    long = long.with_columns(pl.col(CELL).struct.field("score").alias("score"),
                             pl.col(CELL).struct.field("problem").alias(INVALID + "score")).drop(CELL)
    long = long.filter(text("score").is_not_null() | pl.col(INVALID + "score").is_not_null()).sort(LINE, maintain_order=True)
    return RawRecords(long, raw.unparsable)


def _boolean(name: str, dtype: pl.DataType) -> pl.Expr:
    if dtype == pl.Boolean:
        return pl.col(name)
    lowered = text(name).str.to_lowercase()
    return pl.when(lowered.is_in(_TRUE)).then(True).when(lowered.is_in(_FALSE)).then(False).otherwise(None)


def read_scores(raw: RawRecords, source: str) -> ReadResult:
    if "score" not in {c.lower() for c in raw.columns}:
        raw = _melt_wide(raw, source)
    t = Triage(source, raw)
    task, agent, score = t.column("task"), t.column("agent", "model"), t.column("score")
    hib = t.column("higher_is_better", required=False)
    weight = t.column("task_weight", required=False)
    category = t.column(*CATEGORY_ALIASES, required=False)
    schema = t.frame.schema

    t.derive_labels({"task": task})  # a task's rows share its name: checks by task compare codes
    t.derive_labels({"agent": agent})
    t.derive_labels({"category": category})
    t.derive(
        score=number(score, schema[score]),
        hib=_boolean(hib, schema[hib]) if hib else pl.lit(True),
        weight=weight_value(weight, schema.get(weight)),
    )
    checks = [
        Check("task", "missing task", pl.col("~task").is_null()),
        Check("agent", "missing agent", pl.col("~agent").is_null()),
        Check("score", "missing score", text(score).is_null()),
        Check("score", "score is not a number", unparsable(score, "~score")),
        Check("score", "score is not finite", ~pl.col("~score").is_finite()),
    ]
    if hib:
        checks.append(Check("higher_is_better", "higher_is_better is not a boolean", pl.col("~hib").is_null()))
    checks += weight_checks("~weight", weight, "task_weight")
    t.reject(checks)

    t.refuse_mixed(["~task", "~agent"], "task, agent")
    t.reject_repeats(["~task", "~agent"], "agent", "duplicate agent in task")
    t.reject_units(
        "~task",
        [
            Check("higher_is_better", "rows of one task disagree on higher_is_better", differs("~hib")),
            Check("task_weight", "rows of one task disagree on task_weight", differs("~weight")),
            Check("category", "rows of one task disagree on category", differs("~category")),
            Check("task", "task has fewer than two agents", pl.len() < 2),
            Check("task", f"task has more than {MAX_RANKED:,} agents", pl.len() > MAX_RANKED),
        ],
    )
    canonical = {
        "task": pl.col("~task"),
        "agent": pl.col("~agent"),
        "score": pl.col("~score"),
        "higher_is_better": pl.col("~hib"),
        "task_weight": quantize_expr(pl.col("~weight")),
        "category": pl.col("~category"),
    }
    return t.result("scores", canonical, SCHEMA)


def task_orders(table: pa.Table) -> WeakOrders:
    """Each task as a weak order over its agents, best score first."""
    score = column(table, "score")
    level = np.where(table.column("higher_is_better").to_numpy(zero_copy_only=False).astype(bool), -score, score)
    return WeakOrders.from_rows(unit_codes(table, "task"), column(table, "agent"), level, column(table, "task_weight"))


SCORES = register_kind(LogKind(
    "scores", holds="one agent's score on one task per row", unit="task",
    read=read_scores, schema=SCHEMA, ids={"agent": "agents"},
    columns=("task", "agent", "score", "higher_is_better", "task_weight"), weak_orders=task_orders, unit_column="task",
    category="category",
))
