"""Benchmark: battles end to end at scale (issue target: 1e8 battles, ingest + reduce + online Elo
and m-Elo with 1000 bootstrap rounds on 2 workers, every process's peak RSS under 6 GB).

One Parquet file of `--rows` battles is written in chunks of `--chunk` rows (fixed seed: two of
`--models` models, a winner, a timestamp over a year, a unique battle id), so that no stage but
the pipeline's holds the whole log. Then, each in a fresh process of its own:
- ingest into a fresh store (`Store.ingest`, as `vase ingest` runs it): wall seconds and peak RSS;
- rating with `--method` (default `elo` and `m-elo`, whose default is 1000 bootstrap rounds) on a
  LocalCluster of `--workers` worker processes, as `vase rate --workers 2` runs it: the reduction
  (`reduce_store`) and each method timed; the peak RSS of every process: the client (which also
  runs the scheduler and the nannies of a LocalCluster) and each worker, and the peak of their sum
  (sampled every 50 ms).
The ratings are checked against the same rating on local threads (`--workers 0`), bit for bit, up
to `--check-rows` rows (the whole log is rated twice). The baseline for ingest is its physical
anchor streamed as ingest streams: pyarrow reading the file a row group at a time and writing it
back as Parquet (`bench_ingest` has the whole-table anchor, which does not fit at 1e8).

    python -m benchmarks.bench_scale [--rows 1000000] [--workers 2] [--folder DIR]
    python -m benchmarks.bench_scale --rows 100000000 --folder /big/disk   # the issue's size: ~5 GB summed over the processes

Writes benchmarks/results/scale-<rows>.json; the generated file and the store are deleted at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import shutil
import tempfile
import threading
import time
import traceback
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.bench_ingest import ingest, measure
from benchmarks.common import save

SEED, YEAR_SECONDS = 20250302, 365 * 24 * 3600
GENERATED_ROW_GROUP = 1_000_000


def write_battles(path: Path, rows: int, models: int, chunk: int) -> None:
    """`rows` battles written `chunk` rows at a time (each chunk from its own seeded generator)."""
    names = np.array([f"model-{i:04d}" for i in range(models)])
    start = np.datetime64("2024-01-01T00:00:00", "s").astype(np.int64)
    schema = pa.schema([("battle_id", pa.string()), ("model_a", pa.string()), ("model_b", pa.string()),
                        ("winner", pa.string()), ("timestamp", pa.timestamp("s"))])
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        for first in range(0, rows, chunk):
            size = min(chunk, rows - first)
            rng = np.random.default_rng([SEED, first])
            a = rng.integers(0, models, size)
            b = (a + rng.integers(1, models, size)) % models
            writer.write_table(pa.table([
                pa.array(np.char.add("b", np.arange(first, first + size).astype(str))), pa.array(names[a]), pa.array(names[b]),
                pa.array(np.array(["model_a", "model_b", "tie"])[rng.integers(0, 3, size)]),
                pa.array(start + rng.integers(0, YEAR_SECONDS, size), pa.timestamp("s"))], schema=schema),
                row_group_size=GENERATED_ROW_GROUP)


def streamed_copy(source: Path, target: Path) -> int:
    """The anchor: the file read one row group at a time and written back as Parquet."""
    file = pq.ParquetFile(source)
    with pq.ParquetWriter(target, file.schema_arrow, compression="zstd") as writer:
        for group in range(file.num_row_groups):
            writer.write_table(file.read_row_group(group))
    return file.metadata.num_rows


def peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM of its own memory map), in MB."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024


class TreePeak:
    """The peak of the summed RSS of this process and all its descendants, sampled every 50 ms, in
    all and per `stage` (set by the caller), with each process's RSS at that stage's peak."""

    def __init__(self) -> None:
        import psutil

        self.peak, self._done, self._self = 0.0, threading.Event(), psutil.Process()
        self.stage, self.stages = "start", {}  # stage -> (summed MB, {pid: MB}) at the stage's peak
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _processes(self) -> dict[int, float]:
        import psutil

        sizes = {}
        for process in [self._self, *self._self.children(recursive=True)]:
            try:
                sizes[process.pid] = process.memory_info().rss / 2**20
            except psutil.Error:  # a process that ended between listing and reading
                pass
        return sizes

    def _record(self) -> None:
        sizes, stage = self._processes(), self.stage
        total = sum(sizes.values())
        self.peak = max(self.peak, total)
        if total > self.stages.get(stage, (0.0,))[0]:
            self.stages[stage] = (total, sizes)

    def _sample(self) -> None:
        while not self._done.wait(0.05):
            self._record()

    def stop(self) -> float:
        self._done.set()
        self._thread.join()
        self._record()
        return self.peak

    def by_stage(self, roles: dict[int, str]) -> dict[str, dict[str, float]]:
        """Per stage, the summed peak and each process's RSS then, by role (`roles`: pid -> name; others: "other")."""
        out = {}
        for stage, (total, sizes) in self.stages.items():
            named = {"sum": total}
            for pid, mb in sizes.items():
                role = roles.get(pid, "other")
                named[role] = named.get(role, 0.0) + mb
            out[stage] = named
        return out


def fingerprint(ratings) -> str:
    """The sha256 of the scores and extras (intervals, spreads) of one method's ratings."""
    digest = hashlib.sha256(ratings.score.tobytes())
    for name in sorted(ratings.extras):
        digest.update(name.encode() + np.ascontiguousarray(ratings.extras[name]).tobytes())
    return digest.hexdigest()


def rate_store(store: str, specs: list[str], workers: int) -> dict:
    """Reduce and rate the store on `workers` local worker processes (0: local threads); times, peaks and ratings."""
    from pipeline.board import rate
    from pipeline.methods import needed_statistics
    from pipeline.runtime import dask_client, quiet_logs
    from pipeline.stats import reduce_store
    from pipeline.store import Store

    quiet_logs()
    tree = TreePeak()
    with dask_client(None, workers) as client:
        roles = {os.getpid(): "client"} | ({pid: f"worker {i}" for i, (_, pid) in enumerate(sorted(client.run(os.getpid).items()))}
                                           if client is not None else {})
        tree.stage = "reduce"
        start = time.perf_counter()
        stats = reduce_store(Store(store), "battles", needed_statistics(specs), client=client)
        result: dict = {"reduce_s": time.perf_counter() - start}
        ratings = {}
        for spec in specs:
            tree.stage = spec
            rated = rate(stats, [spec], client)
            if rated.refused:
                raise AssertionError(rated.refused)
            result |= {f"{name}_s": seconds for name, seconds in rated.timings.items()}
            ratings |= {r.name: fingerprint(r) for r in rated.ratings}
        del stats
        workers_peak = client.run(peak_rss_mb) if client is not None else {}
    result |= {"client_peak_rss_mb": peak_rss_mb(), "worker_peak_rss_mb": sorted(workers_peak.values()),
               "sum_peak_rss_mb": tree.stop(), "sum_peak_by_stage_mb": tree.by_stage(roles), "ratings": ratings}
    return result


def _put(work, args: tuple, results) -> None:
    try:
        results.put(work(*args))
    except BaseException:
        results.put(RuntimeError(traceback.format_exc()))
        raise


def in_child(work, *args):
    """`work(*args)` in a fresh process (its peak RSS its own; not a daemon, so that it can start a cluster)."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    child = context.Process(target=_put, args=(work, args, results))
    child.start()
    result = results.get()
    child.join()
    if isinstance(result, RuntimeError):
        raise result
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--chunk", type=int, default=1_000_000, help="rows generated and written at a time")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--method", action="append", help="method spec (repeatable; default: elo and m-elo)")
    parser.add_argument("--check-rows", type=int, default=10_000_000, help="rate on local threads too, up to this size")
    parser.add_argument("--folder", type=Path, default=None, help="where the file and the store go (default: a temporary folder)")
    args = parser.parse_args()
    specs = args.method or ["elo", "m-elo"]
    results: dict = {"rows": args.rows, "models": args.models, "workers": args.workers, "methods": specs,
                     "load_average": os.getloadavg()[0]}
    folder = Path(tempfile.mkdtemp(prefix="bench-scale-", dir=args.folder))
    try:
        source = folder / "battles.parquet"
        start = time.perf_counter()
        write_battles(source, args.rows, args.models, args.chunk)
        print(f"{args.rows:,} battles written in {time.perf_counter() - start:.1f} s ({source.stat().st_size / 2**30:.2f} GB)",
              flush=True)
        results["anchor"] = measure(streamed_copy, source, folder / "anchor.parquet")
        (folder / "anchor.parquet").unlink()
        results["ingest"] = measure(ingest, source, folder / "store")
        source.unlink()
        for stage in ("anchor", "ingest"):
            run = results[stage]
            print(f"{stage:7s}: {run['wall_s']:7.1f} s wall, {run['cpu_s']:7.1f} s CPU, peak RSS {run['peak_rss_bytes'] / 2**30:5.2f} GB "
                  f"(anonymous {run['peak_anonymous_bytes'] / 2**30:5.2f} GB)", flush=True)
        print(f"ingest / anchor: {results['ingest']['wall_s'] / results['anchor']['wall_s']:.1f}x wall", flush=True)
        for workers in [args.workers] + ([0] if args.rows <= args.check_rows and args.workers else []):
            run = in_child(rate_store, str(folder / "store"), specs, workers)
            results[f"rate_workers_{workers}"] = run
            times = ", ".join(f"{name[:-2].split(':')[0]} {seconds:.1f} s" for name, seconds in run.items() if name.endswith("_s"))
            print(f"rate on {workers} workers: {times}; peak RSS client {run['client_peak_rss_mb'] / 1024:.2f} GB, workers "
                  f"{', '.join(f'{mb / 1024:.2f}' for mb in run['worker_peak_rss_mb']) or '-'} GB, "
                  f"sum of all processes {run['sum_peak_rss_mb'] / 1024:.2f} GB", flush=True)
            for stage, sizes in run["sum_peak_by_stage_mb"].items():
                print(f"  summed peak during {stage.split(':')[0]}: " + ", ".join(
                    f"{role} {mb / 1024:.2f}" for role, mb in sizes.items() if mb >= 1) + " GB", flush=True)
        rated = [run["ratings"] for key, run in results.items() if key.startswith("rate_workers_")]
        if len(rated) > 1:
            results["same_ratings"] = all(r == rated[0] for r in rated)
            print(f"same ratings (bits) on {args.workers} workers and on local threads: {results['same_ratings']}", flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    results["load_average_after"] = os.getloadavg()[0]
    print(f"written {save(f'scale-{args.rows}', results)}")


if __name__ == "__main__":
    main()
