"""Benchmark: online Elo's time and peak memory at 10^6 and 10^7 battles, against the implementation before.

Each measurement runs in a fresh process (peak RSS from `resource`), on the same synthetic
input: `--partials` sorted partials of the `sequence` statistic (battle ids "f<file>:<line>" as
ingest generates them, timestamps to the second over a year, 200 models), merged by a balanced
tree as the Dask reduction does, finalized, and rated by `run_elo` in timestamp order.

- new: `SEQUENCE.merge` (sorted runs interleaved by integer timestamp) and the chunked Elo loop;
- baseline: the code before, kept only here: every merge concatenates and re-sorts on the whole
  key, strings included (`baseline_merge`), and the loop turns its four input arrays into Python
  lists as long as the log (`baseline_run_elo`).

Both give the same ratings (checked). Reported per size: seconds for the merge tree (+ finalize)
and for the Elo loop, the process's peak RSS, and the peak above the input's own memory.

Run: `python -m benchmarks.bench_elo_memory [--sizes 1000000 10000000]`; writes benchmarks/results/elo_memory.json.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import time
from math import log

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from benchmarks.common import save
from pipeline.methods.elo import expected, run_elo
from pipeline.stats.sequence import SCHEMA, SEQUENCE, SORT_KEY
from pipeline.weights import UNIT

MODELS, SEED, YEAR_SECONDS = 200, 20250301, 365 * 24 * 3600


def partials(rows: int, parts: int, seed: int = SEED) -> list[pa.Table]:
    """Sorted `sequence` partials of `rows` battles in `parts` files (see the module docstring)."""
    rng = np.random.default_rng(seed)
    out = []
    for part, size in enumerate(np.diff(np.linspace(0, rows, parts + 1).astype(np.int64))):
        a = rng.integers(0, MODELS, size)
        b = (a + rng.integers(1, MODELS, size)) % MODELS
        table = pa.table([pa.array(rng.integers(0, YEAR_SECONDS, size)), ids(part, size),
                          pa.array(np.zeros(size, np.int32)), pa.array(a), pa.array(b),
                          pa.array(rng.integers(0, 3, size).astype(np.int8)), pa.array(np.full(size, UNIT, np.int64)),
                          pa.array(np.full(size, 2, np.int32))], schema=SCHEMA)
        out.append(table.take(pc.sort_indices(table, sort_keys=[(k, "ascending", "at_start") for k in SORT_KEY])))
    return out


def ids(part: int, size: int) -> pa.Array:
    """Battle ids "f<part>:<line>", as ingest generates them for logs without ids."""
    return pc.binary_join_element_wise(f"f{part}", pc.cast(pa.array(np.arange(size)), pa.string()), ":")


def baseline_merge(x: pa.Table, y: pa.Table) -> pa.Table:
    """The merge before: concatenate, then sort everything on the whole key."""
    table = pa.concat_tables([x, y]).combine_chunks()
    return table.take(pc.sort_indices(table, sort_keys=[(k, "ascending", "at_start") for k in SORT_KEY]))


def baseline_run_elo(n, a, b, score, step, group, scale, initial) -> np.ndarray:
    """The loop before (battles: one comparison per group): four Python lists as long as the log."""
    r = [float(initial)] * n
    xs, ys, ss, ks = a.tolist(), b.tolist(), score.tolist(), step.tolist()
    c = log(10.0) / scale
    for x, y, s, kw in zip(xs, ys, ss, ks):
        d = kw * (s - expected((r[x] - r[y]) * c))
        r[x] += d
        r[y] -= d
    return np.array(r)


def measure(rows: int, parts: int, implementation: str) -> dict:
    """One measurement in this (fresh) process."""
    tables = partials(rows, parts)
    input_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    merge, loop = (SEQUENCE.merge, run_elo) if implementation == "new" else (baseline_merge, baseline_run_elo)
    start = time.perf_counter()
    while len(tables) > 1:
        tables = [merge(*tables[i: i + 2]) if i + 1 < len(tables) else tables[i] for i in range(0, len(tables), 2)]
    seq = SEQUENCE.finalize(tables[0], np.arange(MODELS), {})
    t_merge = time.perf_counter() - start
    del tables
    start = time.perf_counter()
    ratings = loop(MODELS, seq.a, seq.b, seq.score, 4.0 * seq.weight, seq.group, 400.0, 1000.0)
    t_loop = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"merge_and_finalize_s": t_merge, "elo_loop_s": t_loop, "peak_rss_mb": peak,
            "peak_above_input_mb": peak - input_rss, "ratings": ratings.tolist()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--partials", type=int, default=16)
    args = parser.parse_args()
    results: dict = {"load_average": os.getloadavg()[0], "partials": args.partials}
    spawn = multiprocessing.get_context("spawn")
    for rows in args.sizes:
        runs = {}
        for implementation in ("baseline", "new"):
            with spawn.Pool(1) as pool:
                runs[implementation] = pool.apply(measure, (rows, args.partials, implementation))
        same = np.array_equal(runs["baseline"].pop("ratings"), runs["new"].pop("ratings"))
        results[str(rows)] = runs | {"same_ratings": bool(same)}
        for implementation, run in runs.items():
            print(f"{rows:>11,} rows {implementation:8s}: merge tree + finalize {run['merge_and_finalize_s']:6.2f} s, "
                  f"Elo loop {run['elo_loop_s']:6.2f} s, peak RSS {run['peak_rss_mb']:7.0f} MB "
                  f"({run['peak_above_input_mb']:.0f} MB above the input)", flush=True)
        print(f"{'':>17}same ratings: {same}", flush=True)
    print(f"written {save('elo_memory', results)}")


if __name__ == "__main__":
    main()
