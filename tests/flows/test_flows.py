"""The Prefect flows, run for real: Prefect's local mode and a real Dask LocalCluster."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.conftest import SAMPLES

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
    assert [r.status for r in reports] == ["ingested"] and reports[0].rows_accepted == 8931
    written = ratings(str(tmp_path / "store"), "battles", ["copeland", "borda"], str(tmp_path / "out"),
                      scheduler=dask_cluster.scheduler_address)
    assert {p.split("/")[-1] for p in written} == {"ratings.parquet", "ratings.json", "leaderboard.md", "run.json"}
    records = json.loads((tmp_path / "out" / "ratings.json").read_text())
    assert len({r["agent"] for r in records}) == 59  # LLMFAO's crowd comparisons cover 59 models
