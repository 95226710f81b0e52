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

Method specs are parsed once, when a board is made (`Board.methods` holds `Spec`s); a spec given
twice under different spellings (`borda`, `borda:normalise=false`) runs once, and run.json says
so (`parameters.methods_merged`). A method that cannot rate the data (a `RatingError`) does not
stop the board: the other methods are published, and run.json's `errors` holds its one-line
message with the agents named.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from pipeline.logs import KINDS, is_log_file
from pipeline.methods import Ratings, Spec, apply, needs, run
from pipeline.methods.convergence import RatingError
from pipeline.methods.registry import unique_specs
from pipeline.report import RunRecord, leaderboard_markdown, publish
from pipeline.stats import Statistics, reduce_store
from pipeline.store import IngestReport, Store


@dataclass(frozen=True)
class Board:
    """A leaderboard: `methods` may be given as spec texts; they are kept as distinct `Spec`s, and
    `merged` maps each spec given more than once to the spellings given."""

    name: str
    kind: str
    sources: tuple[str, ...]
    methods: tuple[Spec, ...]
    title: str = ""
    merged: dict[str, list[str]] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"board {self.name}: unknown kind {self.kind!r}; expected one of {', '.join(KINDS)}")
        try:
            methods, merged = unique_specs(self.methods)
        except ValueError as exc:
            raise ValueError(f"board {self.name}: {exc}") from None
        object.__setattr__(self, "methods", methods)
        object.__setattr__(self, "merged", dict(self.merged) | merged)


def load_boards(path: str | Path) -> list[Board]:
    path = Path(path)
    config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    boards = []
    for entry in config.get("boards", []):
        sources = tuple(str((path.parent / s).resolve()) for s in entry["sources"])
        boards.append(Board(entry["name"], entry["kind"], sources, tuple(entry["methods"]), entry.get("title", "")))
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


def reduce(store: Store, kind: str, specs: Iterable[str | Spec], client=None, use_cache: bool = False) -> Statistics:
    return reduce_store(store, kind, needs(specs), client=client, use_cache=use_cache)


@dataclass
class Rated:
    """The outcome of rating with several specs: the ratings, a timing per spec, and the specs refused."""

    ratings: list[Ratings] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    refused: dict[str, RatingError] = field(default_factory=dict)  # canonical spec -> why

    def add(self, other: Rated) -> None:
        self.ratings += other.ratings
        self.timings |= other.timings
        self.refused |= other.refused

    def messages(self, names: Sequence[str]) -> dict[str, str]:
        """Each refusal as its one-line message, agents named."""
        return {spec: error.named(names) for spec, error in self.refused.items()}


def rate(stats: Statistics, specs: Iterable[str | Spec], client=None) -> Rated:
    """Rate with every spec; methods that fan out do so on `client` (None: local threads)."""
    return _rate_each(specs, lambda spec: run(spec, stats, client=client))


def _rate_each(specs: Iterable[str | Spec], rate_one: Callable[[Spec], Ratings]) -> Rated:
    rated = Rated()
    for spec in map(Spec.parse, specs):
        start = time.perf_counter()
        try:
            rated.ratings.append(rate_one(spec))
        except RatingError as error:
            rated.refused[spec.canonical] = error
        rated.timings[f"rate {spec}"] = time.perf_counter() - start
    return rated


def _rate_game(game, spec: Spec) -> Ratings:
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
    errors: dict[str, str] = field(default_factory=dict)  # canonical spec -> one-line message, agents named


def write_board(store: Store, board: Board, rated: Rated, out: Path, timings: dict[str, float]) -> list[Path]:
    """Publish a board's ratings with the row accounting of every file in its store; refusals go to run.json."""
    inputs = sorted((r for r in store.manifest.files.values() if r.kind == board.kind), key=lambda r: r.source)
    names = store.dictionary("agents").names
    parameters = {"board": board.name, "sources": list(board.sources)}
    if board.merged:
        parameters["methods_merged"] = board.merged
    record = RunRecord(board.kind, [str(s) for s in board.methods], str(store.root), inputs, parameters=parameters,
                       timings=timings, errors=rated.messages(names))
    return publish(out, rated.ratings, names, record, board.title or board.name, judges=store.dictionary("judges").names)


def summary_markdown(store: Store, board: Board, ratings: list[Ratings], top: int = 25) -> str:
    """The board's leaderboards cut to the top agents, e.g. for a Prefect artifact."""
    return leaderboard_markdown(ratings, store.dictionary("agents").names, board.title or board.name, top=top)


def rate_game(path: str | Path, specs: Iterable[str | Spec], out: Path, title: str = "") -> Rated:
    """Rate the strategies of an nfg file (no store): names published as `player:strategy`."""
    from pipeline.logs.nfg import read_nfg

    specs, merged = unique_specs(specs)
    game = read_nfg(path)
    rated = _rate_each(specs, lambda spec: _rate_game(game, spec))
    parameters = {"game": str(path)} | ({"methods_merged": merged} if merged else {})
    record = RunRecord("nfg", [str(s) for s in specs], "", [], parameters=parameters, timings=rated.timings,
                       errors=rated.messages(game.labels))
    publish(out, rated.ratings, game.labels, record, title or Path(path).name)
    return rated


def run_board(board: Board, store: Store, out: Path, client=None) -> BoardResult:
    """Ingest, reduce, rate and publish one board, in the calling process (no Prefect); the reduction and
    the methods that fan out run on `client` (None: local threads)."""
    timings: dict[str, float] = {}
    start = time.perf_counter()
    reports = ingest(store, board)
    timings["ingest"] = time.perf_counter() - start
    start = time.perf_counter()
    stats = reduce(store, board.kind, board.methods, client)
    timings["reduce"] = time.perf_counter() - start
    rated = rate(stats, board.methods, client)
    timings |= rated.timings
    write_board(store, board, rated, out, timings)
    return BoardResult(board, out, rated.ratings, reports, timings, rated.messages(store.dictionary("agents").names))
