"""Background services for the infrastructure tests: started, awaited, and stopped in order."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(args: list[str], log: Path, env: dict[str, str], cwd: Path | None = None) -> subprocess.Popen:
    handle = log.open("w")
    return subprocess.Popen(args, stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True)


def stop(*processes: subprocess.Popen, sig: int = signal.SIGINT, timeout: float = 30) -> None:
    """SIGINT to all at once (a Prefect worker ignores SIGTERM while its server is gone), then kill
    those still running after `timeout`."""
    running = [process for process in processes if process.poll() is None]
    for process in running:
        os.killpg(process.pid, sig)
    deadline = time.monotonic() + timeout
    for process in running:
        try:
            process.wait(max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def wait_until(check, timeout: float, what: str, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    tail = log.read_text()[-3000:] if log and log.exists() else ""
    raise TimeoutError(f"{what} not ready after {timeout} s\n{tail}")


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def listening_addresses(pid: int) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket listening in process `pid` and its descendants."""
    import psutil

    parent = psutil.Process(pid)
    found = set()
    for process in [parent, *parent.children(recursive=True)]:
        try:
            connections = process.net_connections(kind="inet")
        except psutil.NoSuchProcess:
            continue
        found |= {(c.laddr.ip, c.laddr.port) for c in connections if c.status == psutil.CONN_LISTEN}
    return found


LOOPBACK = {"127.0.0.1", "::1"}


def git(*args: str, **options) -> str:
    """A git command of the tests (a fixed identity, no signing), its output; it must succeed."""
    identity = {"GIT_AUTHOR_NAME": "vase tests", "GIT_AUTHOR_EMAIL": "tests@vase.invalid",
                "GIT_COMMITTER_NAME": "vase tests", "GIT_COMMITTER_EMAIL": "tests@vase.invalid"}
    options["env"] = os.environ | identity | options.get("env", {})
    done = subprocess.run(["git", "-c", "commit.gpgsign=false", *args], capture_output=True, text=True, timeout=120, **options)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
