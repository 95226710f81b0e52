"""Ids of content (`pipeline.logs.identity.ContentIds`): the ingest of battles without ids, which
get ids of their content, against the same battles with a `battle_id` column, in the same run
(best of `--repeat` each, into fresh stores; CPU of all threads, the steadier measure on a shared
machine, and wall-clock). The ratio is the cost of exactly-once without ids.

    python -m benchmarks.bench_content_ids [--rows 1000000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from pipeline.store import Store


def battles(rows: int, with_ids: bool) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    frame = pl.DataFrame({"model_a": rng.integers(0, 1000, rows), "model_b": rng.integers(1000, 2000, rows),
                          "winner": rng.choice(["model_a", "model_b", "tie"], rows)}).with_columns(
        pl.format("m{}", "model_a").alias("model_a"), pl.format("m{}", "model_b").alias("model_b"))
    return frame.with_row_index("battle_id").with_columns(pl.col("battle_id").cast(pl.String)) if with_ids else frame


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def ingest(path: Path, folder: Path) -> tuple[float, float]:
    start, started = time.perf_counter(), cpu()
    report = Store(folder).ingest([path], "battles")[0]
    assert report.status == "ingested", report
    return time.perf_counter() - start, cpu() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        paths = {}
        for name, with_ids in (("with battle_id", True), ("without ids", False)):
            paths[name] = tmp / f"{name.replace(' ', '_')}.csv"
            battles(args.rows, with_ids).write_csv(paths[name])
        best = {name: min((ingest(path, tmp / f"store-{name}-{i}".replace(" ", "_")) for i in range(args.repeat)),
                          key=lambda t: t[1]) for name, path in paths.items()}
    for name, (wall, used) in best.items():
        print(f"{name:>15}: {wall:6.2f} s wall, {used:6.2f} s CPU ({args.rows:,} battles)")
    base, content = best["with battle_id"], best["without ids"]
    print(f"ids of content cost: x{content[1] / base[1]:.2f} CPU, x{content[0] / base[0]:.2f} wall")


if __name__ == "__main__":
    main()
