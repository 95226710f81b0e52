"""Prefect tasks: each is one call into the library."""

from __future__ import annotations

from pathlib import Path

import re

from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from pipeline import board as boards
from pipeline.methods import Ratings
from pipeline.stats import Statistics
from pipeline.store import IngestReport, Store


@task(cache_policy=NO_CACHE, retries=2, retry_delay_seconds=5)
def ingest(store: str, board: boards.Board) -> list[IngestReport]:
    # Safe to retry: ingest is idempotent (the manifest is written last).
    return boards.ingest(Store(store), board)


@task(cache_policy=NO_CACHE, retries=1, retry_delay_seconds=5)
def reduce(store: str, board: boards.Board, client, use_cache: bool = True) -> Statistics:
    # Cached per-unit partials make the nightly incremental: only new files are read.
    return boards.reduce(Store(store), board, client, use_cache)


@task(cache_policy=NO_CACHE)
def rate(stats: Statistics, spec: str) -> Ratings:
    return boards.rate(stats, [spec])[0][0]


@task(cache_policy=NO_CACHE)
def publish(store: str, board: boards.Board, ratings: list[Ratings], out: str, timings: dict[str, float],
            stats: Statistics | None = None) -> list[Path]:
    return boards.write_board(Store(store), board, ratings, Path(out), timings, stats)


@task(cache_policy=NO_CACHE)
def artifact(store: str, board: boards.Board, ratings: list[Ratings]) -> None:
    """The leaderboard as a markdown artifact, shown in the Prefect UI."""
    key = re.sub(r"[^a-z0-9-]+", "-", board.name.lower()).strip("-") + "-leaderboard"
    create_markdown_artifact(key=key, markdown=boards.summary_markdown(Store(store), board, ratings),
                             description=f"{board.title or board.name}: {', '.join(board.methods)}")
