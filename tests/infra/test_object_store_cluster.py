"""A cluster without a shared disk: a Dask scheduler and two workers as separate processes, each in
an empty working folder with a HOME of its own, reachable only over TLS (mutual, certificates of
infra/credentials.py), and the store only on an S3 endpoint (moto's server: `tests.s3server`).
A rating computed there gives the bytes of a local run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from distributed import Client

from infra.credentials import write_credentials
from tests.conftest import ROOT, SAMPLES
from tests.infra.dask_cluster import client_security, scheduler_address
from tests.infra.processes import BIN, start, stop, wait_until
from tests.s3server import s3  # noqa: F401 (the fixture)

pytestmark = pytest.mark.slow
METHODS = ["-m", "copeland", "-m", "elo", "-m", "m-elo"]


def role(folder: Path, base: dict[str, str]) -> dict[str, str]:
    """An empty working folder with its own HOME, and the environment of a process started there."""
    (folder / "home").mkdir(parents=True)
    return base | {"HOME": str(folder / "home")}


def vase(args: list[str], env: dict[str, str], cwd: Path) -> None:
    done = subprocess.run([str(BIN / "vase"), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_tls_cluster_without_a_shared_disk_rates_a_store_on_s3_as_a_local_run(tmp_path, s3):  # noqa: F811
    credentials = tmp_path / "credentials"
    write_credentials(credentials)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "DASK_", "VASE_"))}
    base = clean | s3.environment() | {"DASK_CONFIG": str(credentials / "dask"), "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    url = f"s3://{s3.bucket()}/store"

    scheduler_file = tmp_path / "scheduler" / "scheduler.json"
    env = role(tmp_path / "scheduler", base)
    scheduler = start([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", "127.0.0.1:0",
                       "--scheduler-file", str(scheduler_file)], tmp_path / "scheduler.log", env, tmp_path / "scheduler")
    workers = []
    try:
        wait_until(lambda: scheduler_address(scheduler_file), 120, "dask scheduler", tmp_path / "scheduler.log")
        address = scheduler_address(scheduler_file)
        assert address.startswith("tls://127.0.0.1:")
        for i in range(2):
            folder = tmp_path / f"worker{i}"
            workers.append(start([str(BIN / "dask"), "worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--name", f"w{i}",
                                  "--dashboard-address", "127.0.0.1:0"], tmp_path / f"worker{i}.log", role(folder, base), folder))
        security = client_security(credentials / "tls")
        with Client(address, security=security) as client:
            client.wait_for_workers(2, timeout=120)
            before = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)

        client_env = role(tmp_path / "client", base)
        vase(["ingest", str(SAMPLES / "llmfao"), "--kind", "battles", "--store", url], client_env, tmp_path / "client")
        vase(["rate", "--kind", "battles", *METHODS, "--store", url, "--scheduler", address, "--out", "out"], client_env,
             tmp_path / "client")
        with Client(address, security=security) as client:
            assert client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter) > before
    finally:
        stop(*workers)
        stop(scheduler)

    local_env = role(tmp_path / "local", clean | {"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})
    vase(["rate", str(SAMPLES / "llmfao"), "--kind", "battles", *METHODS, "--store", "store", "--out", "out"], local_env,
         tmp_path / "local")
    for name in ("ratings.parquet", "ratings.json", "leaderboard.md"):
        assert (tmp_path / "client" / "out" / name).read_bytes() == (tmp_path / "local" / "out" / name).read_bytes(), name
    # The store was never on a disk: no Parquet in the cluster's folders, none but the outputs in the client's.
    for folder in ("scheduler", "worker0", "worker1"):
        assert not list((tmp_path / folder).rglob("*.parquet")), folder
    assert {p.parent.name for p in (tmp_path / "client").rglob("*.parquet")} == {"out"}
