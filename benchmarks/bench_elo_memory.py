"""Benchmark: online Elo's time and peak memory at 10^6 to 10^7 battles, against the first implementation.

Each measurement runs in a fresh process, on the same synthetic
input: `--partials` sorted partials of the `sequence` statistic (one per file: ingest positions
file << 40 | line, 200 models), either with timestamps to the second over a year (`stamped`) or
without (`unstamped`: the order is the ingest order), merged by a balanced tree as the Dask
reduction does, finalized, and rated by online Elo.

- new: the partials as the statistic keeps them (compact runs, `as_run`), merged by
  `SEQUENCE.merge` (the runs are interleaved once, when finalized, by a compiled k-way merge
  that reads them in place and releases their columns as the sequence is built) and rated by the `elo` method (the compiled loop over the compact columns);
- baseline: full-layout tables, every merge concatenates and re-sorts on the whole key
  (`baseline_merge`), and the loop turns its four input arrays into Python lists as long as the
  log (`baseline_run_elo`): an independent check of the order and of the update.

Both give the same ratings, bit for bit (checked). Reported per size and input: seconds for the
merge tree (+ finalize) and for Elo, the peak RSS of that work with its input resident (the peak
is reset once the input is generated: the generator's transients are not the work's), the
process's peak while generating, and the fitted bytes of peak RSS per row over the sizes run.

Run: `python -m benchmarks.bench_elo_memory [--sizes 1000000 3000000 10000000]`; writes benchmarks/results/elo_memory.json.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import time
from collections.abc import Iterator
from math import exp, log

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from benchmarks.common import save
from pipeline.logs.identity import LINE_BITS
from pipeline.methods.bradley_terry.elo import elo
from pipeline.stats.sequence import SCHEMA, SEQUENCE, SORT_KEY, Runs, as_run
from pipeline.weights import UNIT

MODELS, SEED, YEAR_SECONDS = 200, 20250301, 365 * 24 * 3600


def partials(rows: int, parts: int, stamped: bool, seed: int = SEED) -> Iterator[pa.Table]:
    """Sorted `sequence` partials of `rows` battles in `parts` files, in the full layout, one at a time (see the module docstring)."""
    rng = np.random.default_rng(seed)
    for part, size in enumerate(np.diff(np.linspace(0, rows, parts + 1).astype(np.int64))):
        a = rng.integers(0, MODELS, size)
        b = (a + rng.integers(1, MODELS, size)) % MODELS
        stamps = rng.integers(0, YEAR_SECONDS, size)
        table = pa.table([pa.array(stamps, mask=np.full(size, not stamped)), pa.array((part << LINE_BITS) + 2 + np.arange(size)),
                          pa.nulls(size, pa.string()), pa.array(np.zeros(size, np.int32)), pa.array(a, pa.int32()), pa.array(b, pa.int32()),
                          pa.array(rng.integers(0, 3, size).astype(np.int8)), pa.array(np.full(size, UNIT, np.int64)),
                          pa.array(np.full(size, 2, np.int32))], schema=SCHEMA)
        yield table.take(pc.sort_indices(table, sort_keys=[(k, "ascending", "at_start") for k in SORT_KEY]))


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
    r = [float(initial)] * n
    c = log(10.0) / scale
    for x, y, s, kw in zip(a.tolist(), b.tolist(), score.tolist(), step.tolist()):
        d = kw * (s - logistic((r[x] - r[y]) * c))
        r[x] += d
        r[y] -= d
    return np.array(r)


def baseline(tables: list[pa.Table]):
    """Merge tree, finalize (the caller's list handed over: emptied); and the Elo run to time after."""
    while len(tables) > 1:
        tables[:] = [baseline_merge(*tables[i: i + 2]) if i + 1 < len(tables) else tables[i] for i in range(0, len(tables), 2)]
    seq = SEQUENCE.finalize(Runs([tables.pop()]), np.arange(MODELS), {})
    return seq, lambda: baseline_run_elo(MODELS, seq.a, seq.b, seq.score, 4.0 * np.asarray(seq.weight), seq.group, 400.0, 1000.0)


def new(runs: list):
    """Merge tree, finalize (the caller's list handed over: emptied, so that finalizing releases the runs); and the Elo run to time after."""
    while len(runs) > 1:
        runs[:] = [SEQUENCE.merge(*runs[i: i + 2]) if i + 1 < len(runs) else runs[i] for i in range(0, len(runs), 2)]
    seq = SEQUENCE.finalize(runs.pop(), np.arange(MODELS), {})
    return seq, lambda: elo(seq, np.arange(MODELS), k=4.0).score


IMPLEMENTATIONS = {"baseline": (list, baseline), "new": (lambda tables: [as_run(t) for t in tables], new)}  # (input as kept, run)


def measure(rows: int, parts: int, stamped: bool, implementation: str) -> dict:
    """One measurement in this (fresh) process."""
    kept, run = IMPLEMENTATIONS[implementation]
    if implementation == "new":  # load the compiled loops: not timed
        run(kept(partials(2, 2, stamped)))[1]()
    inputs = kept(partials(rows, parts, stamped))  # generated one partial at a time, kept as the implementation keeps them
    input_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    reset_peak_rss()
    start = time.perf_counter()
    seq, rate = run(inputs)
    del inputs
    t_merge = time.perf_counter() - start
    start = time.perf_counter()
    ratings = rate()
    t_loop = time.perf_counter() - start
    return {"merge_and_finalize_s": t_merge, "elo_s": t_loop, "peak_rss_mb": peak_rss_mb(), "input_peak_rss_mb": input_peak,
            "ratings": ratings.tolist()}


def reset_peak_rss() -> None:
    """Start the process's peak RSS afresh from its current RSS (Linux), so that the peak measured
    is the work's with the inputs resident, not the generator's transient."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def peak_rss_mb() -> float:
    """The process's peak RSS since the last `reset_peak_rss` (VmHWM), in MB."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 3_000_000, 10_000_000])
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
                print(f"{rows:>11,} rows {label:9s} {implementation:9s}: merge tree + finalize {run['merge_and_finalize_s']:6.2f} s, "
                      f"Elo {run['elo_s']:6.2f} s, peak RSS {run['peak_rss_mb']:7.0f} MB (generating the input: "
                      f"{run['input_peak_rss_mb']:.0f} MB)", flush=True)
            print(f"{'':>17}same ratings (bits): {same}", flush=True)
    for label in ("stamped", "unstamped"):
        for implementation in IMPLEMENTATIONS:
            peaks = [results[f"{rows}-{label}"][implementation]["peak_rss_mb"] for rows in args.sizes]
            if len(args.sizes) > 1:
                slope, intercept = np.polyfit(args.sizes, np.array(peaks) * 2**20, 1)
                results[f"{label}-{implementation}-fit"] = {"bytes_per_row": slope, "intercept_mb": intercept / 2**20,
                                                            "peak_at_1e8_rows_gb": (slope * 1e8 + intercept) / 2**30}
                print(f"{label:9s} {implementation:9s}: peak RSS {slope:.1f} bytes per row + {intercept / 2**20:.0f} MB; "
                      f"at 10^8 rows {(slope * 1e8 + intercept) / 2**30:.2f} GB", flush=True)
    results["load_average_after"] = os.getloadavg()[0]
    print(f"written {save('elo_memory', results)}")


if __name__ == "__main__":
    main()
