"""The `vase` command (docs/guide.md, "Command line").

`ingest`, `rate`, `backtest`, `methods`, `kinds`, `report` and `history` use the library directly
and need no Prefect server. `demo`, which runs the nightly Prefect flow, is added by `flows.cli`
(the installed `vase` command), so the library imports nothing from `flows`. Where to compute
follows one policy, `pipeline.runtime.dask_client`.

The command starts fast: this module imports only typer and rich, and every command imports the
library it uses (polars, Dask, scipy, the methods) when it runs (`benchmarks/bench_cli_start.py`).

Exit codes: 0 done; 1 the data could not be (wholly) rated or ingested (an unreadable file, a
method that refused, nothing of the kind to rate); 2 a usage error found before any work (an
unknown kind or method, a method that does not rate the kind, a missing input, a file where a
folder is expected, a test size the log cannot give); 143 stopped by SIGTERM, after unwinding (a
temporary store deleted). Errors are one line on stderr; `--debug` shows the traceback.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from pipeline import __version__
from pipeline import cli_mapping as mapped
from pipeline.cancellation import STOP, exit_now, exit_on_sigterm
from pipeline.progress import progress_display
from pipeline.runtime import SCHEDULER_ENV, SchedulerError, dask_client, quiet_logs
from pipeline.terminal import Output, visible

if TYPE_CHECKING:
    from pipeline.store import IngestReport

# Paths and messages are never wrapped mid-word (soft_wrap: the terminal wraps long lines whole).
# Markup is off: names, paths and messages are data (an agent `[/bold]` is a name, not a closing
# tag), so what is styled is styled through `Text`.
console = Output(soft_wrap=True, markup=False)
errors = Console(stderr=True, soft_wrap=True, markup=False)
SAMPLES = Path(__file__).resolve().parent.parent / "data-samples"
TOP = 3  # agents shown per method at the end of `rate`


class OneLineErrors(TyperGroup):
    """Any error a command did not expect is printed as one line and exits 1; `--debug` re-raises it.
    A usage error (an unknown command or option, a missing or bad value) is one line and exits 2.
    A command stopped by SIGTERM (a scheduler's timeout, `kill`) unwinds as an exit with status
    143 within seconds, so what it holds is released: a temporary store is deleted, a local Dask cluster
    closed; threads still inside native code are then not waited for (`pipeline.cancellation`)."""

    def main(self, *args, standalone_mode: bool = True, **kwargs):
        # Typer's standalone mode prints a usage error as a box of 5-10 lines; here it runs
        # non-standalone, which hands the usage error (and the exit status) back to be said in one line.
        try:
            status = super().main(*args, standalone_mode=False, **kwargs)
        except typer.TyperException as exc:  # click's usage errors (and its other ClickExceptions)
            if not standalone_mode:
                raise
            status = usage_error(exc)
        except typer.Abort:
            if not standalone_mode:
                raise
            error_line("error", "aborted")
            status = 1
        except SystemExit as exc:
            if STOP.is_set() and standalone_mode:  # SIGTERM, unwound: threads still in native code are not waited for
                exit_now(exc.code if isinstance(exc.code, int) else 1)
            raise
        if not standalone_mode:
            return status
        sys.exit(status if isinstance(status, int) else 0)

    def invoke(self, ctx: typer.Context):
        with exit_on_sigterm():
            try:
                return super().invoke(ctx)
            except (typer.Exit, typer.Abort, typer.TyperException):  # typer's own: usage errors, exits
                raise
            except Exception as exc:
                if ctx.params.get("debug"):
                    raise
                from pipeline.store import DamagedStore, StoreDiskFull  # loaded already if it was raised
                from pipeline.store.location import StorageError

                said = isinstance(exc, (DamagedStore, StoreDiskFull, SchedulerError, StorageError))  # their message is the whole story
                error_line("error", str(exc) if said else f"{type(exc).__name__}: {exc} (--debug shows the traceback)")
                raise typer.Exit(1) from None


def usage_error(exc: typer.TyperException) -> int:
    """Say a usage error in one line, pointing to the command's help; its exit status (2)."""
    ctx = getattr(exc, "ctx", None)
    if type(exc).__name__ == "NoArgsIsHelpError":  # `vase` alone: its help was printed, nothing is wrong to say
        return exc.exit_code
    see = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
    error_line("error", exc.format_message().rstrip(".") + see)
    return exc.exit_code


def show_version(value: bool) -> None:
    if value:
        console.print(f"vase {__version__}", highlight=False)
        raise typer.Exit()


app = typer.Typer(cls=OneLineErrors, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Ratings of agents from logs of battles, games, scores and ballots.")

KindOption = Annotated[str, typer.Option("--kind", "-k", help="log kind, e.g. battles, games, scores, ballots (`vase kinds` lists them)")]
SchedulerOption = Annotated[Optional[str], typer.Option(
    "--scheduler", help=f"address of an existing Dask scheduler (default: ${SCHEDULER_ENV}); tls:// uses Dask's TLS configuration")]
MethodsOption = Annotated[list[str], typer.Option("--method", "-m", help="method spec, e.g. borda or approval:k=3 (repeatable)")]


class Format(str, Enum):
    """How a command prints its listing: a table for people, JSON or TSV for programs."""

    table = "table"
    json = "json"
    tsv = "tsv"


FormatOption = Annotated[Format, typer.Option("--format", help="table, or json or tsv for programs (one record per line)")]
ForceOption = Annotated[bool, typer.Option("--force", help="write into an --out folder that holds files of no vase run (they are kept)")]


@app.callback()
def main(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="show the INFO log lines of Dask and Prefect")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="show the traceback of an error")] = False,
    version: Annotated[bool, typer.Option("--version", callback=show_version, is_eager=True, expose_value=False,
                                          help="print the version and exit")] = False,
) -> None:
    """Ratings of agents from logs of battles, games, scores and ballots."""
    quiet_logs(verbose)


def error_line(label: str, message: str) -> None:
    """One line on stderr: `label` in bold red, then the message as it is (never read as markup), its
    control characters made visible (a newline in a file name does not split the line)."""
    errors.print(Text.assemble((visible(label), "bold red"), ": ", visible(message)), highlight=False)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print one error line on stderr; the caller raises the returned `Exit`."""
    error_line("error", message)
    return typer.Exit(code)


def check_sources(sources: Sequence[str]) -> None:
    """Every file or folder given must exist before any work starts (exit 2); a URL (object
    storage) is listed when it is read, and one that cannot be is refused then, in one line."""
    from pipeline.paths import is_url

    if missing := [s for s in sources if not is_url(s) and not Path(s).exists()]:
        raise fail(f"no such file or folder: {', '.join(map(str, map(Path, missing)))}", 2)


def log_addresses(sources: Sequence[str]) -> tuple[str, ...]:
    """Log sources as a board keeps them: URLs as given, local paths normalised (`Path`)."""
    from pipeline.paths import is_url

    return tuple(s if is_url(s) else str(Path(s)) for s in sources)


def store_address(value: str | None) -> str | None:
    """A `--store` as given: a URL (`s3://bucket/prefix`, `gs://`, `az://`) stays text, never a local
    path (`Path` would make `s3:/bucket` of it: a folder named `s3:`); a local one must not be a file."""
    from pipeline.paths import is_url

    if value is not None and not is_url(value) and Path(value).is_file():
        raise typer.BadParameter(f"'{value}' is a file; a store is a folder or an object-storage URL", param_hint="--store")
    return value


def check_store(store: str) -> None:
    """A store read and not written to must be one before any work starts (exit 2)."""
    from pipeline.store import Store

    opened = Store(store)
    if not opened.exists():
        raise fail(f"{store} is not a store (no {'manifests/' if opened.objects else 'manifest.json'}); ingest logs into it first", 2)


def check_out(out: Path, force: bool) -> None:
    """An output folder must be new, empty or an earlier vase run's (whose files the run replaces) unless forced (exit 2)."""
    from pipeline.report.outfolder import ForeignFolder
    from pipeline.report.outfolder import check_out as check_out_folder

    try:
        check_out_folder(out, force)
    except ForeignFolder as exc:
        raise fail(str(exc), 2) from None


def print_records(records: list[dict], form: Format) -> None:
    """`records` for programs, on stdout as they are (never wrapped): JSON, a list of objects; or TSV,
    a header of their keys and a line per record, lists joined by ', ', mappings as `key=value`
    joined by '; ', and control characters (tabs, newlines) made visible so that a field never spans two."""
    if form is Format.json:
        sys.stdout.write(json.dumps(records, indent=1, ensure_ascii=False, default=str) + "\n")
        return

    def field(value: object) -> str:
        if isinstance(value, dict):
            return "; ".join(f"{k}={v}" for k, v in value.items())
        if isinstance(value, (list, tuple)):
            return ", ".join(map(str, value))
        return "" if value is None else json.dumps(value) if isinstance(value, bool) else str(value)

    header = list(records[0]) if records else []
    sys.stdout.write("".join("\t".join(map(visible, row)) + "\n" for row in [header, *([field(r.get(k)) for k in header] for r in records)]))


def check_kind(kind: str, *, stored: bool = False) -> None:
    from pipeline.board import KINDS

    if kind not in KINDS:
        known = "; ".join(f"{name} ({k.holds})" for name, k in KINDS.items())
        raise typer.BadParameter(f"unknown kind {kind!r}; expected one of: {known}", param_hint="--kind")
    if stored and not KINDS[kind].stored:
        raise typer.BadParameter(f"{kind} files are rated directly, not stored: use `vase rate`", param_hint="--kind")


def ingest_table(reports: list[IngestReport]) -> Table:
    table = Table("file", "status", "rows in", "accepted", "quarantined", "note")
    for column in table.columns:
        column.overflow = "fold"
        column.justify = "right" if column.header in ("rows in", "accepted", "quarantined") else "left"
    for r in reports:
        table.add_row(visible(Path(r.source).name), r.status, f"{r.rows_in:,}", f"{r.rows_accepted:,}", f"{r.rows_quarantined:,}",
                      visible(r.error or (r.quarantine or "")))
    return table


def report_ingest(reports: list[IngestReport], said: Console = console) -> None:
    if not reports:
        return
    said.print(ingest_table(reports))
    read = [r for r in reports if r.status == "ingested"]  # a skipped file's rows were counted when it was ingested
    totals = {k: sum(getattr(r, k) for r in read) for k in ("rows_in", "rows_accepted", "rows_quarantined")}
    skipped = sum(r.status == "skipped" for r in reports)
    said.print(f"rows in {totals['rows_in']} = accepted {totals['rows_accepted']} + quarantined {totals['rows_quarantined']}"
                  + (f" (and {skipped} file{'s' * (skipped != 1)} already in the store, skipped)" if skipped else ""))


def report_refusals(refused: dict[str, str]) -> None:
    """Print each method's one-line refusal; the command then exits with status 1."""
    for spec, message in refused.items():
        errors.print(Text.assemble((visible(spec), "bold red"), f" could not rate: {visible(message)}"), highlight=False)
    if refused:
        raise typer.Exit(1)


def report_merged(merged: dict[str, list[str]], said: Console = console) -> None:
    for spec, spellings in merged.items():
        said.print(f"{' and '.join(map(visible, spellings))} are the same spec ({visible(spec)}): rated once")


def method_cell(spec: str) -> Text:
    """A method's short name, and the parameters it was given (those that differ from its defaults)
    on a second, dim line; the full spec is in run.json."""
    from pipeline.methods import REGISTRY, Spec

    try:
        parsed = Spec.parse(spec)
    except ValueError:  # a label that is not a spec (e.g. a backtest task's)
        return Text(visible(spec))
    defaults = REGISTRY[parsed.name].parameters
    changed = ", ".join(f"{k}={v}" for k, v in sorted(parsed.params.items()) if k in defaults and v != defaults[k])
    return Text.assemble((parsed.name, "bold"), *(("\n", (changed, "dim")) if changed else ()))


def reading(value: object, digits: int) -> str:
    """A number rounded for reading: `digits` after the point, and no `-0`."""
    from pipeline.report.tables import number_cell

    return number_cell(value, digits).text


def top_agents_table(records: list[dict], top: int = TOP) -> Table:
    """Per method, its top agents by name with their scores (records as in ratings.json)."""
    from pipeline.report.tables import decimals

    by_method: dict[str, list[dict]] = {}
    for record in records:
        by_method.setdefault(record["method"], []).append(record)
    table = Table(title="top agents", title_justify="left")
    table.add_column("method", overflow="fold")
    table.add_column("agents", justify="right")
    for place in range(1, top + 1):
        table.add_column(f"#{place}", overflow="fold")
    for spec, rows in by_method.items():
        digits = decimals([r["score"] for r in rows])
        best = sorted(rows, key=lambda r: (r["rank"], r["agent"]))[:top]
        cells = [Text.assemble(visible(r["agent"]), "\n", (f"rank {r['rank']}, {reading(r['score'], digits)}", "dim")) for r in best]
        table.add_row(method_cell(spec), str(len(rows)), *cells, *[""] * (top - len(cells)), end_section=True)
    return table


@app.command()
def ingest(
    sources: Annotated[list[str], typer.Argument(help="log files or folders, or object-storage URLs")],
    kind: KindOption,
    store: Annotated[str, typer.Option("--store", callback=store_address, help="store folder or URL (created if missing)")],
    columns: mapped.Columns = "", values: mapped.Values = None, constants: mapped.Constants = "", names: mapped.Names = "",
    where: mapped.Where = None, seats: mapped.Seats = "", preset: mapped.Preset = "",
    max_quarantined: mapped.MaxQuarantined = mapped.MAX_QUARANTINED,
) -> None:
    """Validate logs and write them into the store; files already ingested are skipped."""
    check_kind(kind, stored=True)
    check_sources(sources)
    from pipeline.board import Board, QuarantineAlarm, check_quarantined
    from pipeline.board import ingest as ingest_board
    from pipeline.store import Store

    mapping = mapped.mapping_of(columns, values, constants, names, where, seats, preset)
    try:
        board = Board("ingest", kind, log_addresses(sources), (), mapping=mapping, max_quarantined=max_quarantined)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    mapped.check_board_files(board)
    with progress_display():
        reports = ingest_board(Store(store), board)
    report_ingest(reports)
    for bad in (r for r in reports if r.status == "unreadable"):
        error_line("unreadable", bad.error)
    try:
        check_quarantined(Store(store), board, reports)
    except QuarantineAlarm as exc:
        raise fail(str(exc)) from None
    if any(r.status == "unreadable" for r in reports):
        raise typer.Exit(1)


@app.command()
def rate(
    kind: KindOption,
    method: MethodsOption,
    out: Annotated[Path, typer.Option("--out", file_okay=False, help="output folder")],
    sources: Annotated[Optional[list[str]], typer.Argument(help="log files or folders, or URLs (ingested first)")] = None,
    store: Annotated[Optional[str], typer.Option("--store", callback=store_address,
                                                 help="store folder or URL; a temporary one if omitted")] = None,
    scheduler: SchedulerOption = None,
    workers: Annotated[int, typer.Option(min=0, help="local Dask worker processes when no scheduler is given (0: local threads)")] = 0,
    title: Annotated[str, typer.Option(help="leaderboard title")] = "",
    form: Annotated[Format, typer.Option("--format", help="table; or json or tsv: every agent's rank and score per method "
                                                          "on stdout, the rest on stderr")] = Format.table,
    by: Annotated[Optional[str], typer.Option(
        "--by", help="also one leaderboard per category (`--by category`: battles, reviews, scores) or per value of "
                     "a column (`--by release`), in OUT/category=<name>/; rows without one count in the overall board only")] = None,
    min_records: Annotated[Optional[int], typer.Option(
        "--min-records", help="agents in fewer records are provisional: flagged, ranked apart after the others "
                              "(default: pipeline.methods.standing.MIN_RECORDS, see docs/design-notes.md)")] = None,
    order: Annotated[str, typer.Option(
        "--order", help="key of the headline ranks: score, lower (the interval's lower end) or rank_ub "
                        "(Arena's rank upper bound); the last two need bootstrap=R")] = "score",
    as_of: Annotated[Optional[str], typer.Option(
        "--as-of", help="rate the log as it stood on a date (YYYY-MM-DD): the records dated up to the end of that UTC day")] = None,
    force: ForceOption = False,
    columns: mapped.Columns = "", values: mapped.Values = None, constants: mapped.Constants = "", names: mapped.Names = "",
    where: mapped.Where = None, seats: mapped.Seats = "", preset: mapped.Preset = "",
    max_quarantined: mapped.MaxQuarantined = mapped.MAX_QUARANTINED,
) -> None:
    """Rate the agents of a store (or of log files) with one or more methods; `--kind nfg` rates a game file."""
    check_kind(kind)
    from pipeline.board import KINDS, Board, check_by, run_board
    from pipeline.logs import UnreadableFile
    from pipeline.methods.registry import unique_specs
    from pipeline.methods.standing import MIN_RECORDS, ORDERS, check_standing
    from pipeline.stats.recency import parse_as_of
    from pipeline.stats.reduce import AsOfError
    from pipeline.store import Store

    if not KINDS[kind].stored and (store is not None or len(sources or ()) != 1):
        raise typer.BadParameter(f"{kind} files are rated directly: give one file, without --store", param_hint="SOURCES")
    if store is None and not sources:
        raise typer.BadParameter("give log files or --store", param_hint="SOURCES")
    if by is not None:
        try:
            check_by(kind, by)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--by") from None
    try:
        date = None if as_of is None else parse_as_of(as_of)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--as-of") from None
    min_records = MIN_RECORDS if min_records is None else min_records
    try:
        check_standing(min_records, order)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--min-records" if order in ORDERS else "--order") from None
    check_sources(sources or ())
    if store is not None and sources is None:
        check_store(store)
    check_out(out, force)
    mapping = mapped.mapping_of(columns, values, constants, names, where, seats, preset)
    try:
        specs, merged = unique_specs(method)
    except ValueError as exc:  # an unknown method or parameter, or a method that does not rate this kind
        raise typer.BadParameter(str(exc), param_hint="--method") from None
    try:
        board = Board(title or out.name, kind, log_addresses(sources or ()), specs, title, merged, by, min_records, order,
                      mapping, max_quarantined, date)
    except ValueError as exc:  # a method that does not rate this kind, or a mapping that does not fit it
        raise typer.BadParameter(str(exc)) from None
    mapped.check_board_files(board)
    if store is not None and not sources:  # the store is all there is to rate: refuse from its manifest, before any work
        check_before_work(Store(store), board)
    said = console if form is Format.table else errors  # json or tsv: stdout holds the records alone
    report_merged(board.merged, said)
    with tempfile.TemporaryDirectory(prefix="vase-store-") as scratch, dask_client(scheduler, workers) as client, \
            progress_display():
        try:
            result = run_board(board, Store(store or scratch), out, client, temporary_store=store is None)
        except AsOfError as exc:  # found once the files given were ingested
            raise fail(str(exc), 2) from None
        except (UnreadableFile, ValueError) as exc:  # a file rated directly cannot be read, or the data cannot be rated at all
            raise fail(str(exc)) from None
    report_ingest(result.reports, said)
    for bad in (r for r in result.reports if r.status == "unreadable"):
        error_line("unreadable", bad.error)
    records = json.loads((out / "ratings.json").read_text(encoding="utf-8"))
    if form is not Format.table:
        print_records([{k: r[k] for k in ("method", "rank", "agent", "score")} for r in records], form)
    elif records:
        console.print(top_agents_table(records))
    said.print(f"report: {visible((out / 'index.html').resolve())}", highlight=False)
    failed = report_categories(result.categories, said) if result.categories is not None else False
    report_refusals(result.errors)
    if failed or any(r.status == "unreadable" for r in result.reports):
        raise typer.Exit(1)


def check_before_work(store, board) -> None:
    """Exit 2 with one line if the store's manifest shows the board cannot be rated as asked: an `--as-of`
    before the first record or over undated records (`pipeline.stats.reduce.check_dated`), a spec refused
    from the row counts (`pipeline.board.early_refusals`)."""
    from pipeline.board import early_refusals, half_life
    from pipeline.stats.reduce import AsOfError, check_dated

    if not store.manifest.files:
        return
    try:
        for days in {half_life(spec) for spec in board.methods} or {math.inf}:
            check_dated(store, board.kind, board.as_of, days)
    except AsOfError as exc:
        raise typer.BadParameter(str(exc), param_hint="--as-of" if board.as_of else "--method") from None
    if refused := early_refusals(store, board):
        raise typer.BadParameter(str(next(iter(refused.values()))), param_hint="--method")


def report_categories(categories, said: Console = console) -> bool:
    """A line per category board (its rows and folder) and the one-line refusals and failures;
    whether any category could not be wholly rated."""
    table = Table("category", "rows", "folder", "outcome", title="categories", title_justify="left")
    for column in table.columns:
        column.overflow = "fold"
    table.columns[1].justify = "right"
    for c in categories.boards:
        outcome = Text("failed", "red") if c.failed else Text(f"{len(c.errors)} method(s) refused", "yellow") if c.errors else "published"
        table.add_row(visible(c.category), f"{c.rows:,}", c.folder, outcome)
    said.print(table)
    said.print(f"rows without a {categories.column}: {categories.rows_without_category:,} (in the overall board only)",
                  highlight=False)
    for c in categories.boards:
        for spec, message in ({"": c.failed} if c.failed else c.errors).items():
            error_line(c.category, (f"{spec} could not rate: " if spec else "failed: ") + message)
    return any(c.failed or c.errors for c in categories.boards)


def backtest_table(summary: list[dict], reference: str) -> Table:
    """The backtest summary, every column folded rather than cut, numbers rounded for reading."""
    from pipeline.report.tables import decimals

    compared = any(r["verdict"] == "reference" for r in summary)
    table = Table(title="mean error over splits (Kendall tau distance, 95% interval); "
                        + (f"diff = method - {reference}" if compared else f"no reference: {reference} is not among the methods"),
                  title_justify="left")
    for name in ("method", "splits", "error", "interval", "diff", "interval ", "p", "verdict"):
        table.add_column(name, overflow="fold", justify="left" if name in ("method", "verdict") else "right")
    digits = decimals([r["mean"] for r in summary] + [r["diff_mean"] for r in summary if r["diff_mean"] is not None]) + 1
    shown = lambda v: reading(v, digits) if isinstance(v, float) and math.isfinite(v) else ""  # noqa: E731
    for r in summary:
        table.add_row(method_cell(r["method"]), str(r["splits"]), shown(r["mean"]), f"{shown(r['ci_low'])} to {shown(r['ci_high'])}",
                      shown(r["diff_mean"]), f"{shown(r['diff_low'])} to {shown(r['diff_high'])}" if r["diff_low"] is not None else "",
                      "" if r["p_value"] is None or not math.isfinite(r["p_value"]) else f"{r['p_value']:.2g}", r["verdict"] or "")
    return table


@app.command()
def backtest(
    store: Annotated[str, typer.Option("--store", callback=store_address, help="store folder or URL holding the logs")],
    kind: KindOption,
    method: MethodsOption,
    out: Annotated[Path, typer.Option("--out", file_okay=False, help="output folder")],
    splits: Annotated[int, typer.Option("--splits", help="number of splits")] = 50,
    test_size: Annotated[int, typer.Option("--test-size", help="test units (games, battles) per random split")] = 3000,
    seed: Annotated[int, typer.Option("--seed", min=0, help="seed of the splits and of seeded methods")] = 0,
    scheme: Annotated[str, typer.Option("--split", help="random, or temporal (rolling windows)")] = "random",
    window_days: Annotated[float, typer.Option("--window-days", help="test window of temporal splits")] = 30.0,
    reference: Annotated[str, typer.Option("--reference", help="method spec the others are compared with")] = "elo",
    unseen: Annotated[str, typer.Option("--unseen", help="pairs with a player unseen in training: tie or skip")] = "tie",
    scheduler: SchedulerOption = None,
    workers: Annotated[int, typer.Option(min=0, help="local Dask worker processes when no scheduler is given (0: local threads)")] = 2,
    force: ForceOption = False,
    form: FormatOption = Format.table,
) -> None:
    """Which method best predicts held-out games: rate training splits, score test games by Kendall tau."""
    check_kind(kind, stored=True)
    check_store(store)
    check_out(out, force)
    import time

    import pyarrow.parquet as pq

    from pipeline.backtest import BacktestConfig, runner
    from pipeline.backtest.evaluate import run_backtest, task_label
    from pipeline.board import check_methods_fit
    from pipeline.methods.convergence import RatingError
    from pipeline.store import Store

    try:
        config = BacktestConfig(kind, tuple(method), splits, test_size, seed, scheme, window_days, reference, unseen)
        check_methods_fit(kind, config.methods)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    report_merged(config.merged, console if form is Format.table else errors)
    opened = Store(store)
    start = time.perf_counter()
    try:
        log = runner.load(opened, config)
    except ValueError as exc:  # the store holds nothing of the kind
        raise fail(str(exc)) from None
    try:
        split_list = runner.make_splits(log, config)
    except ValueError as exc:  # e.g. a test size the log cannot give: found before any method runs
        raise fail(f"{exc} (--test-size, --splits, --window-days)", 2) from None
    timings = {"load": time.perf_counter() - start}
    try:
        with dask_client(scheduler, workers) as client, progress_display():
            start = time.perf_counter()
            results = run_backtest(log, split_list, config.methods, client=client, unseen=config.unseen)
            timings["evaluate"] = time.perf_counter() - start
    except RatingError as error:
        raise fail(f"backtest stopped: {error.named(opened.dictionary('agents').names)}") from None
    written = runner.publish_backtest(opened, config, results, out, timings, log.inputs)
    summary = pq.read_table(out / "summary.parquet").to_pylist()
    if form is not Format.table:  # the summary alone on stdout; where the outputs went, on stderr
        print_records([{k: v if not isinstance(v, float) or math.isfinite(v) else None for k, v in r.items()} for r in summary], form)
    said = console if form is Format.table else errors
    if form is Format.table:
        console.print(backtest_table(summary, task_label(config.reference)))
    said.print(f"outputs: {', '.join(p.name for p in written)} in {visible(out)}", highlight=False)
    said.print(f"report: {visible((out / 'index.html').resolve())}", highlight=False)


@app.command()
def inspect(
    file: Annotated[Path, typer.Argument(help="a log file (CSV, TSV, JSON, JSONL, Parquet)")],
    kind: Annotated[Optional[str], typer.Option("--kind", "-k", help="the kind to read it as (guessed if omitted)")] = None,
) -> None:
    """Show a sample of a file, what the kind needs, a suggested mapping and the command to rate it; writes nothing."""
    from rich.table import Table

    from pipeline.logs import UnreadableFile
    from pipeline.logs.inspect import inspect as look
    from pipeline.terminal import visible

    check_sources([file])
    if kind is not None:
        check_kind(kind, stored=True)
    try:
        found = look(file, kind)
    except UnreadableFile as exc:
        raise fail(str(exc), 2) from None
    table = Table("column", "values (sample)", title=f"{visible(file)}: {found.rows:,} rows sampled", title_justify="left")
    for column, values in found.columns.items():  # names and values are data: shown, never obeyed
        table.add_row(visible(column), ", ".join(map(visible, values)))
    console.print(table)
    console.print(f"{found.kind} needs: {', '.join(found.needs)}")
    console.print("suggested mapping: " + visible(" ".join(found.options) or "none (read as it is)"))
    for note in found.notes:
        console.print(f"note: {visible(note)}")
    console.print(f"the suggestion reads {found.accepted:,} of the {found.records:,} records sampled; to rate the file:")
    console.print(visible(found.command), soft_wrap=True)


@app.command()
def methods(form: FormatOption = Format.table) -> None:
    """List the rating methods and their parameters."""
    from pipeline import catalogue  # the registry's listing without importing it (`vase methods` starts in well under 1 s)

    records = catalogue.methods()
    if form is not Format.table:
        return print_records(records, form)
    table = Table("method", "parameters", "statistics", "kinds", "summary")
    for column in table.columns:
        column.overflow = "fold"
    for m in records:
        params = ", ".join(f"{k}={v}" + (f" ({m['rules'][k]})" if k in m["rules"] else "") for k, v in m["parameters"].items())
        table.add_row(m["method"], params, ", ".join(m["statistics"]), ", ".join(m["kinds"]), m["summary"], end_section=True)
    console.print(table)


@app.command()
def kinds(form: FormatOption = Format.table) -> None:
    """List the log kinds: what their files hold and the file types read."""
    from pipeline import catalogue

    records = catalogue.kinds()
    if form is not Format.table:
        return print_records(records, form)
    table = Table("kind", "holds", "files", "stored")
    for column in table.columns:
        column.overflow = "fold"
    for k in records:
        table.add_row(k["kind"], k["holds"], " ".join(k["files"]), "yes" if k["stored"] else "no, rated directly")
    console.print(table)


@app.command()
def report(
    run_dir: Annotated[Path, typer.Argument(help="a run folder: `rate --out`, a backtest, or a nightly run (runs/<id>, latest)")],
    history: Annotated[Optional[Path], typer.Option(help="nightly history file; default: history.parquet beside runs/")] = None,
) -> None:
    """Write the HTML report of a run folder and print the path of its index.html."""
    from pipeline.report import write_report
    from pipeline.report.folders import read_run, unreadable_outputs

    if not run_dir.is_dir() or not read_run(run_dir):
        broken = ", ".join(str(p.relative_to(run_dir)) for p in unreadable_outputs(run_dir))
        raise typer.BadParameter(f"{run_dir} holds no published board or backtest" +
                                 (f" that can be read: {broken} cannot be read (cut short, or not Parquet)" if broken else ""),
                                 param_hint="RUN_DIR")
    console.print(f"report: {visible(write_report(run_dir, history=history))}", highlight=False)


@app.command()
def history(
    out: Annotated[Path, typer.Argument(help="the nightly output folder (holding history.parquet), or the file")],
    board: Annotated[Optional[str], typer.Option("--board", "-b", help="only this board")] = None,
    method: Annotated[Optional[str], typer.Option("--method", "-m", help="only this method (a name selects all its specs)")] = None,
    runs: Annotated[int, typer.Option(min=1, help="runs shown, the latest last")] = 5,
    top: Annotated[int, typer.Option(min=0, help="agents shown per board and method (0: all)")] = 10,
) -> None:
    """Print the ranks of the top agents over the last nightly runs, per board and method."""
    from pipeline.report.history import HISTORY_FILE, history_table, history_views
    from pipeline.report.site import method_label, run_label
    from pipeline.report.tables import decimals

    path = out / HISTORY_FILE if out.is_dir() else out
    if not path.exists():
        raise typer.BadParameter(f"no history at {path} (the nightly flow writes it)", param_hint="OUT")
    if (table := history_table(path)) is None:
        raise fail(f"{path} cannot be read as a history (cut short, or not Parquet); "
                   "the next nightly run keeps it aside and starts a new one")
    views = history_views(table, board, method, runs, top or None)
    if not views:
        raise typer.BadParameter(f"nothing in {path} for board {board or 'any'} and method {method or 'any'}")
    for view in views:
        runs = f"{run_label(view.runs[0])} to {run_label(view.runs[-1])} UTC" if len(view.runs) > 1 else f"{run_label(view.runs[0])} UTC"
        table = Table(title=f"{visible(view.board)}: {visible(method_label(view.method)[0])}", title_justify="left",
                      caption=f"{visible(view.method)}; ranks over {len(view.runs)} runs, {runs}", caption_justify="left")
        # Names stay whole on one line; the other columns fold when space is short.
        table.add_column("agent", overflow="fold", min_width=min(48, max(map(len, view.agents), default=5)))
        table.add_column("ranks", justify="right", overflow="fold")
        table.add_column("change", justify="right", overflow="fold")
        table.add_column("score", justify="right", overflow="fold")
        table.add_column("95% CI", justify="right", overflow="fold")
        digits = decimals(view.score)
        shown = lambda v: "" if v is None else reading(v, digits)  # noqa: E731
        for agent, ranks, score, interval in zip(view.agents, view.ranks, view.score, view.interval):
            now, before = ranks[-1], ranks[-2] if len(ranks) > 1 else None
            change = "" if len(ranks) < 2 else "new" if before is None else "=" if before == now else \
                Text(f"\u25b2 {before - now}", "green") if before > now else Text(f"\u25bc {now - before}", "red")
            table.add_row(visible(agent), " \u2192 ".join("-" if r is None else str(r) for r in ranks), change, shown(score),
                          "" if interval is None else f"{shown(interval[0])}\u2013{shown(interval[1])}")
        console.print(table)


if __name__ == "__main__":
    app()
