"""`python -m infra.postgres DIR -- COMMAND` as a user runs it: as root, and stopped by SIGTERM."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest

from tests.conftest import ROOT
from tests.infra.prefect_server import healthy
from tests.infra.processes import BIN, free_port, wait_until


def wrapper(cluster: Path, home: Path, *command: str) -> subprocess.Popen:
    """The wrapper of the cluster in `cluster` running `command`, its output in `home`/wrapper.log."""
    env = os.environ | {"PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}
    for inherited in ("PREFECT_API_URL", "PREFECT_API_AUTH_STRING", "PREFECT_SERVER_API_AUTH_STRING"):
        env.pop(inherited, None)
    return subprocess.Popen([sys.executable, "-m", "infra.postgres", str(cluster), "--", *command], cwd=ROOT, env=env,
                            stdout=(home / "wrapper.log").open("w"), stderr=subprocess.STDOUT)


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="only root hands the cluster to another user")
def test_as_root_a_folder_postgres_cannot_reach_is_refused_in_one_line_before_starting(tmp_path):
    # The README's `python -m infra.postgres ~/.vase-db` as root: initdb, run as `postgres`,
    # failed on root's home with a 16-line traceback.
    private = tmp_path / "home"
    private.mkdir(mode=0o700)
    done = subprocess.run([sys.executable, "-m", "infra.postgres", str(private / "db"), "--", "true"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("error: PostgreSQL runs as ") and str(private) in line
    assert not (private / "db").exists()


@pytest.mark.slow
def test_sigterm_stops_the_prefect_server_and_postgresql(tmp_path):
    # SIGTERM to the wrapper ended it alone: the Prefect server kept its port, PostgreSQL kept running.
    folder = Path(tempfile.mkdtemp(prefix="vase-postgres-"))  # run as root, PostgreSQL's user must reach it: not under tmp_path
    port, log = free_port(), tmp_path / "wrapper.log"
    process = wrapper(folder, tmp_path, str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port))
    started: list[psutil.Process] = []
    try:
        url = f"http://127.0.0.1:{port}/api"
        wait_until(lambda: process.poll() is not None or healthy(url, None), 240, "prefect server on postgres", log)
        assert process.poll() is None, log.read_text()[-3000:]
        pid, _, _, pg_port, *_ = (folder / "data" / "postmaster.pid").read_text().split("\n")
        postmaster = psutil.Process(int(pid))
        started += [postmaster, *postmaster.children(recursive=True), *psutil.Process(process.pid).children(recursive=True)]
        pg_port = int(pg_port)
        assert listening(port) and listening(pg_port)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 128 + signal.SIGTERM
        _, alive = psutil.wait_procs(started, timeout=10)
        assert not alive, [p.cmdline() for p in alive]
        assert not listening(port) and not listening(pg_port)
    finally:
        for started_process in [psutil.Process(process.pid), *started] if process.poll() is None else started:
            with contextlib.suppress(psutil.NoSuchProcess):
                started_process.kill()
        shutil.rmtree(folder, ignore_errors=True)
