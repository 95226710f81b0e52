"""Where vase computes: one policy for the command line and the flows.

`dask_client(scheduler, workers)` gives the Dask client that reductions, backtests and the
methods that fan out (bootstrap rounds, shuffled orders) are handed explicitly:
1. an explicit scheduler address (`--scheduler`, a flow's `scheduler` parameter);
2. else the address in `$VASE_DASK_SCHEDULER` (blank counts as unset);
3. else, with `workers` > 0, a LocalCluster of that many single-threaded worker processes;
4. else (`workers=0`) no cluster: the client is None and the caller computes on local threads.
An address that cannot be used raises `SchedulerError`: one line naming it and its origin.

A LocalCluster listens on loopback only: scheduler, workers, nannies and every dashboard on
127.0.0.1 (Dask's ":0" would bind the dashboards on all interfaces). It speaks TLS with mutual
authentication under credentials made for it alone (`distributed.Security.temporary()`: a key and
certificate in this process's memory, handed to its workers as they spawn): loopback is shared by
every user and process of the machine, and whoever reaches a Dask scheduler can make its workers
run any code, so another process, plain `tcp://` or TLS without that key, is refused (TLS 1.3, as
infra/dask/tls.yaml asks of a team's cluster). Its workers run with one BLAS thread (methods pin
it anyway, see `pipeline.methods.numerics.threads`) and without the nanny's
`MALLOC_TRIM_THRESHOLD_`: setting glibc's trim threshold at all turns off its adaptive mmap
threshold, so every large numpy array becomes a fresh mmap paid in page faults, which made a
Diplomacy-scale backtest 1.3x slower (`infra/dask/workers.yaml` does the same for external
clusters).

Security: a client on a `tls://` address takes its certificates from Dask's configuration
(`distributed.comm.tls.*`, e.g. through `DASK_CONFIG`) unless a `distributed.Security` is given;
nothing here forces plain TCP.

Logs: `quiet_logs` keeps Dask and Prefect at WARNING (the command line's default; `--verbose`
brings their INFO lines back). Both read the level when they are imported, and Dask's worker
processes inherit it through the environment, so it is set there as well as on the loggers. While
a LocalCluster closes after its work, the nanny's warning that it killed a worker slow to exit (4 s,
on a loaded machine: the interpreter's teardown) is dropped unless the logs are verbose: the work
was done and collected, and the line looked like a failure at the end of a good run. So are a
LocalCluster worker's "Compute Failed" block (the task, its exception and traceback, printed by the
worker process on the terminal: the exception reaches the caller, which reports it in one line,
`--debug` showing its traceback) and its warning that a task was cancelled as the cluster closed
after that failure. The workers load this module as their Dask preload to drop them.

Stopped (SIGTERM, `pipeline.cancellation`): a LocalCluster's workers are killed before it closes, so it
closes in a fraction of a second instead of its nannies waiting 4 s for each worker (5.1 s against
0.7 s for `vase rate --workers 2` at load 26), whatever task a worker was in.
"""

from __future__ import annotations

import logging
import os
import signal
import ssl
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from pipeline.cancellation import STOP

SCHEDULER_ENV = "VASE_DASK_SCHEDULER"
LOOPBACK = "127.0.0.1"
TRIM = "MALLOC_TRIM_THRESHOLD_"
WORKER_ENVIRONMENT = {TRIM: None, "OMP_NUM_THREADS": 1, "OPENBLAS_NUM_THREADS": 1, "MKL_NUM_THREADS": 1}
DASK_LOG_ENV = "DASK_LOGGING__DISTRIBUTED"
PREFECT_LOG_ENV = "PREFECT_LOGGING_LEVEL"


def quiet_logs(verbose: bool = False) -> None:
    """Dask and Prefect log warnings and errors only, or (`verbose`) their INFO lines too. Without
    `verbose`, a level already set in the environment is kept."""
    level = "INFO" if verbose else "WARNING"
    for variable, logger, value in ((DASK_LOG_ENV, "distributed", level.lower()), (PREFECT_LOG_ENV, "prefect", level)):
        if verbose:
            os.environ[variable] = value
        else:
            os.environ.setdefault(variable, value)
        logging.getLogger(logger).setLevel(os.environ[variable].upper())  # when it was imported already


def dask_log_level() -> int:
    """The level of a LocalCluster's logs: what `quiet_logs` chose, else WARNING."""
    return logging.INFO if os.environ.get(DASK_LOG_ENV, "").lower() in ("info", "debug") else logging.WARNING


class SchedulerError(RuntimeError):
    """The scheduler named by `--scheduler`, a flow's parameter or $VASE_DASK_SCHEDULER cannot be used: one line
    saying which address, where it came from, and why."""


def scheduler_address(explicit: str | None = None) -> str | None:
    """The scheduler to connect to: `explicit`, else $VASE_DASK_SCHEDULER (blank counts as unset),
    else None (start or skip a cluster)."""
    return explicit or os.environ.get(SCHEDULER_ENV, "").strip() or None


FLOW_SCHEDULER = "the flow's scheduler parameter"  # where a flow's explicit address comes from, for `dask_client`


def connect(address: str, origin: str, security: object = None) -> object:
    """A `distributed.Client` of the scheduler at `address`; an address that is malformed, refuses
    or does not answer, or a tls:// one without certificates, raises `SchedulerError`."""
    from distributed import Client
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import get_backend

    try:
        # a malformed address is refused here, before the Client starts its event loop's thread (whose start
        # alone, under load, can outlast distributed's 10 s wait and fail with a bare AssertionError)
        scheme, location = parse_address(address)
        get_backend(scheme)
        if scheme in ("tcp", "tls", "ws", "wss"):
            parse_host_port(location)
        return Client(address, security=security)
    except (OSError, ValueError, TypeError) as exc:  # TypeError: Dask's complaint of a missing TLS context
        hint = " (a tls:// address takes its certificates from Dask's configuration, distributed.comm.tls.*)" \
            if address.startswith("tls://") and isinstance(exc, TypeError) else ""
        raise SchedulerError(f"cannot use the Dask scheduler {address!r} (from {origin}): {exc}{hint}") from exc


class DroppedMessages(logging.Filter):
    """Drops the records whose message starts with one of `patterns`' beginnings and ends with its ending."""

    def __init__(self, *patterns: tuple[str, str]):
        super().__init__()
        self.patterns = patterns

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        return not any(message.startswith(start) and message.endswith(end) for start, end in self.patterns)


# What a quiet LocalCluster drops (see the module's docstring): the nanny's "Worker process still alive
# after ... seconds, killing" as the cluster closes, and what a worker prints of a task that failed, or
# that was cancelled as the cluster closed.
SLOW_EXIT_KILLS = (("Worker process still alive", ""),)
TASK_FAILURE_NOISE = (("Compute Failed", ""), ("Async instruction for", "ended with CancelledError"))


def dask_setup(worker: object) -> None:
    """Run by each worker of a quiet LocalCluster as it starts (Dask's preload, this module)."""
    for name in ("distributed.worker", "distributed.worker.state_machine"):  # a logger's filters see its own records only
        logging.getLogger(name).addFilter(DroppedMessages(*TASK_FAILURE_NOISE))


@contextmanager
def local_cluster(workers: int = 2) -> Iterator[object]:
    """A LocalCluster of `workers` single-threaded worker processes, listening on loopback only, over TLS with
    credentials of its own (`cluster.security`: a client needs them, `Client(cluster)` takes them)."""
    import dask
    from distributed import LocalCluster
    from distributed.security import Security

    # A nanny writes its variables into this process's environment before spawning, so an earlier
    # cluster's may still be here for our workers to inherit.
    os.environ.pop(TRIM, None)
    settings = {f"distributed.nanny.pre-spawn-environ.{key}": value for key, value in WORKER_ENVIRONMENT.items()}
    if dask_log_level() > logging.INFO:
        settings["distributed.worker.preload"] = [__name__]  # `dask_setup`
    nanny_log, slow_exits = logging.getLogger("distributed.nanny"), DroppedMessages(*SLOW_EXIT_KILLS)
    security = Security.temporary(tls_min_version=ssl.TLSVersion.TLSv1_3)
    try:
        with dask.config.set(settings), LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, host=f"tls://{LOOPBACK}", security=security,
            dashboard_address=f"{LOOPBACK}:0", worker_dashboard_address=f"{LOOPBACK}:0", silence_logs=dask_log_level(),
        ) as cluster:
            try:
                yield cluster
            except BaseException:
                if STOP.is_set():  # SIGTERM: a worker in a task would finish it before closing (minutes in a solver)
                    kill_workers(cluster)
                raise
            if dask_log_level() > logging.INFO:
                nanny_log.addFilter(slow_exits)
    finally:
        nanny_log.removeFilter(slow_exits)


def kill_workers(cluster: object) -> None:
    """SIGKILL the worker processes of a LocalCluster (not its nannies, which then close at once)."""
    for nanny in list(getattr(cluster, "workers", {}).values()):
        with suppress(ProcessLookupError, TypeError):  # TypeError: a worker with no process (pid None)
            os.kill(nanny.pid, signal.SIGKILL)


@contextmanager
def dask_client(scheduler: str | None = None, workers: int = 2, security: object = None,
                given_by: str = "--scheduler") -> Iterator[object | None]:
    """A `distributed.Client` by the policy above, or None (local threads) when there is no scheduler and `workers` is 0;
    `given_by` names where `scheduler` came from, for the error of an address that cannot be used."""
    if workers < 0:
        raise ValueError(f"workers must be at least 0, not {workers}")
    address = scheduler_address(scheduler)
    if address is None and workers == 0:
        yield None
        return
    if address is not None:
        with connect(address, given_by if scheduler else f"${SCHEDULER_ENV}", security) as client:
            yield client
        return
    from distributed import Client

    with local_cluster(workers) as cluster, Client(cluster) as client:
        yield client
