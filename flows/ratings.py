"""The `ratings` flow: reduce a store's logs on Dask and rate them with several methods."""

from __future__ import annotations

import time
from pathlib import Path

from prefect import flow

from flows import tasks
from flows.cluster import dask_client
from pipeline.board import Board
from pipeline.report import write_report


def rate_board(store: str, board: Board, out: str, client) -> list[Path]:
    """The body shared by `ratings` and `nightly`: reduce once, rate per method, publish."""
    start = time.perf_counter()
    stats = tasks.reduce(store, board, client)
    timings = {"reduce": time.perf_counter() - start}
    futures = [tasks.rate.submit(stats, spec) for spec in board.methods]
    ratings = [f.result() for f in futures]
    timings["rate"] = time.perf_counter() - start - timings["reduce"]
    written = tasks.publish(store, board, ratings, out, timings, stats)
    tasks.artifact(store, board, ratings)
    return written


@flow(name="ratings")
def ratings(store: str, kind: str, methods: list[str], out: str, scheduler: str | None = None, workers: int = 2) -> list[str]:
    board = Board(Path(out).name, kind, (), tuple(methods))
    with dask_client(scheduler, workers) as client:
        written = rate_board(store, board, out, client)
    return [str(p) for p in written] + [str(write_report(out))]
