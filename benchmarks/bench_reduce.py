"""Pairwise counts for 2e7 battle rows read from the store on 2 Dask workers, against a numpy
bincount over the same columns already in memory (the issue's target: at most 2.5x).

    python -m benchmarks.bench_reduce [--rows 20000000] [--models 1000] [--files 16]

Battles are generated with a fixed seed, written as `files` Parquet logs (one day each) and
ingested through the store (ingest time reported apart). Both sides produce N and T; the
results are checked equal before any time is reported.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.common import best_of, save
from pipeline.stats import reduce_store
from pipeline.store import Store


def make_logs(folder: Path, rows: int, models: int, files: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    names = np.array([f"model-{i:04d}" for i in range(models)])
    winners = np.array(["model_a", "model_b", "tie", "tie (bothbad)"])
    for day, size in enumerate(np.diff(np.linspace(0, rows, files + 1).astype(np.int64))):
        a = rng.integers(0, models, size)
        b = (a + rng.integers(1, models, size)) % models
        table = pa.table({
            "model_a": pa.array(names[a]).dictionary_encode(),
            "model_b": pa.array(names[b]).dictionary_encode(),
            "winner": pa.array(winners[rng.choice(4, size, p=[0.45, 0.45, 0.07, 0.03])]).dictionary_encode(),
            "timestamp": pa.array(np.full(size, np.datetime64("2024-01-01") + day).astype("datetime64[us]")),
        })
        pq.write_table(table, folder / f"battles-{day:02d}.parquet", row_group_size=1_000_000)


def numpy_counts(a: np.ndarray, b: np.ndarray, winner: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The baseline: one bincount for wins, one for ties, on arrays in memory."""
    decided = winner < 2
    a_won = winner == 0
    win = np.where(a_won, a, b)[decided].astype(np.int64)
    lose = np.where(a_won, b, a)[decided]
    wins = np.bincount(win * n + lose, minlength=n * n).reshape(n, n)
    tied = np.bincount(a[~decided].astype(np.int64) * n + b[~decided], minlength=n * n).reshape(n, n)
    return wins, tied + tied.T


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--models", type=int, default=1000)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    from distributed import Client, LocalCluster

    scratch = Path(tempfile.mkdtemp(prefix="vase-bench-reduce-"))
    try:
        logs = scratch / "logs"
        logs.mkdir()
        make_logs(logs, args.rows, args.models, args.files)
        store = Store(scratch / "store")
        start = time.perf_counter()
        store.ingest(sorted(logs.glob("*.parquet")), "battles")
        ingest_s = time.perf_counter() - start

        columns = [pq.read_table(store.path(p), columns=["model_a", "model_b", "winner"]) for p in store.partitions("battles")]
        table = pa.concat_tables(columns).combine_chunks()
        a, b, w = (table.column(c).to_numpy() for c in ("model_a", "model_b", "winner"))
        n = len(store.dictionary())
        numpy_s, (wins, ties) = best_of(lambda: numpy_counts(a, b, w, n))
        del table, columns, a, b, w

        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
                Client(cluster) as client:
            client.run(lambda: None)  # workers up and warm
            dask_s, stats = best_of(lambda: reduce_store(store, "battles", {"pairwise"}, client=client, dense=True))
        order = stats.agents
        assert np.array_equal(stats.pairwise.wins, wins[np.ix_(order, order)].astype(float))
        assert np.array_equal(stats.pairwise.ties, ties[np.ix_(order, order)].astype(float))

        ratio = dask_s / numpy_s
        payload = {"rows": args.rows, "models": args.models, "files": args.files, "workers": args.workers,
                   "ingest_s": ingest_s, "numpy_in_memory_s": numpy_s, "store_on_dask_s": dask_s,
                   "ratio_store_dask_over_numpy": ratio, "target_ratio": 2.5}
        path = save("reduce", payload)
        print(f"{args.rows:.0e} battle rows, {args.models} models, {args.files} partitions, {args.workers} workers")
        print(f"  ingest (not timed against the baseline)      {ingest_s:8.2f} s")
        print(f"  numpy bincount, arrays in memory (baseline)  {numpy_s:8.2f} s")
        print(f"  store -> Dask reduction -> N, T              {dask_s:8.2f} s")
        print(f"  ratio                                        {ratio:8.2f} x   (target <= 2.5)")
        print(f"  written to {path}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
