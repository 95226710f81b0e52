"""The fixed costs a user pays on every `vase rate` (issue 34, item 4): three ratios, measured in one run.

Run as `python -m benchmarks.bench_cli_fixed_costs [--repeat N] [--battles N] [--models 200 2000] [--large-only]
[--baseline DIR]`.
Every command is a fresh process (interpreter start, imports, reading and writing included), with
this checkout first on PYTHONPATH; small commands keep the best of N runs (the least disturbed by
other load), the large ones run once each.

1. A 10-row `vase rate` against `python -c "import numpy, pyarrow"` (target at most 3x): with borda,
   and with m-elo as a user types it (`-m m-elo`: 1,000 bootstrap rounds). `import pipeline.board`
   (what `rate` imports before it reads a row) and an import of the third-party libraries a 10-row
   m-elo rate loads (`LIBRARIES`: pandas by way of pyarrow; a borda rate loads them all but numba) are
   timed beside them: the floor under vase's code.
2. The CLI against the library API on the same input (target at most 1.2x): `vase rate BATTLES.csv -k
   battles -m m-elo:bootstrap=0 --out DIR` against a Python script that calls `pipeline.board.run_board`
   with a temporary store (`LIBRARY_SCRIPT`): the same stages, the same files written; the script
   also reports the seconds spent inside `run_board`, so the share of imports is seen.
3. The CLI end to end against evalica's whole script (`benchmarks.peers.rate_file evalica`: pandas
   reads the CSV, `evalica.bradley_terry`, a CSV written) at each `--models` (target at most 1.2x).
   Its ratings are checked against vase's (`bench_elo.TOL_ELO`) before a ratio counts.
   With `--baseline DIR` (another checkout of vase, say main's: `git worktree add DIR main`), its
   `vase rate` runs on the same file just before this checkout's: after / before, and each against
   evalica's script, in one run; its ratings.parquet must be this checkout's bytes.
   `--large-only` skips item 1.

The battles are `bench_elo`'s (uniform random pairs, 10% ties, Bradley-Terry strengths N(0, 1)).
JSON is written to benchmarks/results/cli_fixed_costs.json.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl

from benchmarks.bench_elo import BATTLES, ROOT, SEED, TOL_ELO, battle_frame, battles, names, timed_command
from benchmarks.common import machine, save, scores_agree

VASE = Path(sys.executable).parent / "vase"
TEN_ROWS = "model_a,model_b,winner\n" + "".join(f"m{i % 4},m{(i + 1) % 4},{('model_a', 'model_b', 'tie')[i % 3]}\n" for i in range(10))
SPEC = "m-elo:bootstrap=0"  # evalica gives no intervals
# The libraries a 10-row m-elo rate loads, borda's all but numba (`python -X importtime`): the floor under vase's code.
LIBRARIES = ("numpy", "pyarrow", "pandas", "polars", "scipy.sparse", "scipy.linalg", "scipy.special", "numba", "dask.threaded",
             "matplotlib.figure", "yaml", "typer", "rich")
TARGETS = {"ten_rows_over_imports": 3.0, "cli_over_library": 1.2, "cli_over_evalica": 1.2}
# What `vase rate FILE -k battles -m SPEC --out OUT` does, through the library: argv is FILE SPEC OUT.
LIBRARY_SCRIPT = """
import sys, tempfile, time
from pathlib import Path
from pipeline.board import Board, run_board
from pipeline.store import Store
source, spec, out = sys.argv[1:]
with tempfile.TemporaryDirectory(prefix="vase-store-") as scratch:
    start = time.perf_counter()
    run_board(Board(Path(out).name, "battles", (source,), (spec,)), Store(scratch), Path(out), temporary_store=True)
    print(time.perf_counter() - start)
"""


def best(argv: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        seconds, failure = timed_command(argv)
        if failure:
            raise RuntimeError(f"{' '.join(argv[:4])} failed: {failure}")
        times.append(seconds)
    return min(times)


def rate_command(source: Path, spec: str, out: Path) -> list[str]:
    return [str(VASE), "rate", str(source), "-k", "battles", "-m", spec, "--out", str(out), "--force"]


def fixed_costs(scratch: Path, repeat: int) -> dict[str, float]:
    ten = scratch / "ten.csv"
    ten.write_text(TEN_ROWS)
    commands = {
        "import numpy, pyarrow": [sys.executable, "-c", "import numpy, pyarrow"],
        "import pipeline.board": [sys.executable, "-c", "import pipeline.board"],
        "import the libraries alone": [sys.executable, "-c", f"import {', '.join(LIBRARIES)}"],
        "vase rate (10 rows, borda)": rate_command(ten, "borda", scratch / "ten-borda"),
        "vase rate (10 rows, m-elo)": rate_command(ten, "m-elo", scratch / "ten-m-elo"),
    }
    return {name: best(argv, repeat) for name, argv in commands.items()}


def library_seconds(source: Path, out: Path) -> tuple[float, float]:
    """Wall seconds of the library script as a fresh process, and of its `run_board` call alone."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", LIBRARY_SCRIPT, str(source), SPEC, str(out)], cwd=ROOT,
                          env=os.environ | {"PYTHONPATH": str(ROOT)}, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, float(done.stdout.split()[-1])


def timed(argv: list[str], root: Path = ROOT) -> tuple[float, float, str]:
    """`timed_command`, with the CPU seconds (user + system) the process used: on a shared machine
    they move far less with the load than its wall seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds, failure = timed_command(argv, root)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return seconds, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, failure


def large(scratch: Path, n: int, rows: int, baseline: Path | None = None) -> dict[str, object]:
    """CLI (the baseline's first, if given), library script and evalica's script on one CSV of `rows`
    battles among `n` models."""
    source = scratch / f"battles-{n}.csv"
    battle_frame(n, *battles(n, rows, SEED)).to_csv(source, index=False)
    found: dict[str, object] = {"models": n, "battles": rows}
    sides = ({"baseline": baseline} if baseline else {}) | {"cli": ROOT}
    for side, root in sides.items():
        found[f"{side}_s"], found[f"{side}_cpu_s"], failure = timed(rate_command(source, SPEC, scratch / f"{side}-{n}"), root)
        if failure:
            raise RuntimeError(f"{side}: vase rate failed: {failure}")
    found["library_s"], found["library_run_board_s"] = library_seconds(source, scratch / f"library-{n}")
    written = scratch / f"evalica-{n}.csv"
    evalica, evalica_cpu, failure = timed([sys.executable, "-m", "benchmarks.peers.rate_file", "evalica", str(source), str(written)])
    ours = pl.read_parquet(scratch / f"cli-{n}" / "ratings.parquet").sort("agent")["score"].to_numpy()
    library_scores = pl.read_parquet(scratch / f"library-{n}" / "ratings.parquet").sort("agent")["score"].to_numpy()
    theirs = None if failure else pd.read_csv(written).set_index("agent")["score"].reindex(np.sort(names(n))).to_numpy()
    verdict = scores_agree(ours, theirs, TOL_ELO, " Elo")
    found |= {"evalica_s": None if failure else evalica, "evalica_cpu_s": None if failure else evalica_cpu,
              "evalica_agrees": verdict.agrees, "evalica_detail": verdict.detail,
              "library_same_ratings": bool(np.array_equal(ours, library_scores)), "cli_over_library": found["cli_s"] / found["library_s"]}
    for side in sides:
        found[f"{side}_over_evalica"] = found[f"{side}_s"] / evalica if verdict.agrees else None
        found[f"{side}_cpu_over_evalica"] = found[f"{side}_cpu_s"] / evalica_cpu if verdict.agrees else None
    if baseline:
        found["baseline_same_ratings"] = (scratch / f"baseline-{n}" / "ratings.parquet").read_bytes() == \
            (scratch / f"cli-{n}" / "ratings.parquet").read_bytes()
        found["cli_over_baseline"] = found["cli_s"] / found["baseline_s"]
        found["cli_cpu_over_baseline"] = found["cli_cpu_s"] / found["baseline_cpu_s"]
    return found


def verdict(ratio: float | None, target: float) -> str:
    return "no ratio" if ratio is None else f"{ratio:.2f}x ({'met' if ratio <= target else 'NOT met'}, target {target}x)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--battles", type=int, default=BATTLES)
    parser.add_argument("--models", type=int, nargs="+", default=[200, 2000])
    parser.add_argument("--large-only", action="store_true", help="only the CSVs of --battles rows (items 2 and 3)")
    parser.add_argument("--baseline", type=Path, help="another checkout whose vase rate runs beside this one's (after / before)")
    args = parser.parse_args()
    baseline = args.baseline.resolve() if args.baseline else None
    times: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="vase-bench-") as tmp:
        scratch = Path(tmp)
        if not args.large_only:
            times = fixed_costs(scratch, args.repeat)
            floor = times["import numpy, pyarrow"]
            print(f"{'command':<28} {'best s':>8} {'x numpy+pyarrow':>16}")
            for name, seconds in times.items():
                print(f"{name:<28} {seconds:8.3f} {seconds / floor:16.1f}", flush=True)
        sizes = []
        for n in args.models:
            found = large(scratch, n, args.battles, baseline)
            sizes.append(found)
            print(f"{args.battles:,} battles x {n:,} models: vase rate {found['cli_s']:.2f} s (CPU {found['cli_cpu_s']:.2f} s)"
                  + (f" (baseline's {found['baseline_s']:.2f} s, CPU {found['baseline_cpu_s']:.2f} s, same ratings: "
                     f"{found['baseline_same_ratings']})" if baseline else "")
                  + f", library script {found['library_s']:.2f} s (run_board {found['library_run_board_s']:.2f} s), evalica's script "
                  + ("failed" if found["evalica_s"] is None else f"{found['evalica_s']:.2f} s (CPU {found['evalica_cpu_s']:.2f} s)")
                  + f"; evalica's answer: {found['evalica_detail']}", flush=True)
    print("ratios (issue 34):")
    for name in ("borda", "m-elo") if times else ():
        ratio = times[f"vase rate (10 rows, {name})"] / floor
        print(f"  10-row rate ({name}) / import numpy, pyarrow: {verdict(ratio, TARGETS['ten_rows_over_imports'])}")
    for found in sizes:
        print(f"  {found['models']:,} models: CLI / library script: {verdict(found['cli_over_library'], TARGETS['cli_over_library'])}; "
              f"CLI / evalica's script: {verdict(found['cli_over_evalica'], TARGETS['cli_over_evalica'])}")
        if found["cli_cpu_over_evalica"] is not None:
            print(f"    in CPU seconds: CLI / evalica's script {found['cli_cpu_over_evalica']:.2f}x")
        if baseline:
            print(f"    baseline ({baseline}): CLI after / before {found['cli_over_baseline']:.2f}x (CPU "
                  f"{found['cli_cpu_over_baseline']:.2f}x); baseline / evalica's script: "
                  f"{verdict(found['baseline_over_evalica'], TARGETS['cli_over_evalica'])}")
    print(f"machine: {machine()}")
    path = save("cli_fixed_costs", {"repeat": args.repeat, "seconds": times,
                                    "ratio_to_numpy_pyarrow": {k: v / floor for k, v in times.items()} if times else {},
                                    "large": sizes, "baseline": str(baseline) if baseline else None, "targets": TARGETS,
                                    "machine": machine()})
    print(f"results: {path}")


if __name__ == "__main__":
    main()
