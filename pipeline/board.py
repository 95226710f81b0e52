"""Leaderboards as configured units of work: which logs, of which kind, rated by which methods.

A board has its own store (`<stores>/<name>`) so that two unrelated arenas never share counts.
The nightly flow, the demo and `vase rate` all go through these functions; the flows only add
orchestration around them. A board of a kind that is rated directly (`nfg`: a game file) has no
store: it rates the one file its sources name.

Config file (YAML), paths relative to the file:
```yaml
boards:
  - name: llmfao-crowd
    kind: battles
    sources: [llmfao]            # files or folders (folders are scanned for the kind's files)
    methods: [borda, copeland]
    by: category                 # optional: also one board per category, or per value of any column
    min_records: 25              # optional: agents with fewer records are provisional (`pipeline.methods.standing`)
    order: score                 # optional: the headline ranks' key: score, lower or rank_ub
    mapping:                     # optional: how the files' columns and values become the kind's
      columns: model_a=left,model_b=right,judge=worker   # (`pipeline.logs.mapping`; the keys are
      values: [winner:left=model_a,right=model_b]        #  the options of `vase rate` without --:
      names: models.csv:id=name                          #  preset, columns, values, set, names,
                                                         #  where, seats; paths relative to the file)
```

Method specs are parsed once, when a board is made (`Board.methods` holds `Spec`s); a spec given
twice under different spellings (`borda`, `borda:normalise=false`) runs once, and run.json says
so (`parameters.methods_merged`). A method that cannot rate the data (a `RatingError`), or that
fails in any other way, does not stop the board: the other methods are published, and run.json's
`errors` holds its one-line message with the agents named.

A board `by: category` also rates each category of its logs on its own, into
`<out>/category=<folder>/` (`pipeline.paths.category_folder`): the statistics of a category are
reduced from its rows only, so its board is the one a store holding only those rows would give.
Rows without a category count in the overall board only. One category that fails never stops
the others or the overall board; the overall run.json lists every category, its rows, and why
one failed.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import math
import os
import re
import shutil
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

import pipeline.games  # noqa: F401  (registers the nfg kind)
from pipeline.logs import KINDS, Mapping, MappingError, log_kind
from pipeline.logs.presets import with_preset
from pipeline.methods import REGISTRY, Ratings, Spec, needed_statistics, run
from pipeline.methods.bradley_terry import AUTO, MIN_BATTLES
from pipeline.methods.convergence import RatingError
from pipeline.methods.registry import Size, over_budget, unique_specs
from pipeline.methods.standing import MIN_RECORDS, PROVISIONAL, Standing, check_standing
from pipeline.paths import UnsafePath, category_folder, check_board_name, inside, is_url
from pipeline.progress import progress_shown, stage
from pipeline.report import RunRecord, leaderboard_markdown, publish, write_report
from pipeline.report.outfolder import check_out, replacing_run
from pipeline.report.provenance import REPEATED_LINE
from pipeline.stats import Statistics, reduce_store
from pipeline.stats.categories import category_counts
from pipeline.stats.extras import kind_statistics
from pipeline.stats.game_data import PromptCounts
from pipeline.stats.recency import AGES_FROM, HALF_LIFE, NO_DECAY
from pipeline.stats.reduce import AsOfError, stored_rows
from pipeline.store import IngestReport, Store, is_store
from pipeline.store.files import atomic_write, sha256_file
from pipeline.store.location import log_files, read_table

log = logging.getLogger(__name__)


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
    by: str | None = None  # "category", or a column of the files: also one board per category (or value)
    min_records: int = MIN_RECORDS  # agents with fewer records are provisional
    order: str = "score"  # the key of the headline ranks (`pipeline.methods.standing.ORDERS`)
    mapping: Mapping = field(default_factory=Mapping)
    max_quarantined: float | None = None  # the share of rows read that may be quarantined (`check_quarantined`)
    as_of: dt.date | None = None  # rate the records dated that day or before (`pipeline.stats.recency`)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"board {self.name}: unknown kind {self.kind!r}; expected one of {', '.join(KINDS)}")
        check_standing(self.min_records, self.order, f"board {self.name}: ")
        if self.by is not None:
            check_by(self.kind, self.by, f"board {self.name}: ")
            if self.by != BY[0]:  # a column of the files: it becomes the rows' category
                object.__setattr__(self, "mapping", self.mapping.with_split(self.by))
        try:
            self.mapping.check(KINDS[self.kind])
        except MappingError as exc:
            raise MappingError(f"board {self.name}: {exc}") from None
        try:
            methods, merged = unique_specs(self.methods)
        except ValueError as exc:
            raise ValueError(f"board {self.name}: {exc}") from None
        object.__setattr__(self, "methods", methods)
        object.__setattr__(self, "merged", dict(self.merged) | merged)
        try:
            check_methods_fit(self.kind, methods)
        except ValueError as exc:
            raise ValueError(f"board {self.name}: {exc}") from None
        kind = KINDS[self.kind]
        if (self.as_of is not None or any(half_life(s) != NO_DECAY for s in methods)) and not kind.dated:
            raise ValueError(f"board {self.name}: {kind.name} logs have no timestamp: --as-of and {HALF_LIFE} need one")
        if any(half_life(s) != NO_DECAY for s in methods) and kind.comparisons is None:
            raise ValueError(f"board {self.name}: {HALF_LIFE} weighs comparisons (battles), not {kind.name}")

    @property
    def standing(self) -> Standing:
        """Who holds the board's headline ranks, and by which key."""
        return Standing(self.min_records, self.order)


BY = ("category",)  # what a board can be split by, besides any column of its files


def check_by(kind: str, by: str, where: str = "") -> None:
    """Raise ValueError (one line naming the kind) unless boards of `kind` can be split `by` (its
    category, or a column of its files)."""
    if not by.strip():
        raise ValueError(f"{where}by: expected category or a column name")
    if KINDS[kind].category is None:
        able = ", ".join(name for name, k in KINDS.items() if k.category is not None)
        raise ValueError(f"{where}{kind} logs have no category column, so they cannot be rated by category (kinds that can: {able})")


def rates(method, kind: str, statistics: Iterable[str] | None = None) -> bool:
    """Whether `method` rates logs of `kind`: it is not limited to other kinds, and the kind's logs
    give every statistic it needs (`statistics`, else those it always needs)."""
    declared = KINDS[kind]
    given = kind_statistics(kind) if declared.stored else frozenset(declared.statistics)
    return (method.kinds is None or kind in method.kinds) and set(method.statistics if statistics is None else statistics) <= given


def kinds_rated(method) -> list[str]:
    """The log kinds `method` rates, by name."""
    return sorted(kind for kind in KINDS if rates(method, kind))


def check_methods_fit(kind: str, specs: Iterable[Spec]) -> None:
    """Raise ValueError naming the first method that cannot rate logs of `kind`, before any work:
    a method limited to other kinds, or one needing statistics the kind's logs do not give."""
    for spec in specs:
        if not rates(spec.method, kind, spec.method.statistics + spec.method.conditional_statistics(spec.params)):
            able = sorted(name for name, m in REGISTRY.items() if rates(m, kind))
            raise ValueError(f"{spec.name} does not rate {kind} files (methods that do: {', '.join(able)})")


BOARD_KEYS = ("name", "kind", "sources", "methods", "title", "by", "min_records", "order", "mapping",
              "max_quarantined")  # the first four required


def load_boards(path: str | Path) -> list[Board]:
    """The boards of a YAML config, each checked before any work: known keys only (a misspelt
    `method:` is not silently dropped), `sources` and `methods` lists of text (one text is a list
    of one: `sources: arena.csv` is that file, not its letters), and at least one method."""
    path = Path(path)
    config = read_config(path)
    entries = config.get("boards") if isinstance(config, dict) else None
    if not isinstance(entries, list):
        raise ValueError(f"{path}: expected `boards:`, a list of boards, each with {', '.join(BOARD_KEYS[:4])}")
    if not entries:  # an emptied config would otherwise publish an empty run as `latest`
        raise ValueError(f"{path}: lists no boards")
    boards = []
    for i, entry in enumerate(entries, start=1):
        where = f"{path}: board {entry.get('name', i) if isinstance(entry, dict) else i}"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: expected a mapping with {', '.join(BOARD_KEYS[:4])}, got {entry!r}")
        if unknown := sorted(map(str, set(entry) - set(BOARD_KEYS))):
            raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}; a board has {', '.join(BOARD_KEYS)}")
        if missing := [key for key in BOARD_KEYS[:4] if key not in entry]:
            raise ValueError(f"{where}: missing {', '.join(missing)}")
        sources, methods = (text_list(entry[key], f"{where}: {key}") for key in ("sources", "methods"))
        if not methods:
            raise ValueError(f"{where}: lists no methods")
        name = check_board_name(entry["name"], path)
        mapping = config_mapping(entry.get("mapping"), path.parent, where)
        limit = entry.get("max_quarantined", MAX_QUARANTINED)
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not 0 <= limit <= 1:
            raise ValueError(f"{where}: max_quarantined: expected a share between 0 and 1, got {limit!r}")
        boards.append(Board(name, entry["kind"], tuple(s if is_url(s) else str((path.parent / s).resolve()) for s in sources), methods,
                            entry.get("title", ""), by=entry.get("by"), min_records=entry.get("min_records", MIN_RECORDS),
                            order=entry.get("order", "score"), mapping=mapping, max_quarantined=float(limit)))
    if len({b.name for b in boards}) != len(boards):
        raise ValueError(f"{path}: board names must be distinct")
    return boards


MAPPING_KEYS = ("preset", "columns", "values", "set", "names", "where", "seats")


def config_mapping(entry: object, base: Path, where: str) -> Mapping:
    """A board's `mapping:` (the options of `vase rate` as keys, without `--`), paths relative to `base`."""
    if entry is None:
        return Mapping()
    if not isinstance(entry, dict) or (unknown := sorted(map(str, set(entry) - set(MAPPING_KEYS)))):
        raise ValueError(f"{where}: mapping: expected some of {', '.join(MAPPING_KEYS)}"
                         + (f", not {', '.join(unknown)}" if isinstance(entry, dict) else f", got {entry!r}"))
    single = {key: entry.get(key, "") for key in ("preset", "columns", "set", "names", "seats")}
    if wrong := [key for key, value in single.items() if not isinstance(value, str)]:
        raise ValueError(f"{where}: mapping: {wrong[0]} is one text")
    try:
        return with_preset(single["preset"], columns=single["columns"],
                           values=text_list(entry.get("values", []), f"{where}: mapping: values"), constants=single["set"],
                           names=single["names"], seats=single["seats"], where=text_list(entry.get("where", []), f"{where}: mapping: where"),
                           base=base)
    except MappingError as exc:
        raise ValueError(f"{where}: mapping: {exc}") from None


def read_config(path: Path) -> object:
    """The YAML of a config file; a file that cannot be read or parsed is one line naming it (and the line)."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the config: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ValueError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', None) or exc}") from None


def text_list(value: object, where: str) -> tuple[str, ...]:
    """A config value that lists texts: a list of texts, or one text (a list of one)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise ValueError(f"{where}: expected a list of texts, got {value!r}")
    return tuple(items)


def source_files(board: Board) -> list[Path | str]:
    """The files a board's sources name: files as given, folders scanned recursively (in sorted
    order, not through links to folders) for the files of the board's kind, except inside a vase
    store: a store kept beside its logs would otherwise take in its own partitions, dictionaries
    and quarantine as logs, again on every run. A URL names objects the same way (`log_files`)."""
    suffixes = log_kind(board.kind).suffixes
    files: list[Path | str] = []
    for given in board.sources:
        if is_url(given):
            files += log_files(given, suffixes)
            continue
        source = Path(given)
        if source.is_dir():
            found = []
            for folder, subfolders, names in os.walk(source):
                subfolders[:] = [name for name in subfolders if not is_store(Path(folder, name))]
                found += [Path(folder, name) for name in names if Path(name).suffix.lower() in suffixes]
            files += sorted(p for p in found if p.is_file())
        else:
            files.append(source)
    return files


MAX_QUARANTINED = 0.05  # the default share of rows read that may be quarantined (CLI and nightly config)


class QuarantineAlarm(ValueError):
    """Too many of the rows read were quarantined: one line, the share and the top reasons."""


def check_quarantined(store: Store, board: Board, reports: list[IngestReport]) -> None:
    """Raise `QuarantineAlarm` if the rows quarantined from the files ingested now are more than
    `board.max_quarantined` of the rows they gave. Records already stored from an earlier file
    (a cumulative dump) are not counted: storing them once is what the quarantine is for."""
    if board.max_quarantined is None:
        return
    read = [r for r in reports if r.status == "ingested" and r.rows_in]
    reasons: dict[str, int] = {}
    for report in read:
        if report.quarantine:
            for reason in read_table(store.locate(report.quarantine), columns=["reason"]).column("reason").to_pylist():
                if not reason.startswith("duplicate ") or " (first in " not in reason:
                    reason = re.sub(REPEATED_LINE, "", reason)  # one reason, whatever line it repeats
                    reasons[reason] = reasons.get(reason, 0) + 1
    rows, bad = sum(r.rows_in for r in read), sum(reasons.values())
    if rows and bad / rows > board.max_quarantined:
        top = sorted(reasons.items(), key=lambda item: (-item[1], item[0]))[:3]
        raise QuarantineAlarm(f"{bad / rows:.1%} of the {rows:,} rows read were quarantined, above --max-quarantined "
                              f"{board.max_quarantined:.1%}: " + "; ".join(f"{n:,} {reason!r}" for reason, n in top))


INGEST_COMMITS = 100  # at most this many store commits when progress is shown


def ingest(store: Store, board: Board) -> list[IngestReport]:
    """Store the board's new files; a kind rated directly stores nothing (its file is read when rated).

    When progress is shown (`pipeline.progress`), files are stored in up to `INGEST_COMMITS`
    batches, each committed on its own, and the bar moves after each."""
    if not log_kind(board.kind).stored:
        return []
    files = source_files(board)
    if not progress_shown():
        return store.ingest(files, board.kind, board.mapping)
    reports: list[IngestReport] = []
    size = max(1, math.ceil(len(files) / INGEST_COMMITS))
    with stage("ingest", len(files)) as advance:
        for start in range(0, len(files), size):
            batch = files[start:start + size]
            advance(0, Path(str(batch[0])).name)
            reports += store.ingest(batch, board.kind, board.mapping)
            advance(len(batch))
    return reports


def _game_file(board: Board) -> Path:
    files = source_files(board)
    if len(files) != 1:
        raise ValueError(f"board {board.name}: a {board.kind} board rates one file, and its sources name {len(files)}; "
                         "give each file its own board")
    return files[0]


def half_life(spec: Spec) -> float:
    """The half-life in days `spec` weighs records by (`NO_DECAY`: none)."""
    return float(spec.effective_params.get(HALF_LIFE, NO_DECAY))


def reduce(store: Store, board: Board, client=None, use_cache: bool = False, category: str | None = None,
           specs: Sequence[Spec] | None = None, half_life_days: float = NO_DECAY) -> Statistics:
    """The statistics `specs` (by default the board's methods) need: reduced from its store (from one
    category's rows, given one; as of the board's date; records weighed by age given a finite
    `half_life_days`), or read from its file for a kind rated directly. Prompts of battles are named
    here, for the games built from them."""
    kind = log_kind(board.kind)
    if not kind.stored:
        return kind.load(_game_file(board))[0]
    stats = reduce_store(store, board.kind, needed_statistics(board.methods if specs is None else specs), client=client,
                         use_cache=use_cache, category=category, as_of=board.as_of, half_life_days=half_life_days)
    data = stats.extra.get("game_data")
    if isinstance(data, PromptCounts):
        named = dataclasses.replace(data, prompt_names=tuple(store.dictionary("prompts").names))
        stats = dataclasses.replace(stats, extra=stats.extra | {"game_data": named})
    return stats


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

    def in_order(self, specs: Sequence[Spec]) -> Rated:
        """The same, the ratings in the order of `specs` (rated in groups, `half_life_groups`)."""
        order = [spec.canonical for spec in specs]
        self.ratings.sort(key=lambda r: order.index(r.spec))
        return self

    def messages(self, names: Sequence[str]) -> dict[str, str]:
        """Each refusal as its one-line message, agents named."""
        return {spec: error.named(names) for spec, error in self.refused.items()}


def stored_size(store: Store, kind: str) -> Size | None:
    """What the cost models read, from the store's manifest alone (`Store.footprint`): exact for a store of one
    file, a lower bound for several; None for a kind rated directly or a store without footprints."""
    footprint = store.footprint(kind) if log_kind(kind).stored else None
    return None if footprint is None else Size(footprint.agents, footprint.pairs, footprint.tasks, footprint.ballots,
                                               footprint.members, kind)


def refuse_before_reading(store: Store, board: Board) -> Rated:
    """The board's specs refused before a row is read, so that the reduction computes only what the
    others need: those the manifest's row counts show cannot rate the data (`early_refusals`), and those
    its footprint prices past the budget (`over_budget` of `stored_size`). A lower bound refuses only
    what is certainly over; the other specs are judged again on the reduced statistics."""
    rated = Rated(refused=early_refusals(store, board))
    if (size := stored_size(store, board.kind)) is not None:
        for spec in board.methods:
            if spec.canonical not in rated.refused and (refusal := over_budget(spec, size)) is not None:
                rated.refused[spec.canonical] = RatingError(refusal)
    return rated


def input_size(stats: Statistics) -> Size:
    """The size the methods' cost models read, from what the reduction computed."""
    pairs = stats.pairwise
    compared = 0 if pairs is None else int(((pairs.wins + pairs.wins.T + pairs.ties) != 0).sum()) // 2
    data = stats.extra.get("game_data")
    tasks = next((len(v) for v in (getattr(data, "tasks", None), getattr(data, "prompts", None)) if v is not None), 0)
    ballots = () if stats.histogram is None else stats.histogram.ballots
    return Size(len(stats.agents), compared, tasks, len(ballots), sum(len(group) for ballot in ballots for group in ballot),
                stats.kind)


def rate(stats: Statistics, specs: Iterable[str | Spec], client=None, standing: Standing | None = None,
         as_of: dt.date | None = None) -> Rated:
    """Rate with every spec; a spec whose cost model expects it past the budget is refused before it runs
    (`pipeline.methods.registry.over_budget`); methods that fan out do so on `client` (None: local
    threads); the headline ranks are the `standing`'s (None: the methods'). The ratings' info says the
    date the records were rated `as_of` and the half-life they were weighed by, for the report. Each spec's
    wall time (`rate <spec>`) and the process's CPU time while it ran (`cpu <spec>`: the cost models' unit,
    which a loaded machine does not inflate; work fanned out to Dask workers is not in it) go to the
    timings. A method
    that cannot rate the data is refused, and the others still rate. So is a method that fails
    otherwise (a parameter value it rejects, a bug): its refusal names the error, and its
    traceback goes to this module's log at DEBUG level."""
    rated = Rated()
    size = input_size(stats)
    when = ({"as_of": str(as_of)} if as_of is not None else {}) | (stats.decay.record() if stats.decay is not None else {})
    for spec in map(Spec.parse, specs):
        start, cpu = time.perf_counter(), time.process_time()
        if (refusal := over_budget(spec, size)) is not None:  # before any of the method's work
            rated.refused[spec.canonical] = RatingError(refusal)
            continue
        try:
            ratings = run(spec, stats, client=client, standing=standing)
            rated.ratings.append(dataclasses.replace(ratings, info=ratings.info | when))
        except RatingError as error:
            rated.refused[spec.canonical] = error
        except Exception as error:  # noqa: BLE001 (one method never stops the others)
            log.debug("%s failed", spec, exc_info=True)
            reason = next(iter(str(error).splitlines()), "")
            reason = reason if isinstance(error, ValueError) else f"{type(error).__name__}: {reason}"
            rated.refused[spec.canonical] = RatingError(reason if reason.startswith(f"{spec.name}:") else f"{spec.name}: {reason}")
        rated.timings[f"rate {spec}"] = time.perf_counter() - start
        rated.timings[f"cpu {spec}"] = time.process_time() - cpu  # what the cost models estimate (one core's seconds)
    return rated


def early_refusals(store: Store, board: Board) -> dict[str, RatingError]:
    """Specs that cannot rate the board's data, found from the store's manifest before any row is read:
    `prior=auto` on fewer battles than cross-validation needs (`prior_choice.MIN_BATTLES`; the method
    also refuses fewer battles' weight, which it learns from the counts)."""
    kind = log_kind(board.kind)
    auto = [s for s in board.methods if s.params.get("prior") == AUTO]
    if not auto or not kind.stored or kind.comparisons is None:
        return {}
    rows = stored_rows(store, board.kind, board.as_of)
    if rows >= MIN_BATTLES:
        return {}
    return {spec.canonical: RatingError(f"{spec.name}: prior=auto needs at least {MIN_BATTLES} battles to cross-validate, "
                                        f"and the log holds {rows}" + (f" as of {board.as_of}" if board.as_of else "")
                                        + "; give the prior (for example prior=1)") for spec in auto}


def half_life_groups(specs: Iterable[Spec]) -> dict[float, list[Spec]]:
    """The specs by the half-life they weigh records by (one reduction each), the unweighed (inf) first."""
    groups: dict[float, list[Spec]] = {}
    for spec in specs:
        groups.setdefault(half_life(spec), []).append(spec)
    return dict(sorted(groups.items(), reverse=True))


def shown_statistics(reduced: dict[float, Statistics]) -> Statistics:
    """What the report shows of the statistics (records per agent, the head-to-head counts), from the reductions
    by half-life: the unweighed ones, or when every spec weighs records, weighed ones without their pair counts."""
    if NO_DECAY in reduced:
        return reduced[NO_DECAY]
    return dataclasses.replace(next(iter(reduced.values())), pairwise=None)


def reduce_and_rate(store: Store, board: Board, client=None, use_cache: bool = False,
                    category: str | None = None) -> tuple[Statistics | None, Rated]:
    """Reduce and rate with every spec of the board: one reduction per half-life the specs weigh records by
    (`half_life_groups`), after the specs refused before any row is read (`refuse_before_reading`); the
    statistics the report shows (`shown_statistics`; None when every spec was refused, as nothing was
    read) and the ratings, in the board's order."""
    rated = refuse_before_reading(store, board) if category is None else Rated()
    groups = half_life_groups(s for s in board.methods if s.canonical not in rated.refused)
    reduced = {}
    for days, specs in groups.items():
        reduced[days] = reduce(store, board, client, use_cache, category, specs, days)
        rated.add(rate(reduced[days], specs, client, board.standing, board.as_of))
    return (shown_statistics(reduced) if reduced else None), rated.in_order(board.methods)


def agent_names(store: Store, board: Board) -> list[str]:
    """The names of the board's agent ids: the store's agents dictionary, or the strategies of its game file."""
    kind = log_kind(board.kind)
    return store.dictionary("agents").names if kind.stored else kind.load(_game_file(board))[1]


def inputs(store: Store, board: Board) -> list[IngestReport]:
    """The files behind a board's ratings, with their content hashes and row accounting."""
    if log_kind(board.kind).stored:
        return store.inputs(board.kind)
    path = _game_file(board)
    return [IngestReport(str(path), board.kind, sha256_file(path), "read")]


@dataclass
class BoardResult:
    board: Board
    out: Path
    ratings: list[Ratings]
    reports: list[IngestReport]
    timings: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # canonical spec -> one-line message, agents named
    categories: Categories | None = None  # a board rated by category: its categories' boards


def keep_quarantine(store: Store, reports: list[IngestReport], out: Path) -> list[IngestReport]:
    """Copy the quarantine files of `reports` from a store about to be deleted into `out/quarantine/`;
    the reports returned name the copies (absolute paths, as there is no store to be relative to)."""
    kept = []
    for report in reports:
        if report.quarantine:
            copy = Path(out).resolve() / report.quarantine
            atomic_write(copy, lambda tmp, source=store.root / report.quarantine: shutil.copyfile(source, tmp))
            report = dataclasses.replace(report, quarantine=str(copy))
        kept.append(report)
    return kept


def write_board(store: Store, board: Board, rated: Rated, out: Path, timings: dict[str, float],
                stats: Statistics | None = None, temporary_store: bool = False, *, category: str | None = None,
                categories: Categories | None = None) -> list[Path]:
    """Publish a board's ratings with the row accounting of every file behind them (and, given the
    statistics, records per agent and the head-to-head table); refusals go to run.json. A
    `temporary_store`'s quarantine is kept in `out/quarantine/` (a category's board, published in
    a subfolder of its board's, names its board's copies), and run.json names no store. The
    board of one `category` says so in its parameters and title; the overall board of a board
    rated by category lists its `categories`."""
    stored = log_kind(board.kind).stored
    names = agent_names(store, board)
    parameters = {"board": board.name, "sources": list(board.sources)}
    if board.merged:
        parameters["methods_merged"] = board.merged
    if board.by is not None:
        parameters["by"] = board.by
    if board.mapping:
        parameters["mapping"] = board.mapping.record()
    if category is not None:
        parameters["category"] = category
    if board.as_of is not None:
        parameters["as_of"] = str(board.as_of)
    if decays := {r.spec: {k: r.info[k] for k in (HALF_LIFE, AGES_FROM)} for r in rated.ratings if AGES_FROM in r.info}:
        parameters[HALF_LIFE] = decays
    parameters |= {"min_records": board.min_records, "order": board.order,
                   "provisional_count": {r.spec: int(np.sum(r.extras[PROVISIONAL])) for r in rated.ratings
                                          if PROVISIONAL in r.extras}}
    behind = inputs(store, board)
    if temporary_store:
        behind = keep_quarantine(store, behind, out if category is None else out.parent)
    record = RunRecord(board.kind, [str(s) for s in board.methods], store.url if stored and not temporary_store else "",
                       behind, parameters=parameters, timings=timings, errors=rated.messages(names),
                       categories=categories.record() if categories is not None else {})
    title = board.title or board.name
    return publish(out, rated.ratings, names, record, title if category is None else f"{title} \u00b7 {category}",
                   judges=store.dictionary("judges").names if stored else None, stats=stats)


@dataclass
class CategoryResult:
    """One category's board: its folder (under the board's), its rows, the refusals of its
    methods (agents named), or why it failed and was not published."""

    category: str
    folder: str
    rows: int
    errors: dict[str, str] = field(default_factory=dict)
    failed: str = ""


@dataclass
class Categories:
    """A board's categories as rated: the column read, the rows without a category (rated in the
    overall board only), and each category's board."""

    column: str
    rows_without_category: int
    boards: list[CategoryResult] = field(default_factory=list)

    def record(self) -> dict[str, object]:
        """run.json's `categories`."""
        boards = [{"category": r.category, "folder": r.folder, "rows": r.rows} | ({"errors": r.errors} if r.errors else {})
                  | ({"failed": r.failed} if r.failed else {}) for r in self.boards]
        return {"column": self.column, "rows_without_category": self.rows_without_category, "boards": boards}


def rate_category(store: Store, board: Board, category: str, out: Path, client=None, use_cache: bool = False,
                  temporary_store: bool = False) -> dict[str, str]:
    """Reduce, rate and publish one category's board into `out`; its methods' refusals, agents named."""
    start = time.perf_counter()
    stats, rated = reduce_and_rate(store, board, client, use_cache, category)
    timings = {"reduce": time.perf_counter() - start - sum(rated.timings.values())}
    write_board(store, board, rated, out, timings | rated.timings, stats, temporary_store, category=category)
    return rated.messages(agent_names(store, board))


def rate_categories(store: Store, board: Board, out: Path, client=None, use_cache: bool = False,
                    temporary_store: bool = False) -> Categories:
    """Rate each category of the board's logs into `out/category=<folder>/`, in code-point order
    of the categories. A category that fails (any error: its rows cannot be reduced, two
    categories would share a folder, its folder holds files vase did not write) is recorded with a
    one-line reason, the folder removed if this run made it, and the others still publish."""
    out = Path(out)
    counts = category_counts(store, board.kind, client=client, as_of=board.as_of)
    rated = Categories(log_kind(board.kind).category, counts.pop(None, 0))  # rows without one: the overall board only
    folders = {category: category_folder(category) for category in counts}
    for category, folder in folders.items():
        result = CategoryResult(category, folder, counts[category])
        existed = (out / folder).exists()
        try:
            if sharing := [c for c, f in folders.items() if f == folder and c != category]:
                raise UnsafePath(f"categories {category!r} and {sharing[0]!r} would share the folder {folder}; rename one")
            check_out(out / folder)  # a `category=` folder of the user's is never written into
            result.errors = rate_category(store, board, category, inside(out, folder), client, use_cache, temporary_store)
        except Exception as exc:  # noqa: BLE001 (one category never stops the others)
            result.failed = f"{type(exc).__name__}: {next(iter(str(exc).splitlines()), '')}"
            if not existed:
                shutil.rmtree(out / folder, ignore_errors=True)
        rated.boards.append(result)
    return rated


def summary_markdown(store: Store, board: Board, ratings: list[Ratings], top: int = 25) -> str:
    """The board's leaderboards cut to the top agents, e.g. for a Prefect artifact."""
    return leaderboard_markdown(ratings, agent_names(store, board), board.title or board.name, top=top)


def run_board(board: Board, store: Store, out: Path, client=None, temporary_store: bool = False) -> BoardResult:
    """Ingest, reduce, rate and publish one board, in the calling process (no Prefect); the reduction and
    the methods that fan out run on `client` (None: local threads). A `temporary_store` (deleted
    after the call) leaves its quarantine in `out`."""
    timings: dict[str, float] = {}
    start = time.perf_counter()
    reports = ingest(store, board)
    timings["ingest"] = time.perf_counter() - start
    check_quarantined(store, board, reports)
    start = time.perf_counter()
    try:
        stats, rated = reduce_and_rate(store, board, client)
    except AsOfError:
        raise
    except ValueError as exc:
        said = str(exc)
        if temporary_store:  # never a store the user did not ask for
            said = said.replace(f"the store at {store.url} holds no {board.kind}", f"no {board.kind} to rate")
        if reports and not any(r.rows_accepted for r in reports):  # say why this run's files gave nothing
            raise ValueError(f"{said}: " + "; ".join(
                r.error or f"{r.source}: {r.status}, {r.rows_accepted} of {r.rows_in} rows accepted"
                for r in reports)) from None
        raise ValueError(said) from None
    timings["reduce"] = time.perf_counter() - start - sum(v for k, v in rated.timings.items() if k.startswith("rate "))
    timings |= rated.timings
    categories = None
    with replacing_run(out):  # an earlier run's files in `out` (its category boards too) are never shown as this run's
        if board.by is not None:
            start = time.perf_counter()
            categories = rate_categories(store, board, out, client, temporary_store=temporary_store)
            timings["categories"] = time.perf_counter() - start
        write_board(store, board, rated, out, timings, stats, temporary_store, categories=categories)
    write_report(out)
    return BoardResult(board, out, rated.ratings, reports, timings, rated.messages(agent_names(store, board)), categories)
