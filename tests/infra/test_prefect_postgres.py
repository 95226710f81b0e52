"""What a team deploys, for real on loopback: PostgreSQL (started by infra/postgres.py), a Prefect
server on it with basic authentication, the deployments of infra/prefect.yaml and
infra/prefect-git.yaml, and a process worker whose flow runs compute on the TLS Dask cluster of
tests/infra/conftest.py, as a team's do. The nightly runs through the worker and publishes;
the cron schedule produces upcoming runs; requests without the right credentials are refused; the
git variant clones the code under test from a local bare repository and runs it."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from infra.postgres import Cluster, binaries
from tests.conftest import ROOT, SAMPLES
from tests.infra.prefect_server import check_cron_schedule, deployed_with_worker, prefect_server, request
from tests.infra.processes import LOOPBACK, git, listening_addresses

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def postgres():
    # Not under pytest's private temporary folder: run as root, PostgreSQL runs as another user who must reach it.
    root = Path(tempfile.mkdtemp(prefix="vase-postgres-"))
    cluster = Cluster(root)
    try:
        yield cluster, cluster.start()
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def git_repository(tmp_path_factory):
    """A bare repository holding one commit: the working tree under test (what .gitignore keeps out stays out)."""
    folder = tmp_path_factory.mktemp("git")
    bare = folder / "vase.git"
    git("init", "--quiet", "--bare", "--initial-branch", "main", str(bare))
    snapshot = {"GIT_DIR": str(folder / "snapshot.git"), "GIT_WORK_TREE": str(ROOT)}
    git("init", "--quiet", "--initial-branch", "main", env=snapshot)
    git("add", "--all", env=snapshot, cwd=ROOT)
    git("commit", "--quiet", "-m", "the working tree under test", env=snapshot, cwd=ROOT)
    git("push", "--quiet", str(bare), "HEAD:main", env=snapshot, cwd=ROOT)
    return f"file://{bare}", git("rev-parse", "HEAD", env=snapshot, cwd=ROOT)


@pytest.fixture(scope="module")
def server(tmp_path_factory, postgres):
    _, settings = postgres
    auth = f"vase:{secrets.token_urlsafe(16)}"
    with prefect_server(tmp_path_factory.mktemp("prefect-postgres"), settings, auth) as server:
        yield server


@pytest.fixture(scope="module")
def worker(server, git_repository, dask_tls):
    url, commit = git_repository
    env = {"VASE_HOME": str(ROOT), "VASE_GIT_REPOSITORY": url, "VASE_GIT_COMMIT": commit, "DASK_CONFIG": dask_tls.env["DASK_CONFIG"],
           "VASE_DASK_SCHEDULER": dask_tls.address}
    with deployed_with_worker(server, ["infra/prefect.yaml", "infra/prefect-git.yaml"], env) as log:
        yield log


@pytest.mark.parametrize("credentials", [None, "vase:wrong", "intruder:", ""])
def test_requests_without_the_right_credentials_are_refused(server, credentials):
    for path, body in [("/flows/filter", {}), ("/deployments/filter", {}), ("/admin/settings", None), ("/admin/version", None)]:
        status, _ = request(server.url + path, body, credentials)
        assert status == 401, (path, credentials, status)
        assert request(server.url + path, body, server.auth)[0] == 200
    assert request(server.url + "/health", None, credentials)[0] == 200  # open for health checks; it tells nothing


def test_the_server_keeps_its_state_in_postgres(server, postgres, worker):
    cluster, settings = postgres
    assert not (server.home / "prefect.db").exists()

    def psql(user: str, password: str | None) -> subprocess.CompletedProcess:
        env = {"PATH": os.environ["PATH"]} | ({"PGPASSWORD": password} if password else {})
        return subprocess.run([str(binaries() / "psql"), "-h", "127.0.0.1", "-p", str(cluster.port), "-U", user, "-d", "prefect",
                               "-w", "-tAc", "SELECT name FROM deployment ORDER BY name"], env=env, capture_output=True, text=True)

    done = psql("prefect", settings["PREFECT_SERVER_DATABASE_PASSWORD"])
    assert done.returncode == 0 and done.stdout.split() == ["backtest", "nightly", "nightly-git"], done.stderr
    assert psql("prefect", "wrong").returncode != 0
    assert psql(cluster.owner.pw_name, None).returncode != 0  # the superuser has no password: no TCP login


def test_postgres_and_the_server_listen_on_loopback_only(server, postgres):
    cluster, _ = postgres
    postmaster = int((cluster.data / "postmaster.pid").read_text().split()[0])
    for pid in (postmaster, server.pid):
        addresses = listening_addresses(pid)
        assert addresses and {host for host, _ in addresses} <= LOOPBACK, addresses


@pytest.fixture(scope="module")
def runs(server, worker, dask_tls, tmp_path_factory):
    """Both nightly deployments run at once through the worker, on the TLS Dask cluster: the local
    checkout's with its own parameters but `out`, the git variant's on one board."""
    before = dask_tls.transitions()
    folder = tmp_path_factory.mktemp("runs")
    config = folder / "boards.yaml"
    config.write_text(yaml.safe_dump({"boards": [{"name": "f1", "kind": "games", "sources": [str(SAMPLES / "f1")],
                                                  "methods": ["borda", "copeland"]}]}))
    nightly = server.create_run("nightly/nightly", {"out": str(folder / "nightly")})
    from_git = server.create_run("nightly/nightly-git", {"config": str(config), "out": str(folder / "git")})
    server.wait([nightly, from_git])
    for run in (nightly, from_git):
        assert run["state"]["type"] == "COMPLETED", server.logs(run) + worker.read_text()[-3000:]
    assert dask_tls.transitions() > before  # the runs computed on the cluster named by VASE_DASK_SCHEDULER
    return {"nightly": (nightly, folder / "nightly"), "git": (from_git, folder / "git")}


def test_nightly_runs_through_the_worker_and_publishes(server, runs):
    _, out = runs["nightly"]
    boards = [b["name"] for b in yaml.safe_load((SAMPLES / "nightly.yaml").read_text())["boards"]]
    for board in boards:
        table = pq.read_table(out / "latest" / board / "ratings.parquet")
        assert table.num_rows > 0 and {"method", "agent", "rank", "score"} <= set(table.column_names)
    artifacts = server.api("/artifacts/filter", {"artifacts": {"type": {"any_": ["markdown"]}}})
    assert {a["key"] for a in artifacts} >= {f"{b}-leaderboard" for b in boards}


def test_cron_schedule_produces_upcoming_runs(server, worker):
    check_cron_schedule(server)


def test_git_variant_clones_the_code_and_runs_it(server, worker, runs, git_repository):
    _, commit = git_repository
    run, out = runs["git"]
    # The pull step's lines, from the server's logs or, where those were not shipped before the run's process ended
    # (seen under the whole suite's load), from the run's output as the worker streamed it.
    assert "git_clone" in server.logs(run, containing="git_clone", timeout=20) + worker.read_text(), worker.read_text()[-3000:]
    version = json.loads((out / "latest" / "f1" / "run.json").read_text())["version"]
    assert commit.startswith(version.split("+")[1]), (version, commit)  # the cloned commit's code ran, not the checkout's
    assert pq.read_table(out / "latest" / "f1" / "ratings.parquet").num_rows > 0
