"""The flows against an external Dask cluster: `dask scheduler` and two `dask worker`
processes on loopback, started here and passed to the flow by address."""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import ROOT, SAMPLES
from tests.infra.processes import BIN, start, stop, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def external_cluster(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dask")
    scheduler_file = folder / "scheduler.json"
    env = os.environ | {"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    scheduler = start([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", "127.0.0.1:0",
                       "--scheduler-file", str(scheduler_file)], folder / "scheduler.log", env)
    workers = []
    try:
        wait_until(scheduler_file.exists, 120, "dask scheduler", folder / "scheduler.log")
        address = json.loads(scheduler_file.read_text())["address"]
        for i in range(2):
            workers.append(start([str(BIN / "dask"), "worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--name", f"w{i}",
                                  "--dashboard-address", "127.0.0.1:0"], folder / f"worker{i}.log", env, ROOT))
        from distributed import Client

        with Client(address) as client:
            client.wait_for_workers(2, timeout=120)
        yield address
    finally:
        stop(*workers)
        stop(scheduler)


def test_ratings_flow_on_an_external_cluster_matches_local(tmp_path, external_cluster):
    from flows.ratings import ratings
    from pipeline.board import Board, run_board
    from pipeline.store import Store

    store = tmp_path / "store"
    local = run_board(Board("out", "battles", (str(SAMPLES / "llmfao"),), ("copeland", "borda")), Store(store), tmp_path / "local" / "out")
    assert local.reports[0].rows_accepted == 8931
    ratings(str(store), "battles", ["copeland", "borda"], str(tmp_path / "remote" / "out"), scheduler=external_cluster)
    for name in ("ratings.parquet", "ratings.json", "leaderboard.md"):
        assert (tmp_path / "remote" / "out" / name).read_bytes() == (tmp_path / "local" / "out" / name).read_bytes()


def test_scheduler_address_from_the_environment(tmp_path, external_cluster, monkeypatch):
    from flows.cluster import SCHEDULER_ENV, dask_client

    monkeypatch.setenv(SCHEDULER_ENV, external_cluster)
    with dask_client() as client:
        assert client.scheduler.address == external_cluster and len(client.scheduler_info()["workers"]) == 2
