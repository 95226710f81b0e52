"""Leaderboards as configured units of work: which logs, of which kind, rated by which methods.

A board has its own store (`<stores>/<name>`) so that two unrelated arenas never share counts.
The nightly flow, the demo and `vase rate` all go through these functions; the flows only add
orchestration around them.

Config file (YAML), paths relative to the file:
```yaml
boards:
  - name: llmfao-crowd
    kind: battles
    sources: [llmfao]            # files or folders (folders are scanned for log files)
    methods: [borda, copeland]
```
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from pipeline.logs import KINDS, is_log_file
from pipeline.methods import Ratings, Spec, apply, needs, run
from pipeline.paths import check_board_name
from pipeline.report import RunRecord, leaderboard_markdown, publish
from pipeline.stats import Statistics, reduce_store
from pipeline.store import IngestReport, Store


@dataclass(frozen=True)
class Board:
    name: str
    kind: str
    sources: tuple[str, ...]
    methods: tuple[str, ...]
    title: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"board {self.name}: unknown kind {self.kind!r}; expected one of {', '.join(KINDS)}")
        for spec in self.methods:
            Spec.parse(spec)


def load_boards(path: str | Path) -> list[Board]:
    path = Path(path)
    config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    boards = []
    for entry in config.get("boards", []):
        sources = tuple(str((path.parent / s).resolve()) for s in entry["sources"])
        name = check_board_name(entry["name"], path)
        boards.append(Board(name, entry["kind"], sources, tuple(entry["methods"]), entry.get("title", "")))
    if len({b.name for b in boards}) != len(boards):
        raise ValueError(f"{path}: board names must be distinct")
    return boards


def source_files(sources: tuple[str, ...] | list[str]) -> list[Path]:
    """Log files named by `sources`: files as given, folders scanned recursively in sorted order."""
    files: list[Path] = []
    for source in map(Path, sources):
        if source.is_dir():
            files += sorted(p for p in source.rglob("*") if is_log_file(p))
        else:
            files.append(source)
    return files


def ingest(store: Store, board: Board) -> list[IngestReport]:
    return store.ingest(source_files(board.sources), board.kind)


def reduce(store: Store, kind: str, specs: list[str] | tuple[str, ...], client=None, use_cache: bool = False) -> Statistics:
    return reduce_store(store, kind, needs(specs), client=client, use_cache=use_cache)


def rate(stats: Statistics, specs: list[str] | tuple[str, ...]) -> tuple[list[Ratings], dict[str, float]]:
    return _rate_each(specs, lambda spec: run(spec, stats))


def _rate_each(specs, rate_one) -> tuple[list[Ratings], dict[str, float]]:
    ratings, timings = [], {}
    for spec in specs:
        start = time.perf_counter()
        ratings.append(rate_one(spec))
        timings[f"rate {spec}"] = time.perf_counter() - start
    return ratings, timings


def _rate_game(game, text: str) -> Ratings:
    spec = Spec.parse(text)
    if spec.method.needs != ("game_data",):
        raise ValueError(f"{spec.name} does not rate normal-form games (game methods: deviation, nash-averaging, "
                         "affinity-cce, affinity-ne, uniform)")
    return apply(spec, game)


@dataclass
class BoardResult:
    board: Board
    out: Path
    ratings: list[Ratings]
    reports: list[IngestReport]
    timings: dict[str, float] = field(default_factory=dict)


def write_board(store: Store, board: Board, ratings: list[Ratings], out: Path, timings: dict[str, float]) -> list[Path]:
    """Publish a board's ratings with the row accounting of every file in its store."""
    inputs = sorted((r for r in store.manifest.files.values() if r.kind == board.kind), key=lambda r: r.source)
    record = RunRecord(board.kind, list(board.methods), str(store.root), inputs,
                       parameters={"board": board.name, "sources": list(board.sources)}, timings=timings)
    return publish(out, ratings, store.dictionary("agents").names, record, board.title or board.name,
                   judges=store.dictionary("judges").names)


def summary_markdown(store: Store, board: Board, ratings: list[Ratings], top: int = 25) -> str:
    """The board's leaderboards cut to the top agents, e.g. for a Prefect artifact."""
    return leaderboard_markdown(ratings, store.dictionary("agents").names, board.title or board.name, top=top)


def rate_game(path: str | Path, specs: list[str] | tuple[str, ...], out: Path, title: str = "") -> list[Ratings]:
    """Rate the strategies of an nfg file (no store): names published as `player:strategy`."""
    from pipeline.logs.nfg import read_nfg

    game = read_nfg(path)
    ratings, timings = _rate_each(specs, lambda spec: _rate_game(game, spec))
    record = RunRecord("nfg", list(specs), "", [], parameters={"game": str(path)}, timings=timings)
    publish(out, ratings, game.labels, record, title or Path(path).name)
    return ratings


def run_board(board: Board, store: Store, out: Path, client=None) -> BoardResult:
    """Ingest, reduce, rate and publish one board, in the calling process (no Prefect)."""
    timings: dict[str, float] = {}
    start = time.perf_counter()
    reports = ingest(store, board)
    timings["ingest"] = time.perf_counter() - start
    start = time.perf_counter()
    stats = reduce(store, board.kind, board.methods, client)
    timings["reduce"] = time.perf_counter() - start
    ratings, rate_timings = rate(stats, board.methods)
    timings |= rate_timings
    write_board(store, board, ratings, out, timings)
    return BoardResult(board, out, ratings, reports, timings)
