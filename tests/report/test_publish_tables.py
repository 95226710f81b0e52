"""Method tables (Ratings.tables) are published beside ratings.parquet, with names, and listed in run.json."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from pipeline.board import Board, run_board
from pipeline.store import Store


def test_council_tables_are_published(tmp_path):
    source = tmp_path / "reviews.jsonl"
    mapping = {"A": "m1", "B": "m2", "C": "m3"}
    source.write_text("".join(json.dumps({"query_id": f"q{i}", "reviewer": r, "ranking": ranking, "label_to_model": mapping,
                                          "category": "code", "timestamp": "2024-11-01"}) + "\n"
                              for i, (r, ranking) in enumerate([("m1", ["A", "B", "C"]), ("m2", ["C", "B", "A"]), ("x", ["B", "A"])])))
    board = Board("council", "reviews", (str(source),), ("council-borda:compare=copeland+not-a-method", "copeland"))
    out = tmp_path / "out"
    run_board(board, Store(tmp_path / "store"), out)
    run = json.loads((out / "run.json").read_text())
    for stem in ("council-borda.per_query", "council-borda.leaderboard", "council-borda.comparison"):
        assert {f"{stem}.parquet", f"{stem}.md"} <= set(run["outputs"])
        assert (out / f"{stem}.md").read_text().startswith("# council: " + stem)
    table = pq.read_table(out / "council-borda.comparison.parquet")
    assert sorted(table.column("agent").to_pylist()) == ["m1", "m2", "m3"]
    assert "not-a-method" in (out / "leaderboard.md").read_text()  # the unavailable spec is said in the report
    assert run["diagnostics"]["council-borda:compare=copeland+not-a-method,exclude_self_votes=true,ranks=strict,window_days=30"]["reviewer_agents"] == ["m1", "m2", "x"]
