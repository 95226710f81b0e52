"""Prefect tasks: each is one call into the library."""

from __future__ import annotations

import re
from pathlib import Path

from prefect import task
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from pipeline import board as boards
from pipeline.methods import Ratings, Spec
from pipeline.methods.standing import Standing
from pipeline.report import remote
from pipeline.stats import Statistics
from pipeline.store import IngestReport, Store
from pipeline.store.location import address


def artifact_key(board: str, suffix: str) -> str:
    """A board's artifact key: Prefect allows lowercase letters, digits and dashes."""
    return re.sub(r"[^a-z0-9-]+", "-", board.lower()).strip("-") + f"-{suffix}"


@task(cache_policy=NO_CACHE, retries=2, retry_delay_seconds=5)
def ingest(store: str, board: boards.Board) -> list[IngestReport]:
    # Safe to retry: ingest is idempotent (the manifest is written last).
    return boards.ingest(Store(store), board)


@task(cache_policy=NO_CACHE, retries=1, retry_delay_seconds=5)
def reduce(store: str, board: boards.Board, client, use_cache: bool = True, methods: list[Spec] | None = None) -> Statistics:
    # Cached per-unit partials make the nightly incremental: only new files are read.
    return boards.reduce(Store(store), board, client, use_cache, methods=methods)


@task(cache_policy=NO_CACHE)
def rate(stats: Statistics, spec: Spec, client, standing: Standing | None = None) -> boards.Rated:
    # A method that cannot rate the data comes back as a refusal, not as a failed task.
    return boards.rate(stats, [spec], client, standing)


@task(cache_policy=NO_CACHE)
def rate_categories(store: str, board: boards.Board, out: str, client) -> boards.Categories:
    # Each category fails on its own: the task returns their outcomes and raises for none of them.
    return boards.rate_categories(Store(store), board, Path(out), client, use_cache=True)


@task(cache_policy=NO_CACHE)
def publish(store: str, board: boards.Board, rated: boards.Rated, out: str, timings: dict[str, float],
            stats: Statistics | None = None, categories: boards.Categories | None = None) -> list[Path]:
    return boards.write_board(Store(store), board, rated, Path(out), timings, stats, categories=categories)


def refusals(store: str, board: boards.Board, rated: boards.Rated) -> dict[str, str]:
    """The refusals' one-line messages, agents named."""
    return rated.messages(boards.agent_names(Store(store), board))


@task(cache_policy=NO_CACHE)
def artifact(store: str, board: boards.Board, ratings: list[Ratings]) -> None:
    """The leaderboard as a markdown artifact, shown in the Prefect UI."""
    create_markdown_artifact(key=artifact_key(board.name, "leaderboard"), markdown=boards.summary_markdown(Store(store), board, ratings),
                             description=f"{board.title or board.name}: {', '.join(s.name for s in board.methods)}")


@task(cache_policy=NO_CACHE, retries=2, retry_delay_seconds=5)
def publish_remote(folder: str, target: str, run_id: str, link_base: str | None = None) -> str:
    """Copy a published run to `target` (object storage or a folder; safe to retry: the same
    names again), link it from a link artifact and show the top of each board as a table artifact."""
    index = remote.upload_run(Path(folder), target, run_id)
    where = address(link_base or target, index)
    create_link_artifact(key="nightly-report", link=where, link_text=f"vase nightly {run_id}",
                         description=f"The report of nightly run {run_id}, copied to {address(target, index)}")
    for board, rows in remote.board_tops(Path(folder)).items():
        create_table_artifact(key=artifact_key(board, "top"), table=rows, description=f"{board}: the top {remote.TOP} agents of each method ({run_id})")
    return where
