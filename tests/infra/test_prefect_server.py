"""The zero-set-up path of the README (`make server`, `make deploy`): a Prefect server on
loopback with SQLite, the process work pool and the deployments of infra/prefect.yaml, the cron
schedule turned into upcoming runs. The nightly itself runs through a worker in
test_prefect_postgres.py, against the Postgres-backed, authenticated server a team deploys."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from tests.infra.prefect_server import POOL, check_cron_schedule, prefect_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with prefect_server(tmp_path_factory.mktemp("prefect-sqlite")) as server:
        server.env |= {"VASE_HOME": str(ROOT)}
        server.prefect("work-pool", "create", POOL, "--type", "process")
        server.prefect("--no-prompt", "deploy", "--all", "--prefect-file", "infra/prefect.yaml")
        yield server


def test_the_server_keeps_its_state_in_sqlite_under_prefect_home(server):
    assert (server.home / "prefect.db").stat().st_size > 0


def test_cron_schedule_produces_upcoming_runs(server):
    check_cron_schedule(server)


def test_backtest_is_deployed_for_manual_runs(server):
    [deployment] = server.api("/deployments/filter", {"deployments": {"name": {"any_": ["backtest"]}}})
    assert deployment["schedules"] == [] and deployment["parameters"]["kind"] == "games"
    assert deployment["work_pool_name"] == POOL and deployment["pull_steps"][0]["prefect.deployments.steps.set_working_directory"]
