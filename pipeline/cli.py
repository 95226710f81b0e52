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

from pipeline.board import Board, rate_game, run_board
from pipeline.logs import KINDS
from pipeline.methods import REGISTRY
from pipeline.methods.convergence import RatingError
from pipeline.methods.registry import unique_specs
from pipeline.runtime import SCHEDULER_ENV, dask_client
from pipeline.store import IngestReport, Store

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Ratings of agents from logs of battles, games, scores and ballots.")
console = Console()
SAMPLES = Path(__file__).resolve().parent.parent / "data-samples"

KindOption = Annotated[str, typer.Option("--kind", "-k", help=f"log kind: {', '.join(KINDS)}, or nfg (rate)")]
SchedulerOption = Annotated[Optional[str], typer.Option(
    "--scheduler", help=f"address of an existing Dask scheduler (default: ${SCHEDULER_ENV}); tls:// uses Dask's TLS configuration")]


def _report_table(reports: list[IngestReport]) -> Table:
    table = Table("file", "status", "rows in", "accepted", "quarantined", "note")
    for r in reports:
        table.add_row(Path(r.source).name, r.status, str(r.rows_in), str(r.rows_accepted), str(r.rows_quarantined), r.error or (r.quarantine or ""))
    return table


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise typer.BadParameter(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}", param_hint="--kind")


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
    _check_kind(kind)
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
    if kind == "nfg":
        if len(sources or ()) != 1 or store is not None:
            raise typer.BadParameter("--kind nfg rates one game file (.npz or .nfg), without --store", param_hint="SOURCES")
        try:
            rated = rate_game(sources[0], tuple(method), out, title)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--method") from None
        for r in rated.ratings:
            console.print(f"[bold]{r.spec}[/bold]: {len(r.agents)} strategies")
        console.print(f"leaderboard: {out / 'leaderboard.md'}")
        from pipeline.logs.nfg import read_nfg

        _report_refusals(rated.messages(read_nfg(sources[0]).labels))
        return
    _check_kind(kind)
    if store is None and not sources:
        raise typer.BadParameter("give log files or --store", param_hint="SOURCES")
    try:
        specs, merged = unique_specs(method)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--method") from None
    board = Board(title or out.name, kind, tuple(map(str, sources or ())), specs, title, merged)
    _report_merged(board.merged)
    with tempfile.TemporaryDirectory(prefix="vase-store-") as scratch, dask_client(scheduler, workers) as client:
        try:
            result = run_board(board, Store(store or scratch), out, client)
        except ValueError as exc:  # the data cannot be rated at all (e.g. a store without rows of this kind)
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
    _check_kind(kind)
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


if __name__ == "__main__":
    app()
