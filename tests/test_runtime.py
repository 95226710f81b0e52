"""One runtime policy: where the command line and the flows compute, and what a LocalCluster exposes."""

from __future__ import annotations

import ipaddress
import json
import os

import psutil
import pytest
from typer.testing import CliRunner

from pipeline.runtime import FLOW_SCHEDULER, SCHEDULER_ENV, dask_client, local_cluster, scheduler_address
from tests.conftest import SAMPLES

pytestmark = pytest.mark.slow


def test_the_policy_explicit_address_then_environment_then_local(monkeypatch):
    monkeypatch.delenv(SCHEDULER_ENV, raising=False)
    assert scheduler_address(None) is None
    monkeypatch.setenv(SCHEDULER_ENV, "tcp://127.0.0.1:1")
    assert scheduler_address(None) == "tcp://127.0.0.1:1" and scheduler_address("tls://host:2") == "tls://host:2"
    monkeypatch.delenv(SCHEDULER_ENV)
    with dask_client(None, workers=0) as client:
        assert client is None  # local threads
    with pytest.raises(ValueError, match="workers"):
        with dask_client(None, workers=-1):
            pass


def test_a_scheduler_from_the_environment_is_used(dask_cluster, monkeypatch):
    monkeypatch.setenv(SCHEDULER_ENV, dask_cluster.scheduler_address)
    with dask_client(None, workers=0) as client:  # an address wins over "no cluster"
        assert client.scheduler.address == dask_cluster.scheduler_address


def _listening(pids: set[int]) -> list[tuple[int, str, int]]:
    return [(c.pid, c.laddr.ip, c.laddr.port) for c in psutil.net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN and c.pid in pids]


def test_a_local_cluster_listens_on_loopback_only(monkeypatch):
    # What an earlier plain LocalCluster's nanny leaves in this process's environment.
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    before = {(c.laddr.ip, c.laddr.port) for c in psutil.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN}
    with local_cluster(2) as cluster:
        from distributed import Client

        with Client(cluster) as client:
            environment = client.run(lambda: (os.environ.get("MALLOC_TRIM_THRESHOLD_"), os.environ.get("OMP_NUM_THREADS")))
            workers = client.run(os.getpid)
        pids = {os.getpid(), *workers.values(), *(p.pid for p in psutil.Process().children(recursive=True))}
        sockets = [s for s in _listening(pids) if (s[1], s[2]) not in before]
        addresses = [cluster.scheduler_address, cluster.dashboard_link, *cluster.scheduler_info["workers"]]
    assert list(environment.values()) == [(None, "1")] * 2  # glibc's adaptive mmap threshold kept, one BLAS thread
    assert len(sockets) >= 5  # scheduler, its dashboard, and a worker and a nanny per worker at least
    assert all(ipaddress.ip_address(ip).is_loopback for _, ip, _ in sockets), sockets
    assert all("127.0.0.1" in a for a in addresses), addresses


# Another process of the machine tries the cluster: a Client on ADDRESS with the certificates of
# CREDENTIALS (a folder of ca.pem, cert.pem, key.pem; "none": none), submits a task, prints the verdict.
INTRUDER = """
import sys
from distributed import Client
from distributed.security import Security

address, credentials, timeout = sys.argv[1:]
security = Security(require_encryption=False) if credentials == "none" else Security(
    tls_ca_file=f"{credentials}/ca.pem", tls_client_cert=f"{credentials}/cert.pem", tls_client_key=f"{credentials}/key.pem")
try:
    with Client(address, security=security, timeout=timeout) as client:
        print("accepted", client.submit(sum, [1, 2]).result())
except Exception as exc:
    print("refused", type(exc).__name__)
"""


def write_credentials(folder, security):
    folder.mkdir()
    for name, pem in (("ca.pem", security.tls_ca_file), ("cert.pem", security.tls_client_cert), ("key.pem", security.tls_client_key)):
        (folder / name).write_text(pem)
    return folder


def test_a_local_cluster_refuses_every_other_process(tmp_path):
    """`vase rate --workers 2`'s cluster over loopback, shared with every process of the machine: plain TCP and TLS
    with other credentials are refused; the same process with the cluster's own credentials computes (the refusals
    are not a slow machine's)."""
    import subprocess
    import sys

    from distributed.security import Security

    def attempt(address: str, credentials: str, timeout: str = "5s") -> str:
        return subprocess.run([sys.executable, "-c", INTRUDER, address, credentials, timeout], capture_output=True, text=True,
                              timeout=180).stdout.strip()

    with dask_client(None, workers=2) as client:
        address = client.scheduler.address
        plain = attempt(address.replace("tls://", "tcp://"), "none")
        other = attempt(address, str(write_credentials(tmp_path / "theirs", Security.temporary())))
        assert plain.startswith("refused") and other.startswith("refused"), (plain, other)
        assert attempt(address, str(write_credentials(tmp_path / "ours", client.security)), "60s") == "accepted 3"
    assert address.startswith("tls://127.0.0.1:")


def test_vase_rate_on_a_local_cluster_gives_the_bytes_of_local_threads(tmp_path):
    from pipeline.cli import app

    runner = CliRunner()
    args = ["rate", str(SAMPLES / "llmfao" / "crowd_battles.csv"), "--kind", "battles", "-m", "m-elo:bootstrap=200",
            "-m", "elo:shuffles=12", "-m", "copeland", "--title", "crowd"]
    local = runner.invoke(app, [*args, "--out", str(tmp_path / "local")])
    cluster = runner.invoke(app, [*args, "--out", str(tmp_path / "cluster"), "--workers", "2"])
    assert local.exit_code == 0 and cluster.exit_code == 0, local.output + cluster.output
    for name in ("ratings.parquet", "ratings.json", "leaderboard.md"):
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "cluster" / name).read_bytes()


def test_the_ratings_flow_on_a_cluster_gives_the_bytes_of_the_library_on_local_threads(tmp_path, dask_cluster):
    from flows.ratings import ratings
    from pipeline.board import Board, run_board
    from pipeline.store import Store

    methods = ["m-elo:bootstrap=200", "elo:shuffles=12", "am-elo"]
    local = run_board(Board("out", "battles", (str(SAMPLES / "llmfao"),), methods), Store(tmp_path / "store"), tmp_path / "local" / "out")
    assert not local.errors
    ratings(str(tmp_path / "store"), "battles", methods, str(tmp_path / "flow" / "out"), scheduler=dask_cluster.scheduler_address)
    for name in ("ratings.parquet", "ratings.json", "leaderboard.md"):
        assert (tmp_path / "flow" / "out" / name).read_bytes() == (tmp_path / "local" / "out" / name).read_bytes()
    run = json.loads((tmp_path / "flow" / "out" / "run.json").read_text())
    assert run["methods"] == [r.spec for r in local.ratings] and run["errors"] == {}


def test_a_tls_address_takes_its_certificates_from_the_dask_configuration():
    import dask
    from distributed import Client, LocalCluster
    from distributed.security import Security

    security = Security.temporary()
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, security=security, host="tls://127.0.0.1",
                      dashboard_address=None) as cluster:
        assert cluster.scheduler_address.startswith("tls://127.0.0.1")
        with pytest.raises((OSError, TimeoutError)):  # without certificates the client is refused
            Client(cluster.scheduler_address.replace("tls://", "tcp://"), timeout="2s").close()
        configured = {"distributed.comm.tls.ca-file": security.tls_ca_file,
                      "distributed.comm.tls.client.cert": security.tls_client_cert,
                      "distributed.comm.tls.client.key": security.tls_client_key}
        with dask.config.set(configured), dask_client(cluster.scheduler_address) as client:
            assert client.submit(sum, [1, 2]).result() == 3


def test_dask_logs_are_quiet_by_default_and_verbose_brings_them_back(tmp_path):
    import subprocess
    import sys

    from pipeline.runtime import DASK_LOG_ENV, PREFECT_LOG_ENV

    env = {k: v for k, v in os.environ.items() if k not in (DASK_LOG_ENV, PREFECT_LOG_ENV)}
    args = ["rate", str(SAMPLES / "f1"), "--kind", "games", "-m", "borda", "--workers", "1"]
    command = [sys.executable, "-c", "from flows.cli import app; app()"]
    quiet = subprocess.run([*command, *args, "--out", str(tmp_path / "quiet")], env=env, capture_output=True, text=True)
    assert quiet.returncode == 0, quiet.stderr
    assert "INFO" not in quiet.stderr + quiet.stdout and "report:" in quiet.stdout
    loud = subprocess.run([*command, "--verbose", *args, "--out", str(tmp_path / "loud")], env=env, capture_output=True, text=True)
    assert loud.returncode == 0, loud.stderr
    assert "distributed" in loud.stderr and "INFO" in loud.stderr


def test_a_task_that_fails_on_a_worker_is_one_line_and_its_dask_block_only_when_verbose(tmp_path):
    # A damaged partition makes a reduction task fail on a worker process, which printed Dask's
    # "Compute Failed" block (task, exception, traceback) on the terminal above vase's one line.
    import subprocess
    import sys

    from pipeline.runtime import DASK_LOG_ENV, PREFECT_LOG_ENV

    env = {k: v for k, v in os.environ.items() if k not in (DASK_LOG_ENV, PREFECT_LOG_ENV)}
    command = [sys.executable, "-c", "from flows.cli import app; app()"]
    from pipeline.store import Store

    store = tmp_path / "store"
    Store(store).ingest(sorted((SAMPLES / "f1").glob("*.csv")), "games")
    next(store.glob("games/*/*.parquet")).write_bytes(b"damaged")
    args = ["rate", "--store", str(store), "--kind", "games", "-m", "borda", "--workers", "1", "--out", str(tmp_path / "out")]
    quiet = subprocess.run([*command, *args], env=env, capture_output=True, text=True)
    assert quiet.returncode == 1 and "a file of the store cannot be read" in quiet.stderr, quiet.stderr
    assert "Compute Failed" not in quiet.stderr and "Traceback" not in quiet.stderr, quiet.stderr
    loud = subprocess.run([*command, "--verbose", *args], env=env, capture_output=True, text=True)
    assert loud.returncode == 1 and "Compute Failed" in loud.stderr, loud.stderr


def test_a_quiet_worker_drops_only_the_noise_of_failed_and_cancelled_tasks():
    import logging

    from pipeline.runtime import TASK_FAILURE_NOISE, DroppedMessages

    def kept(message: str) -> bool:
        return DroppedMessages(*TASK_FAILURE_NOISE).filter(logging.LogRecord("distributed.worker", logging.WARNING, "", 0, message, None, None))

    assert not kept("Compute Failed\nKey:       reduce_batch-1\n")
    # A backtest whose method failed on one split closed its cluster while other splits ran.
    assert not kept("Async instruction for <Task cancelled name=\"execute('evaluate_split-1')\"> ended with CancelledError")
    assert kept("Async instruction for <Task finished> ended with OSError") and kept("Worker exceeded 95% memory budget")


@pytest.mark.parametrize("verbose", [False, True])
def test_a_worker_killed_for_exiting_slowly_after_its_work_is_reported_only_when_verbose(monkeypatch, verbose):
    import atexit
    import logging
    import time

    from pipeline.runtime import DASK_LOG_ENV

    monkeypatch.setenv(DASK_LOG_ENV, "info" if verbose else "warning")
    seen = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    nanny_log = logging.getLogger("distributed.nanny")
    nanny_log.addHandler(handler)
    try:
        with local_cluster(1) as cluster:
            from distributed import Client

            with Client(cluster) as client:
                client.run(lambda: atexit.register(time.sleep, 8))  # the worker's interpreter takes 8 s to exit
    finally:
        nanny_log.removeHandler(handler)
    assert any(m.startswith("Worker process still alive") for m in seen) == verbose, seen
    assert not nanny_log.filters


@pytest.mark.parametrize("address, said", [("junk", "missing port number"), ("http://host:1", "unknown address scheme 'http'"),
                                           ("tls://127.0.0.1:1", "takes its certificates from Dask's configuration")])
def test_a_scheduler_that_cannot_be_used_is_one_line_naming_the_address_and_where_it_came_from(tmp_path, monkeypatch, address, said):
    from pipeline.cli import app
    from pipeline.runtime import SchedulerError

    monkeypatch.setenv(SCHEDULER_ENV, address)
    with pytest.raises(SchedulerError, match=f"^cannot use the Dask scheduler '{address}' \\(from \\$VASE_DASK_SCHEDULER\\): .*{said}"):
        with dask_client(None, workers=0):
            pass
    with pytest.raises(SchedulerError, match=f"'{address}' \\(from --scheduler\\)"):
        with dask_client(address, workers=0):
            pass
    result = CliRunner().invoke(app, ["rate", str(SAMPLES / "f1"), "--kind", "games", "-m", "borda", "--out", str(tmp_path / "out")])
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1].startswith(f"error: cannot use the Dask scheduler '{address}'")
    assert "Traceback" not in result.output and "SchedulerError" not in result.output


def test_a_flow_names_its_scheduler_parameter_as_where_the_address_came_from():
    # A flow run's message named --scheduler, which a deployment does not have.
    from pipeline.runtime import SchedulerError

    with pytest.raises(SchedulerError, match="^cannot use the Dask scheduler 'junk' \\(from the flow's scheduler parameter\\)"):
        with dask_client("junk", workers=0, given_by=FLOW_SCHEDULER):
            pass


def test_a_blank_scheduler_variable_counts_as_unset(monkeypatch):
    monkeypatch.setenv(SCHEDULER_ENV, "  ")
    assert scheduler_address(None) is None
