"""The Dask cluster a flow run computes on: an existing scheduler, or a LocalCluster.

Prefect tasks run in the flow process and hand their Dask graphs to this client, so Dask workers
need the `vase-pipeline` package but neither Prefect nor an API server.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager

import dask
from distributed import Client, LocalCluster

SCHEDULER_ENV = "VASE_DASK_SCHEDULER"
# The nanny starts workers with MALLOC_TRIM_THRESHOLD_ set, and setting glibc's trim threshold at
# all turns off its adaptive mmap threshold: every large numpy array is then a fresh mmap, paid in
# page faults. That made a Diplomacy-scale backtest 1.3x slower; leave the variable unset
# (infra/dask/workers.yaml does the same for external clusters).
TRIM = "MALLOC_TRIM_THRESHOLD_"
WORKER_CONFIG = {f"distributed.nanny.pre-spawn-environ.{TRIM}": None}


@contextmanager
def local_cluster(workers: int = 2) -> Iterator[LocalCluster]:
    """A LocalCluster of single-threaded worker processes (the nanny's defaults pin BLAS to one thread)."""
    # A nanny writes its variables into this process's environment before spawning, so an earlier
    # cluster's may still be here for our workers to inherit.
    os.environ.pop(TRIM, None)
    with dask.config.set(WORKER_CONFIG), LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=logging.WARNING,
    ) as cluster:
        yield cluster


@contextmanager
def dask_client(scheduler: str | None = None, workers: int = 2) -> Iterator[Client]:
    """A client on `scheduler` (or $VASE_DASK_SCHEDULER); else on a new LocalCluster of `workers` processes."""
    scheduler = scheduler or os.environ.get(SCHEDULER_ENV) or None
    if scheduler:
        with Client(scheduler) as client:
            yield client
        return
    with local_cluster(workers) as cluster, Client(cluster) as client:
        yield client
