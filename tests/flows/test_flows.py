"""The Prefect flows, run for real: Prefect's local mode and a real Dask LocalCluster."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.conftest import SAMPLES, data_rows

pytestmark = pytest.mark.slow


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "nightly.yaml"
    path.write_text(yaml.safe_dump({"boards": [
        {"name": "f1", "kind": "games", "sources": [str(SAMPLES / "f1")], "methods": ["borda", "copeland"]},
        {"name": "arena", "kind": "battles", "sources": [str(SAMPLES / "arena_bench" / "arena_hard_battles.csv")],
         "methods": ["plurality"]},
    ]}))
    return path


def test_nightly_twice_is_identical_and_ingests_nothing_new(tmp_path, config, dask_cluster):
    from flows.nightly import nightly

    out = tmp_path / "out"
    first = nightly(str(config), str(out), scheduler=dask_cluster.scheduler_address)
    second = nightly(str(config), str(out), scheduler=dask_cluster.scheduler_address)
    assert first != second and (out / "latest").resolve() == (tmp_path / "out" / "runs" / second.split("/")[-1])
    for board in ("f1", "arena"):
        for name in ("ratings.parquet", "ratings.json", "leaderboard.md"):
            assert (out / "runs" / first.split("/")[-1] / board / name).read_bytes() == (out / "latest" / board / name).read_bytes()
    manifest = json.loads((out / "stores" / "f1" / "manifest.json").read_text())
    assert len(manifest["files"]) == 1  # the second run skipped the file it had seen
    assert not list((out / "runs").glob(".*"))  # no staging folder left


def test_ingest_and_ratings_flows(tmp_path, dask_cluster):
    from flows.ingest import ingest
    from flows.ratings import ratings

    reports = ingest([str(SAMPLES / "llmfao")], "battles", str(tmp_path / "store"))
    assert [r.status for r in reports] == ["ingested"] and reports[0].rows_accepted == data_rows(SAMPLES / "llmfao" / "crowd_battles.csv")
    written = ratings(str(tmp_path / "store"), "battles", ["copeland", "borda"], str(tmp_path / "out"),
                      scheduler=dask_cluster.scheduler_address)
    assert {p.split("/")[-1] for p in written} == {"ratings.parquet", "ratings.json", "leaderboard.md", "run.json", "agents.parquet",
                                                   "pairwise.parquet", "index.html"}
    records = json.loads((tmp_path / "out" / "ratings.json").read_text())
    assert len({r["agent"] for r in records}) == 59  # LLMFAO's crowd comparisons cover 59 models


def test_a_failed_run_leaves_latest_untouched(tmp_path, config, dask_cluster):
    from flows.nightly import nightly

    out = tmp_path / "out"
    good = nightly(str(config), str(out), scheduler=dask_cluster.scheduler_address)
    broken = tmp_path / "broken.yaml"  # its only board fails (a failing board among others: see below)
    broken.write_text(yaml.safe_dump({"boards": [
        {"name": "empty", "kind": "ballots", "sources": [str(tmp_path / "nothing")], "methods": ["borda"]}]}))
    with pytest.raises(RuntimeError, match="every board failed: empty: ValueError: .*holds no ballots"):
        nightly(str(broken), str(out), scheduler=dask_cluster.scheduler_address)
    assert (out / "latest").resolve() == out / "runs" / good.split("/")[-1]
    assert sorted(p.name for p in (out / "runs").iterdir()) == [good.split("/")[-1]]  # staging discarded


def test_a_new_file_in_a_watched_folder_is_the_only_one_ingested(tmp_path, dask_cluster):
    import shutil

    from flows.nightly import nightly

    watched = tmp_path / "watched"
    watched.mkdir()
    shutil.copy(SAMPLES / "arena_bench" / "arena_hard_battles.csv", watched / "day1.csv")
    config = tmp_path / "nightly.yaml"
    config.write_text(yaml.safe_dump({"boards": [{"name": "arena", "kind": "battles", "sources": [str(watched)],
                                                  "methods": ["copeland"]}]}))
    out = tmp_path / "out"
    nightly(str(config), str(out), scheduler=dask_cluster.scheduler_address)
    (watched / "day2.csv").write_text("model_a,model_b,winner\ngpt-4o,gpt-4o-mini,model_a\n")
    nightly(str(config), str(out), scheduler=dask_cluster.scheduler_address)
    manifest = json.loads((out / "stores" / "arena" / "manifest.json").read_text())
    assert sorted(f["source"].split("/")[-1] for f in manifest["files"]) == ["day1.csv", "day2.csv"]
    run = json.loads((out / "latest" / "arena" / "run.json").read_text())
    assert run["rows"]["rows_accepted"] == data_rows(watched / "day1.csv") + 1  # day two's one battle


def test_ratings_flow_runs_a_game_method(tmp_path, dask_cluster):
    from flows.ingest import ingest
    from flows.ratings import ratings

    ingest([str(SAMPLES / "livebench")], "scores", str(tmp_path / "store"))
    ratings(str(tmp_path / "store"), "scores", ["nash-averaging"], str(tmp_path / "out"), scheduler=dask_cluster.scheduler_address)
    records = json.loads((tmp_path / "out" / "ratings.json").read_text())
    assert len(records) == 59 and {r["method"].split(":")[0] for r in records} == {"nash-averaging"}
    assert min(r["rank"] for r in records) == 1


def test_a_method_that_cannot_rate_does_not_stop_the_nightly(tmp_path, dask_cluster):
    from flows.nightly import nightly

    log = tmp_path / "logs" / "battles.csv"
    log.parent.mkdir()
    log.write_text("model_a,model_b,winner\nzeta,alpha,model_a\nalpha,mu,model_a\nmu,zeta,model_b\nzeta,mu,model_a\n")
    config = tmp_path / "nightly.yaml"
    config.write_text(yaml.safe_dump({"boards": [{"name": "tiny", "kind": "battles", "sources": [str(log.parent)],
                                                  "methods": ["m-elo", "borda", "borda:normalise=false"]}]}))
    nightly(str(config), str(tmp_path / "out"), scheduler=dask_cluster.scheduler_address)
    run = json.loads((tmp_path / "out" / "latest" / "tiny" / "run.json").read_text())
    [message] = run["errors"].values()
    assert "agents that never win or never lose: mu, zeta" in message
    assert run["methods"][1:] == ["borda:normalise=false"] and run["parameters"]["methods_merged"]
    assert {r["method"] for r in json.loads((tmp_path / "out" / "latest" / "tiny" / "ratings.json").read_text())} == {
        "borda:normalise=false"}


@pytest.mark.parametrize("name", ["../../escaped", "/tmp/vase-escaped"])
def test_nightly_refuses_a_board_that_would_write_outside_out(tmp_path, config, name):
    from flows.nightly import nightly
    from pipeline.paths import UnsafePath

    boards = yaml.safe_load(config.read_text())["boards"]
    boards[0]["name"] = name
    config.write_text(yaml.safe_dump({"boards": boards}))
    out = tmp_path / "deep" / "out"
    with pytest.raises(UnsafePath, match="board name must match"):
        nightly(str(config), str(out))
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == ["nightly.yaml"]


def test_a_failing_board_does_not_stop_the_others(tmp_path):
    from flows.nightly import nightly

    bad = tmp_path / "broken.nfg"
    bad.write_text("NFG 1 R \"x\" { \"a\" } { 2 }\n1\n")  # too few payoffs: the board fails when rated
    config = tmp_path / "nightly.yaml"
    config.write_text(yaml.safe_dump({"boards": [
        {"name": "broken", "kind": "nfg", "sources": [str(bad)], "methods": ["deviation"]},
        {"name": "f1", "kind": "games", "sources": [str(SAMPLES / "f1")], "methods": ["borda"]},
    ]}))
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="without 1 failed board"):
        nightly(str(config), str(out), workers=0)
    latest = out / "latest"
    assert (latest / "f1" / "ratings.parquet").exists() and not (latest / "broken").exists()
    index = (latest / "index.html").read_text()
    assert "Board broken failed and was not published" in index and "payoffs" in index


def test_a_board_quarantining_too_much_fails_and_the_others_publish(tmp_path):
    from flows.nightly import nightly

    dirty = tmp_path / "dirty.csv"
    dirty.write_text("model_a,model_b,winner\n" + "a,b,model_a\n" * 9 + "a,b,nobody\n")  # 10% quarantined
    config = tmp_path / "nightly.yaml"
    config.write_text(yaml.safe_dump({"boards": [
        {"name": "dirty", "kind": "battles", "sources": [str(dirty)], "methods": ["copeland"]},
        {"name": "tolerant", "kind": "battles", "sources": [str(dirty)], "methods": ["copeland"], "max_quarantined": 0.2},
    ]}))
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="without 1 failed board"):
        nightly(str(config), str(out), workers=0)
    latest = out / "latest"
    assert (latest / "tolerant" / "ratings.parquet").exists() and not (latest / "dirty").exists()
    assert "10.0% of the 10 rows read were quarantined" in (latest / "index.html").read_text()


def test_a_run_where_every_board_fails_is_not_published(tmp_path):
    from flows.nightly import nightly

    bad = tmp_path / "broken.nfg"
    bad.write_text("NFG 1 R \"x\" { \"a\" } { 2 }\n1\n")
    config = tmp_path / "nightly.yaml"
    config.write_text(yaml.safe_dump({"boards": [{"name": "broken", "kind": "nfg", "sources": [str(bad)],
                                                  "methods": ["deviation"]}]}))
    with pytest.raises(RuntimeError, match="every board failed"):
        nightly(str(config), str(tmp_path / "out"), workers=0)
    assert not (tmp_path / "out" / "latest").exists()


def test_a_nightly_with_bad_files_publishes_every_board_and_does_not_retry_them(tmp_path):
    """Three boards; one fed a latin-1 file, a file with a NaN timestamp and a truncated Parquet file."""
    import shutil

    import polars as pl

    from flows.nightly import nightly
    from pipeline.store import Store

    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(SAMPLES / "arena_bench" / "arena_hard_battles.csv", logs / "good.csv")
    (logs / "latin1.csv").write_bytes("model_a,model_b,winner\ncaf\u00e9-7b,gpt,model_a\n".encode("latin-1"))
    (logs / "nan_time.csv").write_text("model_a,model_b,winner,timestamp\na,b,model_a,NaN\nb,a,tie,2024-01-01T00:00:00Z\n")
    whole = tmp_path / "whole.parquet"
    pl.read_csv(logs / "good.csv").write_parquet(whole)
    data = whole.read_bytes()
    (logs / "truncated.parquet").write_bytes(data[: len(data) // 2])
    config = tmp_path / "nightly.yaml"
    config.write_text(yaml.safe_dump({"boards": [
        {"name": "arena", "kind": "battles", "sources": [str(logs)], "methods": ["borda"]},
        {"name": "f1", "kind": "games", "sources": [str(SAMPLES / "f1")], "methods": ["borda"]},
        {"name": "arena-clean", "kind": "battles", "sources": [str(SAMPLES / "arena_bench" / "arena_hard_battles.csv")],
         "methods": ["copeland"]},
    ]}))
    out = tmp_path / "out"
    nightly(str(config), str(out), workers=0)
    latest = out / "latest"
    assert all((latest / board / "ratings.parquet").exists() for board in ("arena", "f1", "arena-clean"))
    run = json.loads((latest / "arena" / "run.json").read_text())
    status = {i["source"].rsplit("/", 1)[-1]: i for i in run["inputs"]}
    assert status["good.csv"]["status"] == "ingested" and status["truncated.parquet"]["status"] == "unreadable"
    assert status["latin1.csv"]["status"] == "unreadable" and "latin1.csv" in status["latin1.csv"]["error"]
    assert status["nan_time.csv"]["rows_quarantined"] == 1
    page = (latest / "arena" / "index.html").read_text()
    assert "truncated.parquet" in page and "latin1.csv" in page
    manifest = Store(out / "stores" / "arena").manifest
    refused = {r.sha256: r.ingested_at for r in manifest.files.values() if r.status == "unreadable"}
    assert len(refused) == 2
    nightly(str(config), str(out), workers=0)  # the next night reads neither refused file again
    again = Store(out / "stores" / "arena").manifest
    assert {r.sha256: r.ingested_at for r in again.files.values() if r.status == "unreadable"} == refused


def test_the_ratings_flow_weighs_records_by_age_as_vase_rate_does(tmp_path, dask_cluster):
    # The flow reduced once, unweighed, for every spec: m-elo:half_life_days=D was then refused (the registry's check).
    import numpy as np

    from flows.ingest import ingest
    from flows.ratings import ratings
    from pipeline.cli import app
    from tests.stats.test_recency import dated_battles, write
    from typer.testing import CliRunner

    write(tmp_path / "battles.csv", dated_battles(np.random.default_rng(4), battles=200))
    ingest([str(tmp_path / "battles.csv")], "battles", str(tmp_path / "store"))
    specs = ["m-elo:half_life_days=9,prior=0.5,bootstrap=0", "borda"]
    ratings(str(tmp_path / "store"), "battles", specs, str(tmp_path / "flow"), scheduler=dask_cluster.scheduler_address)
    result = CliRunner().invoke(app, ["rate", "--kind", "battles", "--store", str(tmp_path / "store"), *(a for s in specs for a in ("-m", s)),
                                      "--out", str(tmp_path / "cli")])
    assert result.exit_code == 0, result.output
    flow, cli = (json.loads((tmp_path / out / "ratings.json").read_text()) for out in ("flow", "cli"))
    assert flow == cli and [r["method"].split(":")[0] for r in flow][::len(flow) // 2] == ["m-elo", "borda"]
    assert json.loads((tmp_path / "flow" / "run.json").read_text())["errors"] == {}
