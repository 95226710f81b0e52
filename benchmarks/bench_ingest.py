"""Ingest of battles from CSV and from Parquet against the physical anchor of the stage: reading
the same file with pyarrow and writing it as one Parquet file (issue target: at most 2x at 2e7
rows); and the peak memory of ingesting ranked ballots (target: 1e6 ballots under 2 GB).

    python -m benchmarks.bench_ingest [--rows 2000000] [--days 365] [--ballots 1000000]

Battles are generated with a fixed seed (ids, two of 1,000 models, a winner, a timestamp spread
over `days` days); each source is ingested into a fresh store, after the baseline, in one process.
Ballots (2 to 7 of 20 candidates each) are ingested in a child process, whose peak RSS is its own.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from benchmarks.common import best_of, save
from pipeline.store import Store


def make_battles(rows: int, days: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    names = np.array([f"model-{i:04d}" for i in range(1000)])
    a = rng.integers(0, 1000, rows)
    b = (a + rng.integers(1, 1000, rows)) % 1000
    start = np.datetime64("2024-01-01T00:00:00", "s").astype(np.int64)
    return pa.table({
        "battle_id": pa.array(np.char.add("b", np.arange(rows).astype(str))),
        "model_a": pa.array(names[a]),
        "model_b": pa.array(names[b]),
        "winner": pa.array(np.array(["model_a", "model_b", "tie"])[rng.integers(0, 3, rows)]),
        "timestamp": pa.array(start + rng.integers(0, days * 86_400, rows)),
    })


def baseline(source: Path, target: Path) -> None:
    table = pq.read_table(source) if source.suffix == ".parquet" else pa_csv.read_csv(source)
    pq.write_table(table, target, compression="zstd")


def ingest_ballots(count: int, folder: Path) -> None:
    rng = np.random.default_rng(1)
    names = np.array([f"candidate-{i:02d}" for i in range(20)])
    with (folder / "ballots.csv").open("w") as handle:
        handle.write("ballot_id,ranking\n")
        for i in range(count):
            handle.write(f"v{i},{'>'.join(names[rng.permutation(20)[: rng.integers(2, 8)]])}\n")
    started = time.perf_counter()
    [report] = Store(folder / "store-ballots").ingest([folder / "ballots.csv"], "ballots")
    assert report.rows_accepted == count, report
    print(f"ballots: {count:,} in {time.perf_counter() - started:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--ballots", type=int, default=1_000_000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    try:
        table = make_battles(args.rows, args.days)
        sources = [folder / "battles.csv", folder / "battles.parquet"]
        pa_csv.write_csv(table, sources[0])
        pq.write_table(table, sources[1], row_group_size=1_000_000)
        del table
        results = {"rows": args.rows, "days": args.days}
        for source in sources:
            plain, _ = best_of(lambda: baseline(source, folder / "plain.parquet"), repeat=2)
            store_root = folder / f"store-{source.suffix[1:]}"
            started = time.perf_counter()
            [report] = Store(store_root).ingest([source], "battles")
            ingest = time.perf_counter() - started
            assert report.rows_accepted == args.rows, report
            shutil.rmtree(store_root)
            fmt = source.suffix[1:]
            results[fmt] = {"ingest_s": ingest, "read_write_s": plain, "ratio": ingest / plain}
            print(f"{fmt}: ingest {ingest:.2f} s, pyarrow read + Parquet write {plain:.2f} s: {ingest / plain:.1f}x")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        results["peak_rss_gb"] = peak
        print(f"battles: peak RSS {peak:.2f} GB")
        child = multiprocessing.get_context("spawn").Process(target=ingest_ballots, args=(args.ballots, folder))
        child.start()
        child.join()
        ballots_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
        results["ballots"] = {"count": args.ballots, "peak_rss_gb": ballots_peak}
        print(f"ballots: peak RSS {ballots_peak:.2f} GB (target under 2 GB)")
        save("ingest", results)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
