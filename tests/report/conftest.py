"""A demo-like nightly output, built through the library as the nightly flow does (no Prefect):
boards of the data samples, two runs a day apart, the second over one new file, with history."""

from __future__ import annotations

import csv
import itertools
import shutil
from pathlib import Path

import pytest

from pipeline import board as boards_api
from pipeline.backtest.runner import BacktestConfig, backtest
from pipeline.board import Board
from pipeline.report import HISTORY_FILE, append_history, write_report
from pipeline.report.runs import promote, staging_folder
from pipeline.store import Store

from tests.conftest import SAMPLES

RUNS = ("2024-06-01T030000.000000Z", "2024-06-02T030000.000000Z")
# Day two: gpt-4o-mini beats the baseline 300 times, and a newcomer appears.
DAY_TWO = "model_a,model_b,winner\n" + "gpt-4o-mini,claude-3-haiku-20240307,model_a\n" * 300 + \
    "newcomer-1b,claude-3-haiku-20240307,model_a\n" * 40 + "newcomer-1b,claude-3-haiku-20240307,model_b\n" * 20


def boards(watched: Path) -> list[Board]:
    return [
        Board("arena", "battles", (str(watched),), ("m-elo:bootstrap=200", "elo", "copeland"), "Arena-Hard battles"),
        Board("f1", "games", (str(SAMPLES / "f1"),), ("borda", "copeland", "schulze", "maximal-lotteries"), "Formula 1"),
        Board("council", "reviews", (str(SAMPLES / "council"),), ("council-borda", "copeland"), "LLM council"),
        Board("llmfao", "battles", (str(SAMPLES / "llmfao"),), ("am-elo", "m-elo:bootstrap=100", "iterative-maximal-lotteries"),
              "LLMFAO crowd"),
    ]


def nightly_run(out: Path, run_id: str, board_list: list[Board], backtests: tuple[BacktestConfig, ...] = ()) -> Path:
    """What `flows.nightly` does, in the calling process: stage, rate each board, report, promote, history.
    Each of `backtests` runs over the first board's store into the run's `backtest-<i>` folder."""
    with staging_folder(out, run_id) as staging:
        for board in board_list:
            store = Store(out / "stores" / board.name)
            boards_api.ingest(store, board)
            stats = boards_api.reduce(store, board, use_cache=True)
            rated = boards_api.rate(stats, board.methods)
            categories = boards_api.rate_categories(store, board, staging / board.name) if board.by is not None else None
            boards_api.write_board(store, board, rated, staging / board.name, rated.timings, stats, categories=categories)
        for i, config in enumerate(backtests):
            backtest(Store(out / "stores" / board_list[0].name), config, staging / f"backtest-{i}")
        write_report(staging, history=out / HISTORY_FILE, run_id=run_id)
        final = promote(out, staging, run_id)
    append_history(out / HISTORY_FILE, final, run_id)
    return final


@pytest.fixture(scope="session")
def demo_nightly(tmp_path_factory) -> Path:
    """`<out>` of two nightly runs; `<out>/latest` is the second, which saw one new file."""
    out = tmp_path_factory.mktemp("nightly")
    watched = out.parent / (out.name + "-watched")
    watched.mkdir()
    shutil.copy(SAMPLES / "arena_bench" / "arena_hard_battles.csv", watched / "day1.csv")
    board_list = boards(watched)
    nightly_run(out, RUNS[0], board_list)
    (watched / "day2.csv").write_text(DAY_TWO)
    nightly_run(out, RUNS[1], board_list)
    return out


# Names that are markup: agents, a board title that closes <title>, categories, and the log's file name
# (shown in every page's inputs). Each would leave a trace `pages.injected` finds if written unescaped.
HOSTILE_AGENTS = ("<script>alert(1)</script>", '"><img src=x onerror=alert(2)>', "</style><blink>x</blink>", "javascript:alert(3)")
HOSTILE_TITLE = "</title><script>alert(4)</script>"
HOSTILE_CATEGORIES = ('"><img src=x onerror=alert(5)>', "<script>alert(6)</script>")
HOSTILE_FILE = '"><img src=x onerror=alert(7)>.csv'


@pytest.fixture(scope="session")
def hostile_nightly(tmp_path_factory) -> Path:
    """`<out>` of two nightly runs of a board rated by category with hostile names everywhere, and a
    backtest of its log: `<out>/latest` holds every kind of page the report writes (the run's index,
    a board with its history, its categories, a backtest)."""
    out = tmp_path_factory.mktemp("hostile")
    logs = out.parent / (out.name + "-logs")
    logs.mkdir()
    strength = dict(zip(HOSTILE_AGENTS, range(len(HOSTILE_AGENTS))))  # distinct strengths, so ranks differ
    categories = (*HOSTILE_CATEGORIES, "")
    with (logs / HOSTILE_FILE).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["battle_id", "model_a", "model_b", "winner", "category", "timestamp"])
        for i, (a, b) in enumerate(itertools.permutations(HOSTILE_AGENTS, 2)):
            for repeat in range(12):
                winner = "model_a" if (strength[a] > strength[b]) == (repeat % 4 != 0) else "model_b"
                writer.writerow([f"b{i}-{repeat}", a, b, winner, categories[repeat % 3], f"2024-01-{1 + repeat:02d}T10:00:00Z"])
    board = Board("hostile", "battles", (str(logs),), ("copeland", "m-elo:bootstrap=20", "schulze"), HOSTILE_TITLE, by="category")
    config = BacktestConfig("battles", ("copeland", "elo"), splits=2, test_size=24, seed=0, reference="elo")
    for run_id in RUNS:
        nightly_run(out, run_id, [board], (config,))
    return out
