"""A board of normal-form games in the nightly flow: rated from its file, published like any board."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.conftest import SAMPLES

pytestmark = pytest.mark.slow

# Zero-sum, Row's "good" dominates "bad": at the equilibrium Row plays good and Col is indifferent,
# so Nash averaging rates good 1, bad 0 and both of Col's strategies -1. (Joints: Row fastest.)
DOMINANCE = 'NFG 1 R "dominance" { "Row" "Col" } { { "good" "bad" } { "x" "y" } }\n""\n1 -1 0 0 1 -1 0 0\n'


def test_an_nfg_board_is_rated_and_published_beside_a_stored_one(tmp_path, dask_cluster):
    from flows.nightly import nightly

    games = tmp_path / "games"
    games.mkdir()
    (games / "dominance.nfg").write_text(DOMINANCE)
    (games / "notes.txt").write_text("not a game")  # folders are scanned for the kind's files only
    config = tmp_path / "nightly.yaml"
    config.write_text(yaml.safe_dump({"boards": [
        {"name": "dominance", "kind": "nfg", "sources": [str(games)], "methods": ["nash-averaging", "deviation"]},
        {"name": "arena", "kind": "battles", "sources": [str(SAMPLES / "arena_bench" / "arena_hard_battles.csv")],
         "methods": ["copeland"]},
    ]}))
    out = tmp_path / "out"
    first = nightly(str(config), str(out), scheduler=dask_cluster.scheduler_address)
    board = out / "latest" / "dominance"
    records = json.loads((board / "ratings.json").read_text())
    nash = {r["agent"]: r["score"] for r in records if r["method"].startswith("nash-averaging")}
    assert nash == pytest.approx({"Row:good": 1.0, "Row:bad": 0.0, "Col:x": -1.0, "Col:y": -1.0}, abs=1e-6)
    assert {r["method"].split(":")[0] for r in records} == {"nash-averaging", "deviation"}
    run = json.loads((board / "run.json").read_text())
    assert run["kind"] == "nfg" and [(i["status"], i["source"]) for i in run["inputs"]] == [("read", str(games / "dominance.nfg"))]
    assert len(run["inputs"][0]["sha256"]) == 64
    assert not (out / "stores" / "dominance").exists()  # nothing stored
    assert (out / "latest" / "arena" / "ratings.json").exists()
    second = nightly(str(config), str(out), scheduler=dask_cluster.scheduler_address)
    for name in ("ratings.parquet", "ratings.json", "leaderboard.md"):
        assert (out / "runs" / first.split("/")[-1] / "dominance" / name).read_bytes() == (out / "runs" / second.split("/")[-1] / "dominance" / name).read_bytes()


def test_an_nfg_board_refuses_methods_that_do_not_rate_games(tmp_path):
    from pipeline.board import load_boards

    config = tmp_path / "nightly.yaml"
    config.write_text(yaml.safe_dump({"boards": [{"name": "g", "kind": "nfg", "sources": ["g.nfg"], "methods": ["borda"]}]}))
    with pytest.raises(ValueError, match=r"borda does not rate nfg files \(methods that do: affinity-cce, .*deviation"):
        load_boards(config)
