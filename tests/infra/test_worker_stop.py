"""A Dask worker of the deployment stops within seconds of SIGTERM, mid-task (issue 34, infra): what
Docker (`docker compose stop`, 10 s before SIGKILL) and Kubernetes (a pod's deletion, 30 s) send to
the container's first process. The worker runs as the deployment runs it: the command line of
infra/compose.yaml or infra/k8s/daskcluster.yaml through the image's entrypoint (infra/entrypoint.sh),
against a scheduler on loopback, with a task that would run for minutes.

distributed's nanny asks its worker process to close, waits 8 s (its close timeout of 10 s, times
0.8) for the task's thread, which cannot be interrupted, then kills it. Without the nanny
(`--no-nanny`) the process waits for the task to end; without the entrypoint's `exec`, SIGTERM ends
the shell and leaves the worker running."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import psutil
import pytest
import yaml
from distributed import Client

from tests.conftest import ROOT
from tests.infra.dask_cluster import dask_processes
from tests.infra.processes import BIN, start

INFRA = ROOT / "infra"
BOUND = 20.0  # seconds from SIGTERM to no process left: the nanny's 8 s, and room for a loaded machine
TASK_SECONDS = 300  # the task the worker is in when it is stopped: past the bound, so waiting for it fails


def compose_command() -> list[str]:
    return yaml.safe_load((INFRA / "compose.yaml").read_text())["services"]["dask-worker"]["command"]


def kubernetes_command() -> list[str]:
    [cluster] = [d for d in yaml.safe_load_all((INFRA / "k8s" / "daskcluster.yaml").read_text()) if d["kind"] == "DaskCluster"]
    [container] = [c for c in cluster["spec"]["worker"]["spec"]["containers"] if c["name"] == "worker"]
    return container["args"]


def on_loopback(command: list[str], address: str, scratch: Path) -> list[str]:
    """The deployment's worker command against `address`, everything it would bind or write moved to loopback
    and `scratch`: the scheduler's address (compose names it; the Kubernetes operator sets
    DASK_SCHEDULER_ADDRESS), the dashboard's port, the local directory, the pod's name."""
    moved = {"tls://dask-scheduler:8786": address, "8788": "127.0.0.1:0", "/scratch": str(scratch),
             "$(DASK_WORKER_NAME)": "w0"}
    command = [moved.get(word, word) for word in command]
    if address not in command:
        command.insert(2, address)
    return command + ["--host", "127.0.0.1"]


def running(processes: list[psutil.Process]) -> list[psutil.Process]:
    return [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.slow
@pytest.mark.parametrize("deployment", [compose_command, kubernetes_command], ids=["compose", "kubernetes"])
def test_a_deployed_worker_in_a_task_stops_within_seconds_of_sigterm(tmp_path, deployment):
    env = os.environ | {"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    with dask_processes(tmp_path, env, workers=0) as (address, _):
        command = on_loopback(deployment(), address, tmp_path / "scratch")
        assert command[:2] == ["dask", "worker"] and "--no-nanny" not in command
        entry = start(["sh", str(INFRA / "entrypoint.sh"), *command], tmp_path / "deployed.log", env)
        try:
            with Client(address) as client:
                client.wait_for_workers(1, timeout=120)
                task = client.submit(time.sleep, TASK_SECONDS, pure=False)
                deadline = time.monotonic() + 60
                while not any(client.processing().values()):
                    assert time.monotonic() < deadline, "the task never started"
                    time.sleep(0.2)
                processes = [psutil.Process(entry.pid), *psutil.Process(entry.pid).children(recursive=True)]
                os.kill(entry.pid, signal.SIGTERM)  # the container's first process only, as Docker and the kubelet send it
                signalled = time.monotonic()
                while running(processes) and time.monotonic() < signalled + BOUND:
                    time.sleep(0.1)
                left = [p.cmdline() for p in running(processes)]
                took = time.monotonic() - signalled
                task.cancel()
        finally:
            with contextlib.suppress(ProcessLookupError):  # the session's every process, the shell's orphans too
                os.killpg(entry.pid, signal.SIGKILL)
            entry.wait()
    log = (tmp_path / "deployed.log").read_text()
    assert not left, f"still running {BOUND:.0f} s after SIGTERM: {left}\n{log[-2000:]}"
    assert "Received signal SIGTERM" in log, log[-2000:]
    assert took < BOUND
