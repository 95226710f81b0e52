"""Shared fixtures: small profiles with known answers, stores, a real Dask cluster."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

# Prefect in local mode, offline, with its state out of the home folder.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")

from pipeline.stats.memory import profile  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "data-samples"
PENTATHLON = ["A>B>C", "A>C>B", "C>A>B", "C>A>B", "B>C>A"]  # [VasE] figure 1 / appendix C


@pytest.fixture(scope="session", autouse=True)
def _prefect_home(tmp_path_factory):
    os.environ.setdefault("PREFECT_HOME", str(tmp_path_factory.mktemp("prefect-home")))


@pytest.fixture
def pentathlon():
    """A, B, C over five events: C is the Condorcet winner; Borda and plurality tie A and C."""
    return profile(PENTATHLON)


@pytest.fixture
def condorcet_cycle():
    """Rock-paper-scissors: each agent beats the next by 2 votes to 1."""
    return profile(["a>b>c", "b>c>a", "c>a>b"])


@pytest.fixture
def biased_shapley():
    """[DevR] table 2a: the biased Shapley game (symmetric) with the augmented Nash strategy N.

    The 3x3 game has the single mixed Nash equilibrium N = (87, 100, 54)/241, against which R, P and
    S each get -680/241; N's row is that mixture of the R, P, S rows.
    """
    from pipeline.games import Game

    n = [-680 / 241, -712 / 241, -920 / 241, -184 / 241]
    g = np.array([[-8, -2, 4, n[0]], [2, -8, -1, n[0]], [-4, 1, -8, n[0]], [n[1], n[2], n[3], n[0]]])
    return Game((g, g.T.copy()), ("row", "col"), (("R", "P", "S", "N"),) * 2)


@pytest.fixture(scope="session")
def dask_cluster():
    """One real LocalCluster per test process, as the flows start it: two single-threaded workers."""
    from pipeline.runtime import local_cluster

    with local_cluster(2) as cluster:
        yield cluster


@pytest.fixture
def dask_client(dask_cluster):
    from distributed import Client

    with Client(dask_cluster) as client:
        yield client


@pytest.fixture
def log_stats(tmp_path):
    """Factory: statistics of log rows (dicts) of one kind, through a real store and reduction."""
    import polars as pl

    from pipeline.stats import reduce_store
    from pipeline.store import Store

    def make(rows: list[dict], want: set[str], kind: str = "battles", files: int = 1, **options):
        store = Store(tmp_path / f"store-{len(list(tmp_path.iterdir()))}")
        paths = []
        for part in range(files):
            path = tmp_path / f"{kind}-{len(list(tmp_path.iterdir()))}-{part}.csv"
            pl.DataFrame(rows[part::files]).write_csv(path)
            paths.append(path)
        store.ingest(paths, kind)
        return reduce_store(store, kind, want, **options), store

    return make
