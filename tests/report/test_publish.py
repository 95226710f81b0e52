"""Published outputs: schema, names from the store, stable bytes, run accounting."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from pipeline.board import Board, run_board
from pipeline.store import Store

from tests.conftest import SAMPLES


def test_board_outputs(tmp_path):
    board = Board("f1", "games", (str(SAMPLES / "f1"),), ("borda", "copeland"), "F1")
    result = run_board(board, Store(tmp_path / "store"), tmp_path / "out")
    out = tmp_path / "out"
    table = pq.read_table(out / "ratings.parquet")
    assert table.column_names[:5] == ["method", "agent", "agent_id", "rank", "score"]
    records = json.loads((out / "ratings.json").read_text())
    assert {r["method"] for r in records} == {"borda:normalise=false", "copeland:tie_credit=0.5"}
    top = [r for r in records if r["method"].startswith("borda")][0]
    assert (top["agent"], top["rank"]) == ("Max Verstappen", 1)
    # Each method's rows go by rank, and the ranks of a method are a competition ranking.
    ranks = [r["rank"] for r in records if r["method"].startswith("copeland")]
    assert ranks == sorted(ranks) and ranks[0] == 1
    run = json.loads((out / "run.json").read_text())
    assert run["rows"]["rows_in"] == run["rows"]["rows_accepted"] + run["rows"]["rows_quarantined"] == 1320
    assert run["outputs"] == ["leaderboard.md", "ratings.json", "ratings.parquet", "run.json"]
    assert run["inputs"][0]["sha256"] and "reduce" in run["timings_s"]
    markdown = (out / "leaderboard.md").read_text()
    assert markdown.startswith("# F1\n") and "## copeland:tie_credit=0.5" in markdown and "| 1 | Max Verstappen |" in markdown
    assert len(result.ratings) == 2


def test_same_inputs_same_bytes(tmp_path):
    board = Board("arena", "battles", (str(SAMPLES / "arena_bench" / "arena_hard_battles.csv"),), ("plurality", "copeland"))
    for i in range(2):
        run_board(board, Store(tmp_path / f"store{i}"), tmp_path / f"out{i}")
    for name in ("ratings.parquet", "ratings.json", "leaderboard.md"):
        assert (tmp_path / "out0" / name).read_bytes() == (tmp_path / "out1" / name).read_bytes(), name
