"""The nightly history: one row per run, board, method and agent, kept beside the runs.

`<out>/history.parquet` holds each published run's ranks, scores and intervals (`ci_low`,
`ci_high`, `rank_low`, `rank_high`, null where a method has none). The nightly flow appends a run
after it becomes `latest`, so the history lists published runs only; appending rewrites the file
under a temporary name and renames it (atomic), and re-appending a run replaces its rows.
Growth is bounded: per board and method, the agents ranked up to `MAX_RANK`, and the last
`MAX_RUNS` runs (a board of 60 agents and 10 methods adds about 600 rows a night).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pipeline.report.folders import all_boards, read_run, run_id_of
from pipeline.store.files import exclusive_lock, write_parquet

log = logging.getLogger(__name__)

HISTORY_FILE = "history.parquet"
MAX_RANK = 1000
MAX_RUNS = 400
INTERVALS = ("ci_low", "ci_high", "rank_low", "rank_high")
KEYS = ("run_id", "board", "method", "agent")  # a row's identity
SCHEMA = {"run_id": pl.String, "board": pl.String, "method": pl.String, "agent": pl.String, "rank": pl.Int64,
          "score": pl.Float64} | {name: pl.Float64 for name in INTERVALS}


def history_beside(path: str | Path) -> Path | None:
    """`<out>/history.parquet` for a nightly run folder `<out>/runs/<run id>` (or `<out>/latest`)."""
    path = Path(path).resolve()
    return path.parent.parent / HISTORY_FILE if path.parent.name == "runs" else None


def run_rows(run_dir: str | Path, run_id: str) -> pl.DataFrame:
    """The history rows of one run folder: every board (and sub-board), method and agent."""
    frames = []
    for board in all_boards(read_run(run_dir)):
        ratings = board.ratings
        if not {"method", "agent", "rank", "score"} <= set(ratings.columns):
            continue
        frames.append(ratings.filter(pl.col("rank") <= MAX_RANK).select(
            pl.lit(run_id).alias("run_id"), pl.lit(board.name).alias("board"), pl.col("method").cast(pl.String),
            pl.col("agent").cast(pl.String), pl.col("rank").cast(pl.Int64), pl.col("score").cast(pl.Float64, strict=False),
            *[(pl.col(c) if c in ratings.columns else pl.lit(None)).cast(pl.Float64, strict=False).alias(c) for c in INTERVALS]))
    return pl.concat(frames) if frames else pl.DataFrame(schema=SCHEMA)


def read_history(path: str | Path | None) -> pl.DataFrame:
    """The history file (empty with the history's columns when there is none, or it cannot be read)."""
    table = history_table(path) if path is not None and Path(path).exists() else None
    return pl.DataFrame(schema=SCHEMA) if table is None else table


def history_table(path: str | Path) -> pl.DataFrame | None:
    """The history file with the history's columns, or None when it cannot be read as one: cut
    short, not Parquet, without a column every history has (`KEYS`, rank and score; the intervals
    came later), with one whose values do not convert to the history's types, or with a row that
    names no run, board, method or agent. A row repeated (two histories concatenated by hand) is
    read once: its first occurrence."""
    try:
        table = pl.read_parquet(path)
        if not set(KEYS + ("rank", "score")) <= set(table.columns):
            return None
        table = table.select([(pl.col(c) if c in table.columns else pl.lit(None)).cast(t).alias(c) for c, t in SCHEMA.items()])
    except (OSError, pl.exceptions.PolarsError):
        return None
    if table.select(pl.any_horizontal(pl.col(KEYS).is_null())).to_series().any():
        return None
    return table.unique(subset=KEYS, keep="first", maintain_order=True)


def append_history(path: str | Path, run_dir: str | Path, run_id: str | None = None, max_runs: int = MAX_RUNS) -> Path:
    """Add (or replace) one run's rows and write the history atomically; returns its path.

    A history that exists but cannot be read (cut short by hand, a disk error) is never written
    over: it is renamed `<name>.unreadable-<run id>`, a warning names it, and the history starts
    again from this run."""
    path = Path(path)
    run_id = run_id or run_id_of(run_dir)
    if run_id is None:
        raise ValueError(f"{run_dir}: not a run folder named by its run id; give run_id")
    with exclusive_lock(path.with_name(f".{path.name}.lock")):  # two runs on one `out` must not drop each other's rows
        old = history_table(path) if path.exists() else pl.DataFrame(schema=SCHEMA)
        if old is None:
            kept = path.replace(path.with_name(f"{path.name}.unreadable-{run_id}"))
            log.warning("the history %s cannot be read: kept as %s, and the history starts again from run %s", path, kept.name, run_id)
            old = pl.DataFrame(schema=SCHEMA)
        old = old.filter(pl.col("run_id") != run_id)
        rows = pl.concat([old, run_rows(run_dir, run_id)])
        kept = sorted(set(rows.get_column("run_id").to_list()))[-max_runs:]
        rows = rows.filter(pl.col("run_id").is_in(kept)).sort(["run_id", "board", "method", "rank", "agent"])
        write_parquet(path, rows.to_arrow())
    return path


def with_run(history: pl.DataFrame, run_dir: str | Path, run_id: str | None) -> pl.DataFrame:
    """History up to and including `run_id`, with that run's rows read from its folder (it is not
    in the history yet while its report is written)."""
    if run_id is None:
        return history.clear()
    earlier = history.filter(pl.col("run_id") < run_id)
    return pl.concat([earlier, run_rows(run_dir, run_id)])


def previous_run(history: pl.DataFrame, board: str, method: str, run_id: str) -> str | None:
    """The latest run before `run_id` that rated `board` with `method`."""
    runs = history.filter((pl.col("board") == board) & (pl.col("method") == method) & (pl.col("run_id") < run_id))
    return runs.get_column("run_id").max() if runs.height else None


def ranks_in(history: pl.DataFrame, board: str, method: str, run_id: str) -> dict[str, int]:
    rows = history.filter((pl.col("board") == board) & (pl.col("method") == method) & (pl.col("run_id") == run_id))
    return dict(zip(rows.get_column("agent").to_list(), rows.get_column("rank").to_list()))


def rank_changes(history: pl.DataFrame, board: str, method: str, run_id: str | None) -> tuple[str | None, dict[str, int]]:
    """The previous run of this board and method, and each agent's rank in it (empty if none)."""
    previous = previous_run(history, board, method, run_id) if run_id else None
    return previous, ranks_in(history, board, method, previous) if previous else {}


@dataclass(frozen=True)
class HistoryView:
    """One board and method over its last runs: per agent (today's order) its rank in each run."""

    board: str
    method: str
    runs: list[str]
    agents: list[str]
    ranks: list[list[int | None]]  # per agent, per run
    score: list[float | None]  # in the last run
    interval: list[tuple[float, float] | None]  # ci_low, ci_high in the last run


def matches(spec: str, wanted: str) -> bool:
    """`m-elo` selects every m-elo spec; a full spec selects itself."""
    return spec == wanted or spec.partition(":")[0] == wanted


def history_views(history: pl.DataFrame, board: str | None = None, method: str | None = None, runs: int = 5,
                  top: int | None = 10) -> list[HistoryView]:
    """The history by board and method, agents in the order of the latest run (the top `top` of them)."""
    views = []
    keys = history.select("board", "method").unique(maintain_order=True).sort("board", maintain_order=True).iter_rows()
    for b, m in keys:
        if (board is not None and b != board) or (method is not None and not matches(m, method)):
            continue
        rows = history.filter((pl.col("board") == b) & (pl.col("method") == m))
        last = sorted(set(rows.get_column("run_id").to_list()))[-runs:]
        now = rows.filter(pl.col("run_id") == last[-1]).sort(["rank", "agent"])
        if top is not None:
            now = now.head(top)
        rank = {(r, a): k for r, a, k in rows.filter(pl.col("run_id").is_in(last)).select("run_id", "agent", "rank").iter_rows()}
        agents = now.get_column("agent").to_list()
        views.append(HistoryView(
            b, m, last, agents, [[rank.get((r, a)) for r in last] for a in agents], now.get_column("score").to_list(),
            [None if lo is None or hi is None else (lo, hi) for lo, hi in now.select("ci_low", "ci_high").iter_rows()]))
    return views
