"""The `nightly` flow: ingest new files, rate every board, publish a dated run and `latest`."""

from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger

from flows import tasks
from flows.ratings import rate_board
from pipeline.board import load_boards
from pipeline.progress import progress_bar
from pipeline.report import HISTORY_FILE, append_history, write_report
from pipeline.report.runs import discard, new_run_id, promote, staging_folder
from pipeline.runtime import dask_client


@flow(name="nightly")
def nightly(config: str, out: str, scheduler: str | None = None, workers: int = 2) -> str:
    """Boards come from the YAML `config`; stores live in `<out>/stores`, runs in `<out>/runs`."""
    log = get_run_logger()
    root = Path(out)
    boards = load_boards(config)
    run_id = new_run_id()
    staging = staging_folder(root, run_id)
    try:
        rate_boards(boards, root, staging, scheduler, workers)
        write_report(staging, history=root / HISTORY_FILE, run_id=run_id)
    except BaseException:
        discard(staging)  # the previous `latest` stays as it was
        raise
    final = promote(root, staging, run_id)
    append_history(root / HISTORY_FILE, final, run_id)
    log.info("published %s", final)
    return str(final)


def rate_boards(boards: list, root: Path, staging: Path, scheduler: str | None, workers: int) -> None:
    log = get_run_logger()
    with dask_client(scheduler, workers) as client, progress_bar("boards", len(boards)) as advance:
        for i, board in enumerate(boards, start=1):
            advance(0, board.name)
            store = str(root / "stores" / board.name)
            reports = tasks.ingest(store, board)
            new = [r for r in reports if r.status == "ingested"]
            log.info("[%d/%d] %s: %d new of %d files, %d rows accepted, %d quarantined", i, len(boards), board.name,
                     len(new), len(reports), sum(r.rows_accepted for r in new), sum(r.rows_quarantined for r in new))
            for bad in (r for r in reports if r.status == "unreadable"):
                log.error("%s", bad.error)
            rate_board(store, board, str(staging / board.name), client)
            log.info("[%d/%d] %s: rated with %s", i, len(boards), board.name, ", ".join(map(str, board.methods)))
            advance()
