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
# (infra/dask-workers.yaml does the same for external clusters).
WORKER_CONFIG = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}


@contextmanager
def dask_client(scheduler: str | None = None, workers: int = 2) -> Iterator[Client]:
    """A client on `scheduler` (or $VASE_DASK_SCHEDULER); else on a new LocalCluster of `workers` processes."""
    scheduler = scheduler or os.environ.get(SCHEDULER_ENV) or None
    if scheduler:
        with Client(scheduler) as client:
            yield client
        return
    # One thread per worker (the nanny's defaults also pin BLAS to one): the work is already split in tasks.
    with dask.config.set(WORKER_CONFIG), LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=logging.WARNING,
    ) as cluster, Client(cluster) as client:
        yield client
