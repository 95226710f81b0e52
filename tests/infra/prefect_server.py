"""A Prefect server on loopback for the infrastructure tests, its process worker, and the CLI
calls and API requests the tests make (with basic authentication when the server has it)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT
from tests.infra.processes import BIN, free_port, start, stop, wait_until

POOL = "vase-process"


def request(url: str, body: dict | None = None, auth: str | None = None, timeout: float = 30) -> tuple[int, object]:
    """(status, decoded JSON) of a GET, or of a POST when `body` is given; HTTP errors are returned, not raised."""
    headers = {"content-type": "application/json"}
    if auth is not None:
        headers["authorization"] = "Basic " + base64.b64encode(auth.encode()).decode()
    data = json.dumps(body).encode() if body is not None else None
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def healthy(url: str, auth: str | None) -> bool:
    try:
        return request(url + "/health", auth=auth, timeout=2)[0] == 200
    except OSError:
        return False


@dataclass
class Server:
    url: str                # .../api
    env: dict[str, str]     # a client's environment: PREFECT_API_URL and, with authentication, PREFECT_API_AUTH_STRING
    home: Path
    pid: int
    auth: str | None = None

    def api(self, path: str, body: dict | None = None):
        status, value = request(self.url + path, body, self.auth)
        assert status in (200, 201), f"{path}: {status} {value}"
        return value

    def prefect(self, *args: str) -> str:
        done = subprocess.run([str(BIN / "prefect"), *args], env=self.env, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def create_run(self, name: str, parameters: dict) -> dict:
        """A new flow run of deployment `flow/name` with `parameters` (a worker picks it up)."""
        flow, _, deployment = name.partition("/")
        [found] = self.api("/deployments/filter", {"deployments": {"name": {"any_": [deployment]}},
                                                   "flows": {"name": {"any_": [flow]}}})
        return self.api(f"/deployments/{found['id']}/create_flow_run", {"parameters": parameters})

    def wait(self, runs: list[dict], timeout: float = 600) -> list[dict]:
        """`runs` once each is in a final state."""

        def final() -> bool:
            for run in runs:
                run.update(self.api(f"/flow_runs/{run['id']}"))
            return all(run["state"]["type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED") for run in runs)

        wait_until(final, timeout, "flow runs")
        return runs

    def logs(self, flow_run: dict, containing: str = "", timeout: float = 60.0) -> str:
        """The run's log messages, joined; given `containing`, polled until one holds it or `timeout` s pass
        (a run's logs reach the server in batches, and may land after its state is final)."""
        deadline = time.monotonic() + timeout
        while True:
            records = self.api("/logs/filter", {"logs": {"flow_run_id": {"any_": [flow_run["id"]]}}, "limit": 200})
            text = "\n".join(r["message"] for r in records)
            if containing in text or time.monotonic() > deadline:
                return text
            time.sleep(1.0)


@contextmanager
def prefect_server(home: Path, settings: dict[str, str] | None = None, auth: str | None = None) -> Iterator[Server]:
    """`prefect server start` on 127.0.0.1 (SQLite in `home` unless `settings` name a database)."""
    port = free_port()
    env = os.environ | {"PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
                        "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "5"} | (settings or {})
    for inherited in ("PREFECT_API_URL", "PREFECT_API_AUTH_STRING", "PREFECT_SERVER_API_AUTH_STRING"):
        env.pop(inherited, None)
    server_env = env | ({"PREFECT_SERVER_API_AUTH_STRING": auth} if auth else {})
    client_env = {k: v for k, v in env.items() if not k.startswith("PREFECT_SERVER_DATABASE_")}
    url = f"http://127.0.0.1:{port}/api"
    client_env |= {"PREFECT_API_URL": url} | ({"PREFECT_API_AUTH_STRING": auth} if auth else {})
    log = home / "server.log"
    process = start([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)], log, server_env)
    try:
        wait_until(lambda: process.poll() is not None or healthy(url, auth), 180, "prefect server", log)
        assert process.poll() is None, log.read_text()[-3000:]
        yield Server(url, client_env, home, process.pid, auth)
    finally:
        stop(process, timeout=60)


@contextmanager
def deployed_with_worker(server: Server, prefect_files: list[str], env: dict[str, str]) -> Iterator[Path]:
    """The work pool, the deployments of `prefect_files` (paths from the checkout root), and a process worker with `env`."""
    server.prefect("work-pool", "create", POOL, "--type", "process")
    for prefect_file in prefect_files:
        server.prefect("--no-prompt", "deploy", "--all", "--prefect-file", prefect_file)
    log = server.home / "worker.log"
    env = server.env | {"PREFECT_WORKER_QUERY_SECONDS": "2"} | env
    worker = start([str(BIN / "prefect"), "worker", "start", "--pool", POOL, "--type", "process"], log, env, ROOT)
    try:
        yield log
    finally:
        stop(worker)


def scheduled_runs(server: Server, deployment: str) -> list[dict]:
    [found] = server.api("/deployments/filter", {"deployments": {"name": {"any_": [deployment]}}})
    return server.api("/flow_runs/filter", {"flow_runs": {"state": {"type": {"any_": ["SCHEDULED"]}},
                                                          "deployment_id": {"any_": [found["id"]]}}, "limit": 10})


def check_cron_schedule(server: Server, deployment: str = "nightly") -> None:
    """The nightly's cron is stored, and the scheduler has turned it into upcoming runs at 03:00 UTC."""
    [found] = server.api("/deployments/filter", {"deployments": {"name": {"any_": [deployment]}}})
    assert found["schedules"][0]["schedule"]["cron"] == "0 3 * * *"
    wait_until(lambda: len(scheduled_runs(server, deployment)) >= 3, 120, "three scheduled runs")
    times = sorted(run["expected_start_time"] for run in scheduled_runs(server, deployment))
    assert all("T03:00:00" in t for t in times), times
