"""The `nightly` flow: ingest new files, rate every board, publish a dated run and `latest`.

One board that fails (a file that breaks its ingest, a method error that is not a refusal) does
not stop the others: it is logged in one line, left out of the run and named on the run's
report page; the run is published with the boards that worked, and the flow run then fails so
that the failure is seen. A run in which no board worked is not published.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from prefect import flow, get_run_logger

from flows import tasks
from flows.ratings import rate_board
from pipeline.board import check_quarantined, load_boards
from pipeline.paths import inside, is_url
from pipeline.progress import progress_bar
from pipeline.report import HISTORY_FILE, append_history, write_report
from pipeline.report.runs import new_run_id, promote, record_failures, staging_folder
from pipeline.runtime import FLOW_SCHEDULER, dask_client
from pipeline.store import Store
from pipeline.store.location import address


@flow(name="nightly")
def nightly(config: str, out: str, scheduler: str | None = None, workers: int = 2, stores: str | None = None,
            publish: str | None = None, publish_link: str | None = None) -> str:
    """Boards come from the YAML `config`; runs go to `<out>/runs`, stores to `<stores>/<board>`
    (default `<out>/stores`; a URL puts them in object storage, where Dask workers without a
    shared disk read them). Given `publish` (a URL or folder), the run is also copied there
    (`pipeline.report.remote`) and linked from a Prefect link artifact, at `publish_link` (the
    https address at which `publish` is served) if given, with the top of each board as a table
    artifact."""
    log = get_run_logger()
    root = Path(out)
    boards = load_boards(config)
    run_id = new_run_id()
    with staging_folder(root, run_id) as staging:  # a run that fails leaves the previous `latest` as it was
        failures = rate_boards(boards, root, staging, scheduler, workers, stores)
        if boards and len(failures) == len(boards):
            raise RuntimeError(f"every board failed: {'; '.join(f'{name}: {why}' for name, why in failures.items())}")
        record_failures(staging, failures)
        write_report(staging, history=root / HISTORY_FILE, run_id=run_id)
        final = promote(root, staging, run_id)
    append_history(root / HISTORY_FILE, final, run_id)
    log.info("published %s", final)
    if publish:
        tasks.publish_remote(final, publish, run_id, publish_link)
    if failures:
        raise RuntimeError(f"published {final} without {len(failures)} failed board(s): {', '.join(failures)}")
    return str(final)


def board_store(root: Path, stores: str | None, name: str) -> str:
    """A board's store: `<stores>/<name>` (a URL, or a folder), by default `<out>/stores/<name>`."""
    if stores is None:
        return str(inside(root, "stores", name))
    return address(stores, name) if is_url(stores) else str(inside(stores, name))


def rate_boards(boards: list, root: Path, staging: Path, scheduler: str | None, workers: int,
                stores: str | None = None) -> dict[str, str]:
    """Ingest and rate each board into `staging`; the boards that failed, with a one-line reason."""
    log = get_run_logger()
    failures: dict[str, str] = {}
    with dask_client(scheduler, workers, given_by=FLOW_SCHEDULER) as client, progress_bar("boards", len(boards)) as advance:
        for i, board in enumerate(boards, start=1):
            advance(0, board.name)
            try:
                rate_one(board, i, len(boards), board_store(root, stores, board.name), staging, client)
            except Exception as exc:  # noqa: BLE001 (one board never stops the others)
                failures[board.name] = f"{type(exc).__name__}: {next(iter(str(exc).splitlines()), '')}"
                log.error("[%d/%d] %s failed: %s", i, len(boards), board.name, failures[board.name])
                shutil.rmtree(inside(staging, board.name), ignore_errors=True)
            advance()
    return failures


def rate_one(board, i: int, count: int, store: str, staging: Path, client) -> None:
    log = get_run_logger()
    reports = tasks.ingest(store, board)
    new = [r for r in reports if r.status == "ingested"]
    log.info("[%d/%d] %s: %d new of %d files, %d rows accepted, %d quarantined", i, count, board.name,
             len(new), len(reports), sum(r.rows_accepted for r in new), sum(r.rows_quarantined for r in new))
    for bad in (r for r in reports if r.status == "unreadable"):
        log.error("%s", bad.error)
    check_quarantined(Store(store), board, reports)  # too much quarantined: this board fails, the others publish
    rate_board(store, board, str(inside(staging, board.name)), client)
    log.info("[%d/%d] %s: rated with %s", i, count, board.name, ", ".join(map(str, board.methods)))
