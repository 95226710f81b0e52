"""The flows against an external Dask cluster: `dask scheduler` and two `dask worker`
processes on loopback, started here and passed to the flow by address."""

from __future__ import annotations

import os

import pytest

from tests.conftest import ROOT, SAMPLES, data_rows
from tests.infra.dask_cluster import dask_processes

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def external_cluster(tmp_path_factory):
    env = os.environ | {"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    with dask_processes(tmp_path_factory.mktemp("dask"), env) as (address, _):
        yield address


def test_ratings_flow_on_an_external_cluster_matches_local(tmp_path, external_cluster):
    from flows.ratings import ratings
    from pipeline.board import Board, run_board
    from pipeline.store import Store

    store = tmp_path / "store"
    local = run_board(Board("out", "battles", (str(SAMPLES / "llmfao"),), ("copeland", "borda")), Store(store), tmp_path / "local" / "out")
    # Every row of the sample is a valid battle (data-samples/llmfao/PROVENANCE.md: 8,931 crowd comparisons).
    battles = data_rows(SAMPLES / "llmfao" / "crowd_battles.csv")
    assert (local.reports[0].rows_accepted, local.reports[0].rows_quarantined) == (battles, 0)
    ratings(str(store), "battles", ["copeland", "borda"], str(tmp_path / "remote" / "out"), scheduler=external_cluster)
    for name in ("ratings.parquet", "ratings.json", "leaderboard.md"):
        assert (tmp_path / "remote" / "out" / name).read_bytes() == (tmp_path / "local" / "out" / name).read_bytes()


def test_scheduler_address_from_the_environment(tmp_path, external_cluster, monkeypatch):
    from pipeline.runtime import SCHEDULER_ENV, dask_client

    monkeypatch.setenv(SCHEDULER_ENV, external_cluster)
    with dask_client() as client:
        assert client.scheduler.address == external_cluster and len(client.scheduler_info()["workers"]) == 2
