"""Benchmark: the Diplomacy-scale backtest of [VasE] section 4.3 on this machine.

A synthetic log of the paper's size (31,049 seven-player games, 52,958 players; seed 0) is written,
ingested into a fresh store and backtested over 50 random splits of 3,000 test games with the
seven methods of the issue. Methods not registered yet are reported as missing and the others are
measured; each step's time is printed as soon as it finishes. Timings: the backtest in one process
(no Dask), on a LocalCluster of 1 worker and of 2 workers (cluster start-up not counted); ratios
are to the same run's 1-worker time, and the three result tables must be identical. Then a
profile: the CPU seconds per split of each stage (the training statistics, each method's fit, the
scoring), over `--profile` splits after a first one that loads the compiled code.

    python -m benchmarks.bench_backtest [--splits 50] [--test-size 3000] [--profile 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from pipeline.runtime import dask_client
from pipeline.backtest.evaluate import log_counts, rate_split, run_backtest, score_split, task_label, task_seed, training_statistics
from pipeline.backtest.units import load_units
from pipeline.backtest.splits import random_splits
from pipeline.backtest.summary import summarise
from pipeline.backtest.synthetic import diplomacy_games, write_games
from pipeline.methods import REGISTRY, Spec, needed_statistics
from pipeline.store import Store
from pipeline.store.files import write_json

# m-Elo with a small prior: in Diplomacy-scale training sets many players never win (or never
# lose), so the maximum-likelihood ratings do not exist; bootstrap intervals do not order games.
METHODS = ("approval:k=2", "approval:k=3", "plurality", "borda", "copeland", "elo", "m-elo:prior=0.01,bootstrap=0")
RESULTS = Path(__file__).resolve().parent / "results" / "backtest.json"


def stage_profile(log, splits, specs: list[Spec]) -> tuple[dict[str, float], float]:
    """CPU seconds per split of each stage, in this process (the first split only warms up), and
    of the whole log's counts, computed once per backtest."""
    statistics = needed_statistics(specs)
    cpu: dict[str, float] = {"training statistics": 0.0} | {f"fit {task_label(s)}": 0.0 for s in specs} | {"scoring": 0.0}
    start = time.process_time()
    whole = log_counts(log, statistics)
    once = time.process_time() - start
    for i, split in enumerate(splits):
        start = time.process_time()
        stats = training_statistics(log, split, statistics, whole)
        lap = {"training statistics": time.process_time() - start}
        for spec in specs:
            start = time.process_time()
            ratings = rate_split(stats, spec, task_seed(split, spec))
            middle = time.process_time()
            score_split(log, split, ratings)
            lap[f"fit {task_label(spec)}"] = middle - start
            lap["scoring"] = lap.get("scoring", 0.0) + time.process_time() - middle
        if i:
            cpu = {step: seconds + lap.get(step, 0.0) for step, seconds in cpu.items()}
    return {step: seconds / (len(splits) - 1) for step, seconds in cpu.items()}, once


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=50)
    parser.add_argument("--test-size", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", type=int, default=3, help="splits profiled stage by stage, after a warm-up split (0: none)")
    args = parser.parse_args()
    present = [m for m in METHODS if m.partition(":")[0] in REGISTRY]
    missing = [m for m in METHODS if m not in present]
    timings: dict[str, float] = {}

    def done(step: str, start: float) -> None:
        timings[step] = time.perf_counter() - start
        print(f"{step:<28}{timings[step]:>10.2f} s", flush=True)

    with tempfile.TemporaryDirectory(prefix="vase-bench-backtest-") as scratch:
        start = time.perf_counter()
        games = diplomacy_games(seed=args.seed)
        path = write_games(Path(scratch) / "diplomacy.parquet", games)
        done("generate", start)
        store = Store(Path(scratch) / "store")
        start = time.perf_counter()
        store.ingest([path], "games")
        done("ingest", start)
        start = time.perf_counter()
        log = load_units(store, "games", needed_statistics(present))
        splits = random_splits(log.units, args.splits, args.test_size, args.seed)
        done("load + split", start)

        start = time.perf_counter()
        serial = run_backtest(log, splits, present)
        done("backtest, one process", start)
        tables = {}
        for workers in (1, 2):
            with dask_client(None, workers) as client:
                client.wait_for_workers(workers)
                start = time.perf_counter()
                tables[workers] = run_backtest(log, splits, present, client=client)
                done(f"backtest, {workers} worker{'s' * (workers > 1)}", start)
    identical = serial.equals(tables[1]) and serial.equals(tables[2])
    base = timings["backtest, 1 worker"]
    labels = [task_label(Spec.parse(m)) for m in present]  # how the results name each method
    reference = task_label(Spec.parse("elo" if "elo" in present else "copeland"))
    summary = summarise(serial, labels, reference).to_pylist()

    print(f"\nDiplomacy-scale backtest: {log.units} games, {log.n} players, {args.splits} splits x {len(present)} methods "
          f"({args.test_size} test games each)")
    print(f"methods measured: {', '.join(present)}")
    print(f"methods missing (not registered yet): {', '.join(missing) or 'none'}")
    print(f"{'step':<28}{'seconds':>10}{'ratio to 1 worker':>20}")
    for step, seconds in timings.items():
        ratio = f"{seconds / base:.2f}" if step.startswith("backtest") else ""
        print(f"{step:<28}{seconds:>10.2f}{ratio:>20}")
    print(f"speed-up from 1 to 2 workers: {base / timings['backtest, 2 workers']:.2f}x; results identical: {identical}")
    profile, once = {}, 0.0
    if args.profile:
        profiled = random_splits(log.units, args.profile + 1, args.test_size, args.seed)
        profile, once = stage_profile(log, profiled, [Spec.parse(m) for m in present])
        total = sum(profile.values())
        print(f"\nCPU seconds per split, one process ({args.profile} splits after a warm-up): {total:.2f}, "
              f"and {once:.2f} once for the whole log's counts")
        for step, seconds in profile.items():
            print(f"  {step:<100}{seconds:>8.3f}{100 * seconds / total:>7.1f}%")
    print(f"\n{'method':<16}{'mean Kd':>10}{'95% interval':>22}  vs {reference}")
    for row in summary:
        print(f"{row['method']:<16}{row['mean']:>10.3f}   [{row['ci_low']:.3f}, {row['ci_high']:.3f}]  {row['verdict'] or ''}")
    write_json(RESULTS, {"games": log.units, "players": log.n, "splits": args.splits, "test_size": args.test_size,
                         "seed": args.seed, "methods": present, "missing": missing, "seconds": timings,
                         "speedup_2_vs_1_worker": base / timings["backtest, 2 workers"], "identical": identical,
                         "summary": summary, "reference": reference, "cpu_per_split": profile, "cpu_whole_log_counts": once})
    print(f"\nwritten {RESULTS}")


if __name__ == "__main__":
    main()
