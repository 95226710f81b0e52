"""The `vase` command (README, "Command line").

`ingest`, `rate`, `backtest` and `methods` use the library directly and need no Prefect server.
`demo`, which runs the nightly Prefect flow, is added by `flows.cli` (the installed `vase`
command), so the library imports nothing from `flows`. Where to compute follows one policy,
`pipeline.runtime.dask_client`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from pipeline.board import Board, run_board
from pipeline.logs import KINDS, UnreadableFile
from pipeline.methods import REGISTRY
from pipeline.methods.convergence import RatingError
from pipeline.methods.registry import unique_specs
from pipeline.runtime import SCHEDULER_ENV, dask_client
from pipeline.store import IngestReport, Store

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Ratings of agents from logs of battles, games, scores and ballots.")
console = Console()
SAMPLES = Path(__file__).resolve().parent.parent / "data-samples"

KindOption = Annotated[str, typer.Option("--kind", "-k", help=f"log kind: {', '.join(KINDS)}")]
SchedulerOption = Annotated[Optional[str], typer.Option(
    "--scheduler", help=f"address of an existing Dask scheduler (default: ${SCHEDULER_ENV}); tls:// uses Dask's TLS configuration")]


def _report_table(reports: list[IngestReport]) -> Table:
    table = Table("file", "status", "rows in", "accepted", "quarantined", "note")
    for r in reports:
        table.add_row(Path(r.source).name, r.status, str(r.rows_in), str(r.rows_accepted), str(r.rows_quarantined), r.error or (r.quarantine or ""))
    return table


def _check_kind(kind: str, *, stored: bool = False) -> None:
    if kind not in KINDS:
        known = "; ".join(f"{name} ({k.holds})" for name, k in KINDS.items())
        raise typer.BadParameter(f"unknown kind {kind!r}; expected one of: {known}", param_hint="--kind")
    if stored and not KINDS[kind].stored:
        raise typer.BadParameter(f"{kind} files are rated directly, not stored: use `vase rate`", param_hint="--kind")


def _report_refusals(errors: dict[str, str]) -> None:
    """Print each method's one-line refusal; the command then exits with status 1."""
    for spec, message in errors.items():
        console.print(f"[bold red]{spec}[/bold red] could not rate: {message}", soft_wrap=True)
    if errors:
        raise typer.Exit(1)


def _report_merged(merged: dict[str, list[str]]) -> None:
    for spec, spellings in merged.items():
        console.print(f"{' and '.join(spellings)} are the same spec ({spec}): rated once", soft_wrap=True)


@app.command()
def ingest(
    sources: Annotated[list[Path], typer.Argument(help="log files or folders")],
    kind: KindOption,
    store: Annotated[Path, typer.Option("--store", help="store folder (created if missing)")],
) -> None:
    """Validate logs and write them into the store; files already ingested are skipped."""
    _check_kind(kind, stored=True)
    board = Board("ingest", kind, tuple(map(str, sources)), ())
    from pipeline.board import ingest as ingest_board

    reports = ingest_board(Store(store), board)
    console.print(_report_table(reports))
    totals = {k: sum(getattr(r, k) for r in reports) for k in ("rows_in", "rows_accepted", "rows_quarantined")}
    console.print(f"rows in {totals['rows_in']} = accepted {totals['rows_accepted']} + quarantined {totals['rows_quarantined']}")
    if any(r.status == "unreadable" for r in reports):
        raise typer.Exit(1)


@app.command()
def rate(
    kind: KindOption,
    method: Annotated[list[str], typer.Option("--method", "-m", help="method spec, e.g. borda or approval:k=3 (repeatable)")],
    out: Annotated[Path, typer.Option("--out", help="output folder")],
    sources: Annotated[Optional[list[Path]], typer.Argument(help="log files or folders (ingested first)")] = None,
    store: Annotated[Optional[Path], typer.Option("--store", help="store folder; a temporary one if omitted")] = None,
    scheduler: SchedulerOption = None,
    workers: Annotated[int, typer.Option(help="local Dask worker processes when no scheduler is given (0: local threads)")] = 0,
    title: Annotated[str, typer.Option(help="leaderboard title")] = "",
) -> None:
    """Rate the agents of a store (or of log files) with one or more methods; `--kind nfg` rates a game file."""
    _check_kind(kind)
    if not KINDS[kind].stored and (store is not None or len(sources or ()) != 1):
        raise typer.BadParameter(f"{kind} files are rated directly: give one file, without --store", param_hint="SOURCES")
    if store is None and not sources:
        raise typer.BadParameter("give log files or --store", param_hint="SOURCES")
    try:
        specs, merged = unique_specs(method)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--method") from None
    try:
        board = Board(title or out.name, kind, tuple(map(str, sources or ())), specs, title, merged)
    except ValueError as exc:  # methods that do not rate this kind
        raise typer.BadParameter(str(exc), param_hint="--method") from None
    _report_merged(board.merged)
    with tempfile.TemporaryDirectory(prefix="vase-store-") as scratch, dask_client(scheduler, workers) as client:
        try:
            result = run_board(board, Store(store or scratch), out, client)
        except (UnreadableFile, ValueError) as exc:  # a file rated directly cannot be read, or the data cannot be rated at all
            console.print(f"[bold red]error[/bold red]: {exc}", soft_wrap=True)
            raise typer.Exit(1) from None
    if result.reports:
        console.print(_report_table(result.reports))
    for r in result.ratings:
        top = sorted(range(len(r.agents)), key=lambda i: r.rank[i])[:3]
        console.print(f"[bold]{r.spec}[/bold]: {len(r.agents)} agents; top ranks {[int(r.rank[i]) for i in top]}")
    console.print(f"leaderboard: {out / 'leaderboard.md'}")
    _report_refusals(result.errors)


@app.command()
def backtest(
    store: Annotated[Path, typer.Option("--store", help="store folder holding the logs")],
    kind: KindOption,
    method: Annotated[list[str], typer.Option("--method", "-m", help="method spec (repeatable)")],
    out: Annotated[Path, typer.Option("--out", help="output folder")],
    splits: Annotated[int, typer.Option("--splits", help="number of splits")] = 50,
    test_size: Annotated[int, typer.Option("--test-size", help="test units (games, battles) per random split")] = 3000,
    seed: Annotated[int, typer.Option("--seed", help="seed of the splits and of seeded methods")] = 0,
    scheme: Annotated[str, typer.Option("--split", help="random, or temporal (rolling windows)")] = "random",
    window_days: Annotated[float, typer.Option("--window-days", help="test window of temporal splits")] = 30.0,
    reference: Annotated[str, typer.Option("--reference", help="method spec the others are compared with")] = "elo",
    unseen: Annotated[str, typer.Option("--unseen", help="pairs with a player unseen in training: tie or skip")] = "tie",
    scheduler: SchedulerOption = None,
    workers: Annotated[int, typer.Option(help="local Dask worker processes when no scheduler is given (0: local threads)")] = 2,
) -> None:
    """Which method best predicts held-out games: rate training splits, score test games by Kendall tau."""
    _check_kind(kind, stored=True)
    from pipeline.backtest import BacktestConfig
    from pipeline.backtest import backtest as run_backtest

    try:
        config = BacktestConfig(kind, tuple(method), splits, test_size, seed, scheme, window_days, reference, unseen)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    _report_merged(config.merged)
    opened = Store(store)
    try:
        with dask_client(scheduler, workers) as client:
            written = run_backtest(opened, config, out, client)
    except RatingError as error:
        console.print(f"[bold red]backtest stopped[/bold red]: {error.named(opened.dictionary('agents').names)}", soft_wrap=True)
        raise typer.Exit(1) from None
    console.print((out / "summary.md").read_text(encoding="utf-8"))
    console.print(f"outputs: {', '.join(p.name for p in written)} in {out}")


@app.command()
def methods() -> None:
    """List the rating methods and their parameters."""
    table = Table("method", "parameters", "statistics", "summary")
    for name, m in sorted(REGISTRY.items()):
        params = ", ".join(f"{k}={v}" for k, v in m.parameters.items())
        table.add_row(name, params, ", ".join(m.statistics), m.summary)
    console.print(table)


@app.command()
def report(
    run_dir: Annotated[Path, typer.Argument(help="a run folder: `rate --out`, a backtest, or a nightly run (runs/<id>, latest)")],
    history: Annotated[Optional[Path], typer.Option(help="nightly history file; default: history.parquet beside runs/")] = None,
) -> None:
    """Write the HTML report of a run folder and print the path of its index.html."""
    from pipeline.report import write_report
    from pipeline.report.folders import read_run

    if not run_dir.is_dir() or not read_run(run_dir):
        raise typer.BadParameter(f"{run_dir} holds no published board or backtest", param_hint="RUN_DIR")
    console.print(f"report: {write_report(run_dir, history=history)}", soft_wrap=True)


@app.command()
def history(
    out: Annotated[Path, typer.Argument(help="the nightly output folder (holding history.parquet), or the file")],
    board: Annotated[Optional[str], typer.Option("--board", "-b", help="only this board")] = None,
    method: Annotated[Optional[str], typer.Option("--method", "-m", help="only this method (a name selects all its specs)")] = None,
    runs: Annotated[int, typer.Option(help="runs shown, the latest last")] = 5,
    top: Annotated[int, typer.Option(help="agents shown per board and method (0: all)")] = 10,
) -> None:
    """Print the ranks of the top agents over the last nightly runs, per board and method."""
    from pipeline.report.history import HISTORY_FILE, history_views, read_history
    from pipeline.report.site import method_label, run_label
    from pipeline.report.tables import decimals

    path = out / HISTORY_FILE if out.is_dir() else out
    if not path.exists():
        raise typer.BadParameter(f"no history at {path} (the nightly flow writes it)", param_hint="OUT")
    views = history_views(read_history(path), board, method, max(1, runs), top or None)
    if not views:
        raise typer.BadParameter(f"nothing in {path} for board {board or 'any'} and method {method or 'any'}")
    for view in views:
        runs = f"{run_label(view.runs[0])} to {run_label(view.runs[-1])} UTC" if len(view.runs) > 1 else f"{run_label(view.runs[0])} UTC"
        table = Table(title=f"{view.board}: {method_label(view.method)[0]}", title_justify="left",
                      caption=f"{view.method}; ranks over {len(view.runs)} runs, {runs}", caption_justify="left")
        # Names stay whole on one line; the other columns fold when space is short.
        table.add_column("agent", overflow="fold", min_width=min(48, max(map(len, view.agents), default=5)))
        table.add_column("ranks", justify="right", overflow="fold")
        table.add_column("change", justify="right", overflow="fold")
        table.add_column("score", justify="right", overflow="fold")
        table.add_column("95% CI", justify="right", overflow="fold")
        digits = decimals(view.score)
        shown = lambda v: "" if v is None else f"{v:.{digits}f}"  # noqa: E731
        for agent, ranks, score, interval in zip(view.agents, view.ranks, view.score, view.interval):
            now, before = ranks[-1], ranks[-2] if len(ranks) > 1 else None
            change = "" if len(ranks) < 2 else "new" if before is None else "=" if before == now else \
                f"[green]\u25b2 {before - now}[/green]" if before > now else f"[red]\u25bc {now - before}[/red]"
            table.add_row(agent, " \u2192 ".join("-" if r is None else str(r) for r in ranks), change, shown(score),
                          "" if interval is None else f"{shown(interval[0])}\u2013{shown(interval[1])}")
        console.print(table)


if __name__ == "__main__":
    app()
