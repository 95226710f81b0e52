"""What TLS adds to a `--workers` LocalCluster's start: plain TCP against TLS, timed in the same run.

Run as `python -m benchmarks.bench_cluster_start [--workers N] [--repeat N]`. Each run starts a
LocalCluster of N single-threaded worker processes on 127.0.0.1 and computes one task on it:
the part of `vase rate --workers N`'s start that the cluster costs (closing is not timed). The two kinds alternate,
plain TCP (vase's cluster before its temporary credentials) and TLS under
`Security.temporary()` (which `pipeline.runtime.local_cluster` uses), with otherwise the same
arguments; the best of N of each is kept, the least disturbed by other load, and the ratio TLS /
plain printed. The time to make the credentials (an RSA key) is timed on its own. JSON is written
to benchmarks/results/cluster_start.json.
"""

from __future__ import annotations

import argparse
import os
import ssl
import time

from benchmarks.common import best_of, machine, save
from pipeline.runtime import LOOPBACK


def start_and_compute(workers: int, tls: bool) -> float:
    """Seconds from nothing to a first task's result (closing, the same for both kinds and slowed by the
    nanny's wait for exiting workers, is left out)."""
    from distributed import Client, LocalCluster
    from distributed.security import Security

    start = time.perf_counter()
    security = Security.temporary(tls_min_version=ssl.TLSVersion.TLSv1_3) if tls else None
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host=f"tls://{LOOPBACK}" if tls else LOOPBACK,
                      security=security, dashboard_address=f"{LOOPBACK}:0", worker_dashboard_address=f"{LOOPBACK}:0") as cluster, \
            Client(cluster) as client:
        assert client.submit(sum, [1, 2]).result() == 3
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from distributed.security import Security

    credentials, _ = best_of(Security.temporary, args.repeat)
    runs: dict[str, list[float]] = {"plain": [], "tls": []}
    for _ in range(args.repeat):  # alternated, so a burst of load hits both kinds alike
        for kind, seconds in runs.items():
            seconds.append(start_and_compute(args.workers, kind == "tls"))
    times = {kind: min(seconds) for kind, seconds in runs.items()}
    ratio = times["tls"] / times["plain"]
    print(f"LocalCluster of {args.workers} workers, start + one task (best of {args.repeat}), load {os.getloadavg()[0]:.1f}")
    print(f"plain tcp {times['plain']:.2f} s   tls {times['tls']:.2f} s   ratio {ratio:.2f}   (credentials alone {credentials * 1000:.0f} ms)")
    path = save("cluster_start", {"workers": args.workers, "repeat": args.repeat, "seconds": times, "ratio_tls_to_plain": ratio,
                                  "credentials_seconds": credentials, "machine": machine()})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
