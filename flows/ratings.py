"""The `ratings` flow: reduce a store's logs on Dask and rate them with several methods."""

from __future__ import annotations

import time
from pathlib import Path

from prefect import flow, get_run_logger

from flows import tasks
from pipeline import board as boards
from pipeline.board import Board, half_life_groups, shown_statistics
from pipeline.report import write_report
from pipeline.report.outfolder import replacing_run
from pipeline.runtime import FLOW_SCHEDULER, dask_client
from pipeline.store import Store


def rate_board(store: str, board: Board, out: str, client) -> list[Path]:
    """The body shared by `ratings` and `nightly`: refuse the specs the store's footprint prices past the
    budget, reduce once for the others, rate per method, publish.

    A method that cannot rate the data is logged (one line, agents named) and recorded in
    run.json; the other methods are published. A board `by` category also rates each category
    into `<out>/category=<folder>/`; a category that fails is logged and listed in run.json, and
    the others and the overall board are published."""
    start = time.perf_counter()
    rated = boards.refuse_before_reading(Store(store), board)  # before any row is read
    left = [spec for spec in board.methods if spec.canonical not in rated.refused]
    groups = half_life_groups(left)  # one reduction per half-life the specs weigh records by
    reduced = {days: tasks.reduce(store, board, client, specs=specs, half_life_days=days) for days, specs in groups.items()}
    timings = {"reduce": time.perf_counter() - start}
    futures = [tasks.rate.submit(reduced[days], spec, client, board.standing, board.as_of)
               for days, specs in groups.items() for spec in specs]
    for future in futures:
        rated.add(future.result())
    rated.in_order(board.methods)
    stats = shown_statistics(reduced) if reduced else None  # None: every spec refused, nothing read
    timings["rate"] = time.perf_counter() - start - timings["reduce"]
    categories = None
    with replacing_run(Path(out)):  # an earlier run's files in `out` are not left beside this one's
        if board.by is not None:
            categories = tasks.rate_categories(store, board, out, client)
            timings["categories"] = time.perf_counter() - start - timings["reduce"] - timings["rate"]
        written = tasks.publish(store, board, rated, out, timings, stats, categories)
    tasks.artifact(store, board, rated.ratings)
    log = get_run_logger()
    for spec, message in tasks.refusals(store, board, rated).items():
        log.warning("%s: %s could not rate: %s", board.name, spec, message)
    for category in categories.boards if categories is not None else ():
        if category.failed:
            log.error("%s: category %r failed: %s", board.name, category.category, category.failed)
        for spec, message in category.errors.items():
            log.warning("%s: category %r: %s could not rate: %s", board.name, category.category, spec, message)
    return written


@flow(name="ratings")
def ratings(store: str, kind: str, methods: list[str], out: str, scheduler: str | None = None, workers: int = 2,
            by: str | None = None) -> list[str]:
    board = Board(Path(out).name, kind, (), tuple(methods), by=by)
    with dask_client(scheduler, workers, given_by=FLOW_SCHEDULER) as client:
        written = rate_board(store, board, out, client)
    return [str(p) for p in written] + [str(write_report(out))]
