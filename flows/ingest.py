"""The `ingest` flow: validate log files and write them into a store."""

from __future__ import annotations

from prefect import flow, get_run_logger

from flows import tasks
from pipeline.board import Board
from pipeline.store import IngestReport


@flow(name="ingest")
def ingest(sources: list[str], kind: str, store: str) -> list[IngestReport]:
    reports = tasks.ingest(store, Board("ingest", kind, tuple(sources), ()))
    log = get_run_logger()
    for r in reports:
        log.info("%s: %s, %d rows in = %d accepted + %d quarantined%s", r.source, r.status, r.rows_in,
                 r.rows_accepted, r.rows_quarantined, f" ({r.error})" if r.error else "")
    return reports
