"""Dask over TLS as shipped: certificates from infra/credentials.py, the configuration of
infra/dask/ (through DASK_CONFIG, as the containers use it), a `dask scheduler` and two
`dask worker` processes on loopback. A TLS run gives the bytes of a local run; a plain-TCP client,
a client without a certificate and a client with a certificate from another CA are refused."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import dask
import pytest
from distributed import Client
from distributed.security import Security

from infra.credentials import write_credentials, write_tls
from tests.conftest import ROOT, SAMPLES
from tests.infra.processes import BIN, LOOPBACK, listening_addresses, start, stop, wait_until

pytestmark = pytest.mark.slow


@dataclass
class TLSCluster:
    address: str
    ours: Path      # DIR of python -m infra.credentials
    theirs: Path    # another CA's certificates
    env: dict[str, str]
    pids: list[int]


def client_security(tls: Path, ca: Path | None = None, certificate: bool = True) -> Security:
    """What a client presents: trusting `ca` (default: the CA of `tls`), with `tls`'s client certificate or none."""
    files = {"tls_client_cert": str(tls / "client.pem"), "tls_client_key": str(tls / "client-key.pem")} if certificate else {}
    return Security(tls_ca_file=str(ca or tls / "ca.pem"), require_encryption=True, **files)


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dask-tls")
    ours, theirs = folder / "ours", folder / "theirs"
    write_credentials(ours)
    write_tls(theirs)
    env = os.environ | {"DASK_CONFIG": str(ours / "dask"), "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    scheduler_file = folder / "scheduler.json"
    scheduler = start([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", "127.0.0.1:0",
                       "--scheduler-file", str(scheduler_file)], folder / "scheduler.log", env)
    workers = []
    try:
        wait_until(scheduler_file.exists, 120, "dask scheduler", folder / "scheduler.log")
        address = json.loads(scheduler_file.read_text())["address"]
        for i in range(2):
            workers.append(start([str(BIN / "dask"), "worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--name", f"w{i}",
                                  "--no-dashboard"], folder / f"worker{i}.log", env, ROOT))
        with Client(address, security=client_security(ours / "tls")) as client:
            client.wait_for_workers(2, timeout=120)
        yield TLSCluster(address, ours, theirs, env, [p.pid for p in [scheduler, *workers]])
    finally:
        for process in workers + [scheduler]:
            stop(process)


def test_the_cluster_speaks_tls_and_computes_for_a_client_of_its_ca(tls_cluster):
    assert tls_cluster.address.startswith("tls://127.0.0.1:")
    with Client(tls_cluster.address, security=client_security(tls_cluster.ours / "tls")) as client:
        workers = client.scheduler_info()["workers"]
        assert len(workers) == 2 and all(address.startswith("tls://127.0.0.1:") for address in workers)
        assert client.submit(sum, [1, 2, 3]).result() == 6


def vase_rate(out: Path, env: dict[str, str], *scheduler: str) -> None:
    done = subprocess.run([str(BIN / "vase"), "rate", str(SAMPLES / "llmfao"), "--kind", "battles", "-m", "copeland", "-m", "borda",
                           "-m", "m-elo:bootstrap=50", "--out", str(out), *scheduler], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def test_vase_rate_over_tls_gives_the_bytes_of_a_local_run(tls_cluster, tmp_path):
    with Client(tls_cluster.address, security=client_security(tls_cluster.ours / "tls")) as client:
        def transitions() -> int:
            return client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)

        before = transitions()
        vase_rate(tmp_path / "tls" / "out", tls_cluster.env, "--scheduler", tls_cluster.address)
        assert transitions() > before  # the reduction did run on the TLS cluster
    local_env = {k: v for k, v in tls_cluster.env.items() if k != "DASK_CONFIG"}
    vase_rate(tmp_path / "local" / "out", local_env)
    for name in ("ratings.parquet", "ratings.json", "leaderboard.md"):
        assert (tmp_path / "tls" / "out" / name).read_bytes() == (tmp_path / "local" / "out" / name).read_bytes(), name


@pytest.mark.parametrize("refused", ["plain tcp", "no certificate", "certificate of another CA", "trusting another CA"])
def test_clients_without_a_certificate_of_the_cluster_ca_are_refused(tls_cluster, refused):
    tls, theirs = tls_cluster.ours / "tls", tls_cluster.theirs / "tls"
    address, security = tls_cluster.address, {
        "no certificate": client_security(tls, certificate=False),
        "certificate of another CA": client_security(theirs, ca=tls / "ca.pem"),  # trusts the server, presents a stranger
        "trusting another CA": client_security(theirs),
    }.get(refused, Security(require_encryption=False))
    if refused == "plain tcp":
        address = address.replace("tls://", "tcp://")
    with pytest.raises(OSError):
        Client(address, security=security, timeout=5)


def flat(config: dict, prefix: str = ""):
    for key, value in config.items():
        if isinstance(value, dict) and value:
            yield from flat(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def test_the_shipped_configuration_refuses_plain_tcp_addresses(tls_cluster):
    shipped = dask.config.collect(paths=[str(tls_cluster.ours / "dask")], env={})
    with dask.config.set(dict(flat(shipped))), pytest.raises(RuntimeError, match="encryption required"):
        Client(tls_cluster.address.replace("tls://", "tcp://"), timeout=5)


def test_the_scheduler_and_workers_listen_on_loopback_only(tls_cluster):
    for pid in tls_cluster.pids:
        addresses = listening_addresses(pid)
        assert addresses and {host for host, _ in addresses} <= LOOPBACK, addresses
