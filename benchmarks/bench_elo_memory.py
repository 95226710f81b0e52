"""Benchmark: online Elo's time and peak memory at 10^6 and 3x10^6 battles, against the implementations before.

Each measurement runs in a fresh process (peak RSS from `resource`), on the same synthetic
input: `--partials` sorted partials of the `sequence` statistic (one per file: ingest positions
file << 40 | line, 200 models), either with timestamps to the second over a year (`stamped`) or
without (`unstamped`: the order is the ingest order), merged by a balanced tree as the Dask
reduction does, finalized, and rated by online Elo.

- new: `SEQUENCE.merge` (sorted runs interleaved by integer keys) and the compiled loop (`run_elo`);
- chunked lists: the same merge, and the loop before the compiled one, kept only here
  (`chunked_lists_run_elo`: a Python loop fed four Python lists of 2^16 comparisons at a time);
- baseline: every merge concatenates and re-sorts on the whole key (`baseline_merge`), and the
  loop turns its four input arrays into Python lists as long as the log (`baseline_run_elo`).

All give the same ratings, bit for bit (checked). Reported per size and input: seconds for the
merge tree (+ finalize) and for the Elo loop, the process's peak RSS, and the peak above the
input's own memory.

Run: `python -m benchmarks.bench_elo_memory [--sizes 1000000 3000000]`; writes benchmarks/results/elo_memory.json.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import time
from math import exp, log

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from benchmarks.common import save
from pipeline.logs.identity import LINE_BITS
from pipeline.methods.elo import run_elo
from pipeline.stats.sequence import SCHEMA, SEQUENCE, SORT_KEY
from pipeline.weights import UNIT

MODELS, SEED, YEAR_SECONDS = 200, 20250301, 365 * 24 * 3600
CHUNK = 1 << 16


def partials(rows: int, parts: int, stamped: bool, seed: int = SEED) -> list[pa.Table]:
    """Sorted `sequence` partials of `rows` battles in `parts` files (see the module docstring)."""
    rng = np.random.default_rng(seed)
    out = []
    for part, size in enumerate(np.diff(np.linspace(0, rows, parts + 1).astype(np.int64))):
        a = rng.integers(0, MODELS, size)
        b = (a + rng.integers(1, MODELS, size)) % MODELS
        stamps = rng.integers(0, YEAR_SECONDS, size)
        table = pa.table([pa.array(stamps, mask=np.full(size, not stamped)), pa.array((part << LINE_BITS) + 2 + np.arange(size)),
                          pa.nulls(size, pa.string()), pa.array(np.zeros(size, np.int32)), pa.array(a), pa.array(b),
                          pa.array(rng.integers(0, 3, size).astype(np.int8)), pa.array(np.full(size, UNIT, np.int64)),
                          pa.array(np.full(size, 2, np.int32))], schema=SCHEMA)
        out.append(table.take(pc.sort_indices(table, sort_keys=[(k, "ascending", "at_start") for k in SORT_KEY])))
    return out


def baseline_merge(x: pa.Table, y: pa.Table) -> pa.Table:
    """The first merge: concatenate, then sort everything on the whole key."""
    table = pa.concat_tables([x, y]).combine_chunks()
    return table.take(pc.sort_indices(table, sort_keys=[(k, "ascending", "at_start") for k in SORT_KEY]))


def logistic(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + exp(-z))
    ez = exp(z)
    return ez / (1.0 + ez)


def baseline_run_elo(n, a, b, score, step, group, scale, initial) -> np.ndarray:
    """The first loop (battles: one comparison per group): four Python lists as long as the log."""
    return chunked_lists_run_elo(n, a, b, score, step, group, scale, initial, chunk=len(a))


def chunked_lists_run_elo(n, a, b, score, step, group, scale, initial, chunk: int = CHUNK) -> np.ndarray:
    """The loop before the compiled one (battles): Python lists of `chunk` comparisons at a time."""
    r = [float(initial)] * n
    c = log(10.0) / scale
    for lo in range(0, len(a), max(chunk, 1)):
        hi = lo + max(chunk, 1)
        for x, y, s, kw in zip(a[lo:hi].tolist(), b[lo:hi].tolist(), score[lo:hi].tolist(), step[lo:hi].tolist()):
            d = kw * (s - logistic((r[x] - r[y]) * c))
            r[x] += d
            r[y] -= d
    return np.array(r)


IMPLEMENTATIONS = {"baseline": (baseline_merge, baseline_run_elo), "chunked lists": (SEQUENCE.merge, chunked_lists_run_elo),
                   "new": (SEQUENCE.merge, run_elo)}


def measure(rows: int, parts: int, stamped: bool, implementation: str) -> dict:
    """One measurement in this (fresh) process."""
    if implementation == "new":
        run_elo(2, np.zeros(1, np.int64), np.ones(1, np.int64), np.ones(1), np.ones(1), np.zeros(1, np.int64), 400.0, 1000.0)
    tables = partials(rows, parts, stamped)  # (the line above loads the compiled loop: not timed)
    input_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    merge, loop = IMPLEMENTATIONS[implementation]
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
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 3_000_000])
    parser.add_argument("--partials", type=int, default=16)
    args = parser.parse_args()
    results: dict = {"load_average": os.getloadavg()[0], "partials": args.partials}
    spawn = multiprocessing.get_context("spawn")
    for rows in args.sizes:
        for stamped in (True, False):
            runs = {}
            for implementation in IMPLEMENTATIONS:
                with spawn.Pool(1) as pool:
                    runs[implementation] = pool.apply(measure, (rows, args.partials, stamped, implementation))
            ratings = [np.asarray(run.pop("ratings")).tobytes() for run in runs.values()]
            same = len(set(ratings)) == 1
            label = "stamped" if stamped else "unstamped"
            results[f"{rows}-{label}"] = runs | {"same_ratings": same}
            for implementation, run in runs.items():
                print(f"{rows:>11,} rows {label:9s} {implementation:13s}: merge tree + finalize {run['merge_and_finalize_s']:6.2f} s, "
                      f"Elo loop {run['elo_loop_s']:6.2f} s, peak RSS {run['peak_rss_mb']:7.0f} MB "
                      f"({run['peak_above_input_mb']:.0f} MB above the input)", flush=True)
            print(f"{'':>17}same ratings (bits): {same}", flush=True)
    results["load_average_after"] = os.getloadavg()[0]
    print(f"written {save('elo_memory', results)}")


if __name__ == "__main__":
    main()
