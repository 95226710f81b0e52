"""The nightly deployment on a real Prefect server (loopback, SQLite), with a process worker.

Starts `prefect server start`, creates the work pool, deploys from infra/prefect.yaml (nightly
with its cron, backtest manual), starts a worker, triggers `nightly` on data-samples and waits for it to complete; then checks the
published outputs and that the cron schedule produced upcoming runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request

import pyarrow.parquet as pq
import pytest
import yaml

from tests.conftest import ROOT, SAMPLES
from tests.infra.processes import BIN, free_port, http_ok, start, stop, wait_until

pytestmark = pytest.mark.slow


def api(url: str, path: str, body: dict) -> list | dict:
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    home = tmp_path_factory.mktemp("prefect-server")
    port = free_port()
    env = os.environ | {"PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
                        "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "5"}
    env.pop("PREFECT_API_URL", None)
    log = home / "server.log"
    process = start([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)], log, env)
    url = f"http://127.0.0.1:{port}/api"
    try:
        wait_until(lambda: http_ok(url + "/health"), 180, "prefect server", log)
        yield url, env | {"PREFECT_API_URL": url}, home
    finally:
        stop(process, timeout=60)


def prefect(env: dict, *args: str) -> str:
    done = subprocess.run([str(BIN / "prefect"), *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def deployed(server):
    url, env, home = server
    env = env | {"VASE_HOME": str(ROOT)}
    prefect(env, "work-pool", "create", "vase-process", "--type", "process")
    prefect(env, "--no-prompt", "deploy", "--all", "--prefect-file", "infra/prefect.yaml")
    worker_log = home / "worker.log"
    worker = start([str(BIN / "prefect"), "worker", "start", "--pool", "vase-process", "--type", "process"], worker_log, env, ROOT)
    try:
        yield url, env, worker_log
    finally:
        stop(worker)


def test_nightly_runs_on_the_server_and_publishes(deployed, tmp_path):
    url, env, worker_log = deployed
    out = tmp_path / "nightly"
    prefect(env, "deployment", "run", "nightly/nightly", "--param", f"out={out}",
            "--watch", "--watch-timeout", "600")
    [run] = api(url, "/flow_runs/filter", {"flow_runs": {"state": {"type": {"any_": ["COMPLETED"]}}}, "limit": 5})
    assert run["state"]["type"] == "COMPLETED", worker_log.read_text()[-3000:]
    boards = [b["name"] for b in yaml.safe_load((SAMPLES / "nightly.yaml").read_text())["boards"]]
    for board in boards:
        table = pq.read_table(out / "latest" / board / "ratings.parquet")
        assert table.num_rows > 0 and {"method", "agent", "rank", "score"} <= set(table.column_names)
    artifacts = api(url, "/artifacts/filter", {"artifacts": {"type": {"any_": ["markdown"]}}})
    assert {a["key"] for a in artifacts} >= {f"{b}-leaderboard" for b in boards}


def test_cron_schedule_produces_upcoming_runs(deployed):
    url, _, _ = deployed
    [deployment] = api(url, "/deployments/filter", {"deployments": {"name": {"any_": ["nightly"]}}})
    assert deployment["schedules"][0]["schedule"]["cron"] == "0 3 * * *"

    def scheduled() -> list:
        return api(url, "/flow_runs/filter", {"flow_runs": {"state": {"type": {"any_": ["SCHEDULED"]}},
                                                            "deployment_id": {"any_": [deployment["id"]]}}, "limit": 10})

    wait_until(lambda: len(scheduled()) >= 3, 120, "three scheduled runs")
    times = sorted(run["expected_start_time"] for run in scheduled())
    assert all(t.endswith("03:00:00Z") or "T03:00:00" in t for t in times), times


def test_backtest_is_deployed_for_manual_runs(deployed):
    url, _, _ = deployed
    [deployment] = api(url, "/deployments/filter", {"deployments": {"name": {"any_": ["backtest"]}}})
    assert deployment["schedules"] == [] and deployment["parameters"]["kind"] == "games"
