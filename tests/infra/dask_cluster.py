"""Dask clusters of separate processes on loopback: `dask scheduler` and `dask worker`s, every
listener on 127.0.0.1; over TLS as a team runs them, with certificates from infra/credentials.py
and the configuration of infra/dask/ through DASK_CONFIG."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from distributed import Client
from distributed.security import Security

from infra.credentials import write_credentials, write_tls
from tests.conftest import ROOT
from tests.infra.processes import BIN, start, stop, wait_until


@dataclass
class TLSCluster:
    address: str
    ours: Path      # DIR of python -m infra.credentials
    theirs: Path    # another CA's certificates
    env: dict[str, str]  # a client's environment: DASK_CONFIG=ours/dask
    pids: list[int]

    def client(self) -> Client:
        return Client(self.address, security=client_security(self.ours / "tls"))

    def transitions(self) -> int:
        """Task transitions the scheduler has made: grows when anything computes on it."""
        with self.client() as client:
            return client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)


def client_security(tls: Path, ca: Path | None = None) -> Security:
    """What a client presents: `tls`'s client certificate, trusting `ca` (default: the CA of `tls`)."""
    return Security(tls_ca_file=str(ca or tls / "ca.pem"), tls_client_cert=str(tls / "client.pem"),
                    tls_client_key=str(tls / "client-key.pem"), require_encryption=True)


def scheduler_address(scheduler_file: Path) -> str | None:
    """The address in `dask scheduler`'s --scheduler-file, or None until the file is whole: the
    scheduler creates it before writing it, so a reader may find it empty or half written."""
    try:
        return json.loads(scheduler_file.read_text())["address"]
    except (OSError, ValueError, KeyError):
        return None


@contextmanager
def dask_processes(folder: Path, env: dict[str, str], workers: int = 2, security: Security | None = None) -> Iterator[tuple[str, list[int]]]:
    """A `dask scheduler` and `workers` `dask worker` processes with `env`, every listener on
    127.0.0.1, awaited with a client of `security`: (the scheduler's address, their pids)."""
    scheduler_file = folder / "scheduler.json"
    # The worker's HTTP server (metrics, health) listens on --dashboard-address even with
    # --no-dashboard, on every interface by default: keep it on loopback like the rest.
    scheduler = start([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", "127.0.0.1:0",
                       "--scheduler-file", str(scheduler_file)], folder / "scheduler.log", env)
    started = []
    try:
        wait_until(lambda: scheduler_address(scheduler_file), 120, "dask scheduler", folder / "scheduler.log")
        address = scheduler_address(scheduler_file)
        for i in range(workers):
            started.append(start([str(BIN / "dask"), "worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--name", f"w{i}",
                                  "--dashboard-address", "127.0.0.1:0"], folder / f"worker{i}.log", env, ROOT))
        if workers:
            with Client(address, security=security) as client:
                client.wait_for_workers(workers, timeout=120)
        yield address, [p.pid for p in [scheduler, *started]]
    finally:
        stop(*started)
        stop(scheduler)


@contextmanager
def tls_cluster(folder: Path, workers: int = 2) -> Iterator[TLSCluster]:
    ours, theirs = folder / "ours", folder / "theirs"
    write_credentials(ours)
    write_tls(theirs)
    env = os.environ | {"DASK_CONFIG": str(ours / "dask"), "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    with dask_processes(folder, env, workers, client_security(ours / "tls")) as (address, pids):
        yield TLSCluster(address, ours, theirs, env, pids)
