"""The LocalCluster the flows start: worker processes without the nanny's malloc trim setting."""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.slow


def test_local_workers_keep_glibcs_adaptive_mmap_threshold(monkeypatch):
    from flows.cluster import dask_client

    # What an earlier plain LocalCluster's nanny leaves in this process's environment.
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    with dask_client(None, workers=1) as client:
        seen = client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
    assert list(seen.values()) == [None]
