"""What a published folder holds, read back for the report and the history.

Three shapes, told apart by their files: a board (`ratings.parquet`, what `vase rate --out` and each
board of a nightly run write), a backtest (`results.parquet` and `summary.parquet`), and a run
folder holding one folder per board (the nightly). A board may hold sub-boards in subfolders (e.g.
`category=<name>/`): any subfolder with its own `ratings.parquet` is one.

Everything is read leniently: a file that is missing or cannot be read becomes None (the report
says so) rather than an exception, so one broken output never hides the others.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

RATINGS = "ratings.parquet"
PAIRWISE = "pairwise.parquet"
AGENTS = "agents.parquet"
RESULTS = "results.parquet"
SUMMARY = "summary.parquet"
STANDARD_OUTPUTS = {RATINGS, PAIRWISE, AGENTS, "ratings.json", "leaderboard.md", "run.json"}
RUN_ID = re.compile(r"^\.?(\d{4}-\d{2}-\d{2}T\d{6}(?:\.\d+)?Z)(?:\.partial)?$")


def read_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def section(run: dict, key: str) -> dict:
    """A mapping of a run.json (`parameters`, `rows`, ...), or {} where it is missing or is not one
    (a file edited by hand, or written by another tool)."""
    value = run.get(key)
    return value if isinstance(value, dict) else {}


def read_parquet(path: Path) -> pl.DataFrame | None:
    try:
        return pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError):
        return None


@dataclass
class BoardFolder:
    """One board's published outputs. `name` is its path inside the report's root ('' for the root)."""

    path: Path
    name: str
    run: dict
    ratings: pl.DataFrame
    pairwise: pl.DataFrame | None = None
    agents: pl.DataFrame | None = None
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)  # `<method>.<table>` -> table
    children: list[BoardFolder] = field(default_factory=list)

    @property
    def title(self) -> str:
        return str(self.run.get("title") or section(self.run, "parameters").get("board") or self.name or self.path.name)

    @property
    def methods(self) -> list[str]:
        """Method specs in the order they were published (the order the board lists them)."""
        return list(dict.fromkeys(self.ratings.get_column("method").to_list())) if "method" in self.ratings.columns else []


@dataclass
class BacktestFolder:
    path: Path
    name: str
    run: dict
    results: pl.DataFrame
    summary: pl.DataFrame

    @property
    def title(self) -> str:
        scheme = section(self.run, "parameters").get("scheme", "random")
        return str(self.run.get("title") or f"backtest: {self.run.get('kind', '')}, {scheme} splits")


Folder = BoardFolder | BacktestFolder


def read_board(path: Path, name: str = "") -> BoardFolder | None:
    ratings = read_parquet(path / RATINGS)
    if ratings is None:
        return None
    run = read_json(path / "run.json")
    listed = run.get("outputs") if isinstance(run.get("outputs"), list) else sorted(p.name for p in path.glob("*.parquet"))
    tables = {}
    for output in listed:
        if str(output).endswith(".parquet") and output not in STANDARD_OUTPUTS:
            table = read_parquet(path / output)
            if table is not None:
                tables[output.removesuffix(".parquet")] = table
    children = [child for sub in sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
                if (child := read_board(sub, f"{name}/{sub.name}" if name else sub.name)) is not None]
    return BoardFolder(path, name, run, ratings, read_parquet(path / PAIRWISE), read_parquet(path / AGENTS), tables, children)


def read_backtest(path: Path, name: str = "") -> BacktestFolder | None:
    results, summary = read_parquet(path / RESULTS), read_parquet(path / SUMMARY)
    if results is None or summary is None:
        return None
    return BacktestFolder(path, name, read_json(path / "run.json"), results, summary)


def read_folder(path: Path, name: str = "") -> Folder | None:
    """A board or a backtest published in `path`, or None. The outputs that run.json lists tell
    which (a backtest published into a folder that held a board leaves its ratings.parquet there,
    which is not this run's); a folder without that list is told by its files."""
    listed = read_json(path / "run.json").get("outputs")
    board = RATINGS in listed if isinstance(listed, list) else (path / RATINGS).exists()
    return read_board(path, name) if board else read_backtest(path, name)


def read_run(path: str | Path) -> list[Folder]:
    """The boards and backtests of a report's root: the root itself, or each of its subfolders."""
    path = Path(path)
    own = read_folder(path)
    if own is not None:
        return [own]
    return [f for sub in sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
            if (f := read_folder(sub, sub.name)) is not None]


def unreadable_outputs(path: str | Path) -> list[Path]:
    """The main outputs (a board's ratings, a backtest's results and summary) of `path` and of its
    subfolders that exist but cannot be read (cut short, not Parquet): the folders they would make
    are missing from `read_run`, and the report names them instead."""
    path = Path(path)
    folders = [path, *sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))] if path.is_dir() else []
    return [f / name for f in folders for name in (RATINGS, RESULTS, SUMMARY) if (f / name).is_file() and read_parquet(f / name) is None]


def all_boards(folders: list[Folder]) -> list[BoardFolder]:
    """Boards and their sub-boards, depth first."""
    out: list[BoardFolder] = []
    for f in folders:
        if isinstance(f, BoardFolder):
            out += [f, *all_boards(f.children)]
    return out


def run_id_of(path: str | Path) -> str | None:
    """The nightly run id a run folder is named after (also for its staging folder), or None."""
    match = RUN_ID.match(Path(path).resolve().name)
    return match.group(1) if match else None

