"""Services shared by the infrastructure tests: one TLS Dask cluster per test process, used by
the TLS tests and by the nightly that the Prefect worker runs against PostgreSQL."""

from __future__ import annotations

import pytest

from tests.infra.dask_cluster import tls_cluster


@pytest.fixture(scope="session")
def dask_tls(tmp_path_factory):
    with tls_cluster(tmp_path_factory.mktemp("dask-tls")) as cluster:
        yield cluster
