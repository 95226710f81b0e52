"""Benchmark: m-Elo with 1000 bootstrap rounds on sparse comparison graphs, past the dense limit.

1. A WTA-like graph (fixed seed): 2,692 players and 68,624 matches, as in the WTA tour
   2000-2024, with a heavy-tailed number of matches per player (log-normal activity, median
   about 6, a few players with ~1,000; stronger players play more) and Bradley-Terry outcomes.
   Many players never win, so the MLE does not exist: rated with a small prior (0.01).
2. The Diplomacy-scale games log of `pipeline.backtest.synthetic` (31,049 seven-player games,
   52,958 players), fitted on the 21 pairs of each game (`games=pairs`), prior 0.01.

The baseline, measured in the same run, is the code path before rounds were fitted together on
sparse graphs: one Newton fit per round over arrays (`bradley_terry.COMPILED` off), each Newton
system solved by scipy's Jacobi-preconditioned `cg` (`baseline_laplacian_solve`, a copy kept only
here). It costs seconds per
round, so it runs `--baseline-rounds` rounds and is quoted per round and scaled to the rounds.
The new path runs every round on a loopback LocalCluster of `--workers` single-threaded workers;
100 rounds are checked for the same bytes there and in one process. CPU seconds per round of both
paths, in this process, are the comparison that holds on a loaded machine (wall times of a
cluster and of one process are not). A ratio is printed only where the two paths agree: full fits
within `TOL_BETA`, and the intervals of the baseline's rounds, redrawn on the new path, within
`TOL_INTERVAL` Elo points. The baseline is vase's own earlier code: no peer fits a bootstrap of
m-Elo on graphs this sparse (bench_elo's peers run on the dense pool).

The one-step bootstrap (`refit=onestep`) is timed beside the exact refit on the same cluster in the same run:
`--onestep-rounds` one-step rounds against `--exact-rounds` exact ones (default the same number; fewer keeps a
Diplomacy-scale run short: the exact time is then scaled to the one-step's rounds, and printed as measured and as
scaled). The ratio is printed only where at least 99% of the agents' endpoints are within 10% of the exact
interval's width, both bootstraps taking the same `--exact-rounds` draws (the first rounds of a longer run:
the seeded chunks do not depend on the number of rounds). Beside each wall time, the CPU seconds of the workers
and of this process (the client: the rows received, the percentiles per agent), which hold on a loaded machine.

Run: `python -m benchmarks.bench_m_elo_sparse [--diplomacy] [--onestep-rounds 1000] [--exact-rounds 100]`; writes
benchmarks/results/m_elo_sparse.json. The issue's case, kept short:
`--diplomacy --rounds 50 --check-rounds 50 --onestep-rounds 1000 --exact-rounds 100`.
"""

from __future__ import annotations

import argparse
import os
import time
from unittest import mock

import dask
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from benchmarks.common import PER_ROUND, SOLVER_ONLY, Comparison, Verdict, report
from pipeline.methods.bradley_terry import core as bradley_terry
from pipeline.methods.bradley_terry.core import Cells, fit
from pipeline.methods.bradley_terry.m_elo import bootstrap_intervals
from pipeline.methods.bradley_terry.steps import CG_FORCING

SEED, PRIOR = 20250101, 0.01
TOL_BETA = 1e-6      # natural units: the full fits' stopping error is below 1e-8
TOL_INTERVAL = 0.01  # Elo points: each round is fitted to ROUND_TOL on either path


def wta_like(players: int = 2_692, matches: int = 68_624, seed: int = SEED) -> Cells:
    """Cells of a WTA-like match graph (see the module docstring)."""
    rng = np.random.default_rng(seed)
    skill = rng.normal(0.0, 1.0, players)
    activity = np.exp(np.log(6.0) + 2.0 * (0.6 * skill + 0.8 * rng.normal(0.0, 1.0, players)))
    seats = 1 + np.floor(activity / activity.sum() * (2 * matches - players)).astype(np.int64)
    slots = rng.permutation(np.repeat(np.arange(players), seats))
    slots = slots[: len(slots) // 2 * 2]
    a, b = slots[0::2], slots[1::2]
    keep = a != b
    a, b = a[keep], b[keep]
    a_wins = rng.random(len(a)) < 1 / (1 + np.exp(-(skill[a] - skill[b])))
    winner, loser = np.where(a_wins, a, b), np.where(a_wins, b, a)
    columns = np.zeros((len(a), 3))
    columns[:, 0], columns[:, 1] = winner < loser, winner > loser
    return Cells.summed(players, np.minimum(a, b), np.maximum(a, b), columns)


def diplomacy_like(seed: int = 0) -> Cells:
    """Cells of the 21 pairs of every game of the Diplomacy-scale synthetic log (ties: equal centres)."""
    from pipeline.backtest.synthetic import diplomacy_games

    games = diplomacy_games(seed=seed)
    seats = 7
    player = np.array([int(name[1:]) for name in games.table.column("player").to_pylist()]).reshape(-1, seats)
    score = np.asarray(games.table.column("score").to_numpy(), dtype=float).reshape(-1, seats)
    i, j = np.triu_indices(seats, 1)
    a, b = player[:, i].ravel(), player[:, j].ravel()
    sa, sb = score[:, i].ravel(), score[:, j].ravel()
    a_first = a < b
    x, y = np.where(a_first, a, b), np.where(a_first, b, a)
    x_score, y_score = np.where(a_first, sa, sb), np.where(a_first, sb, sa)
    columns = np.column_stack([x_score > y_score, y_score > x_score, x_score == y_score]).astype(float)
    return Cells.summed(len(games.names), x, y, columns)


def baseline_laplacian_solve(cells, h, prior, rhs, rtol=CG_FORCING[1], log=None):
    """The sparse solve before this benchmark's change: scipy `cg` per column, Jacobi preconditioner."""
    n = cells.n
    degree = np.bincount(cells.x, h, minlength=n) + np.bincount(cells.y, h, minlength=n) + prior
    lap = sp.csr_array((np.r_[-h, -h, degree], (np.r_[cells.x, cells.y, np.arange(n)], np.r_[cells.y, cells.x, np.arange(n)])),
                       shape=(n, n))
    jacobi = sp.diags_array(1.0 / degree)
    out = np.empty_like(rhs)
    for col in range(rhs.shape[1]):
        b = rhs[:, col] - (rhs[:, col].mean() if prior == 0 else 0.0)
        out[:, col], _ = spla.cg(lap, b, rtol=rtol, maxiter=10 * n, M=jacobi)
    return out - out.mean(axis=0) if prior == 0 else out


def bench_graph(name: str, cells: Cells, rounds: int, baseline_rounds: int, workers: int, check_rounds: int = 100,
                one_step_rounds: int = 100, exact_rounds: int | None = None) -> dict:
    from distributed import Client, LocalCluster

    options = {"davidson": False, "prior": PRIOR, "tol": bradley_terry.STEP_TOL, "max_iter": 100}
    degree = np.bincount(np.r_[cells.x, cells.y], minlength=cells.n)
    print(f"{name}: {cells.n} players, {len(cells.x)} compared pairs, pairs per player median "
          f"{np.median(degree):.0f}, max {degree.max()}", flush=True)
    fit(wta_like(players=300, matches=1_000), prior=PRIOR)  # numba's compiled code loaded before the clock starts
    start = time.perf_counter()
    full = fit(cells, prior=PRIOR)
    t_fit = time.perf_counter() - start
    with mock.patch.object(bradley_terry, "laplacian_solve", baseline_laplacian_solve), \
            mock.patch.object(bradley_terry, "COMPILED", False):
        start = time.perf_counter()
        baseline_full = fit(cells, prior=PRIOR)
        t_fit_baseline = time.perf_counter() - start
        start, cpu = time.perf_counter(), time.process_time()
        baseline_columns, _ = bootstrap_intervals(cells, baseline_full, options, baseline_rounds, 1, 400.0, 1000.0,
                                                  algorithm="newton")
        per_round_baseline = (time.perf_counter() - start) / baseline_rounds
        cpu_per_round_baseline = (time.process_time() - cpu) / baseline_rounds
    print(f"  full fit {t_fit:.2f} s (baseline {t_fit_baseline:.2f} s); baseline bootstrap {per_round_baseline:.2f} s per "
          f"round ({baseline_rounds} rounds)", flush=True)
    result = {"players": cells.n, "pairs": len(cells.x), "rounds": rounds, "workers": workers,
              "full_fit_s": t_fit, "baseline_full_fit_s": t_fit_baseline,
              "baseline_per_round_s": per_round_baseline, "baseline_rounds_measured": baseline_rounds,
              "max_rating_difference_vs_baseline_fit": float(np.abs(full.beta - baseline_full.beta).max())}
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.run(lambda: None)  # workers up before the clock starts
        start = time.perf_counter()
        _, info = bootstrap_intervals(cells, full, options, rounds, 1, 400.0, 1000.0, client=client)
        result[f"bootstrap_{workers}_workers_s"] = time.perf_counter() - start
        on_cluster, _ = bootstrap_intervals(cells, full, options, check_rounds, 2, 400.0, 1000.0, client=client)
        exact_rounds = exact_rounds or one_step_rounds
        start, cpu = time.perf_counter(), cpu_seconds(client)
        exact, _ = bootstrap_intervals(cells, full, options, exact_rounds, 1, 400.0, 1000.0, client=client)
        result[f"exact_{exact_rounds}_rounds_{workers}_workers_s"] = time.perf_counter() - start
        result["exact_workers_cpu_s"], result["exact_client_cpu_s"] = np.subtract(cpu_seconds(client), cpu).tolist()
        result[f"exact_{one_step_rounds}_rounds_{workers}_workers_s"] = (
            result[f"exact_{exact_rounds}_rounds_{workers}_workers_s"] * one_step_rounds / exact_rounds)  # scaled if fewer
        start, cpu = time.perf_counter(), cpu_seconds(client)
        one_step, _ = bootstrap_intervals(cells, full, options, one_step_rounds, 1, 400.0, 1000.0, algorithm="onestep", client=client)
        result[f"onestep_{one_step_rounds}_rounds_{workers}_workers_s"] = time.perf_counter() - start
        result["onestep_workers_cpu_s"], result["onestep_client_cpu_s"] = np.subtract(cpu_seconds(client), cpu).tolist()
        result["onestep_load_average"] = os.getloadavg()[0]
        if exact_rounds != one_step_rounds:  # the exact rounds' draws
            one_step, _ = bootstrap_intervals(cells, full, options, exact_rounds, 1, 400.0, 1000.0, algorithm="onestep", client=client)
    result["onestep_rounds"], result["exact_rounds"] = one_step_rounds, exact_rounds
    result["onestep_share_within_a_tenth"] = share_within_a_tenth(exact, one_step)
    result["bootstrap_info"] = info
    with dask.config.set(scheduler="sync"):  # the same rounds in this one process
        cpu = time.process_time()
        alone, _ = bootstrap_intervals(cells, full, options, check_rounds, 2, 400.0, 1000.0)
        result["cpu_per_round_s"] = (time.process_time() - cpu) / check_rounds
    result["baseline_cpu_per_round_s"] = cpu_per_round_baseline
    same_rounds, _ = bootstrap_intervals(cells, full, options, baseline_rounds, 1, 400.0, 1000.0)  # the baseline's draws
    result["cpu_per_round_ratio"] = cpu_per_round_baseline / result["cpu_per_round_s"]
    result[f"same_bytes_{workers}_workers_and_one_process"] = all(
        alone[k].tobytes() == on_cluster[k].tobytes() for k in alone)
    new = result[f"bootstrap_{workers}_workers_s"]
    result["baseline_estimated_s"] = per_round_baseline * rounds
    result["speedup_vs_baseline"] = per_round_baseline * rounds / new
    result["comparisons"] = comparisons(name, result, agreement(full.beta, baseline_full.beta, same_rounds, baseline_columns))
    k, e = result["onestep_rounds"], result["exact_rounds"]
    scaled = "" if e == k else f" ({e} rounds measured in {result[f'exact_{e}_rounds_{workers}_workers_s']:.1f} s, scaled)"
    print(f"  {k} rounds on {workers} workers: exact refit {result[f'exact_{k}_rounds_{workers}_workers_s']:.1f} s{scaled}, "
          f"one-step {result[f'onestep_{k}_rounds_{workers}_workers_s']:.1f} s; {result['onestep_share_within_a_tenth']:.2%} of "
          f"the endpoints of {e} rounds within 10% of the exact width", flush=True)
    print(f"  CPU seconds, the workers' and this process's: one-step {result['onestep_workers_cpu_s']:.1f} + "
          f"{result['onestep_client_cpu_s']:.1f}, exact refit ({e} rounds) {result['exact_workers_cpu_s']:.1f} + "
          f"{result['exact_client_cpu_s']:.1f}; load {result['onestep_load_average']:.1f}", flush=True)
    print(f"  bootstrap {rounds} rounds on {workers} workers {new:.1f} s; {check_rounds} rounds give the same bytes on "
          f"{workers} workers and in one process: {result[f'same_bytes_{workers}_workers_and_one_process']} (the ratios, "
          "checked, follow)", flush=True)
    return result


def cpu_seconds(client) -> tuple[float, float]:
    """CPU seconds so far of the cluster's worker processes (summed) and of this process: on a shared machine the
    wall time of a run says how much of the cores it got, these what it cost."""
    return sum(client.run(time.process_time).values()), time.process_time()


def share_within_a_tenth(exact: dict, one_step: dict) -> float:
    """The share of agents whose one-step endpoints are both within 10% of the exact interval's width (the
    acceptance of `refit=onestep`: at least 99%)."""
    width = exact["ci_high"] - exact["ci_low"]
    gap = np.maximum(np.abs(one_step["ci_low"] - exact["ci_low"]), np.abs(one_step["ci_high"] - exact["ci_high"]))
    measured = np.isfinite(width)
    return float(np.mean(gap[measured] <= 0.1 * width[measured]))


def agreement(beta: np.ndarray, baseline_beta: np.ndarray, columns: dict, baseline_columns: dict) -> Verdict:
    """The full fits within `TOL_BETA` and the intervals of the same rounds within `TOL_INTERVAL` Elo points."""
    fit_gap = float(np.abs(beta - baseline_beta).max())
    bounds = np.r_[columns["ci_low"], columns["ci_high"]]
    baseline_bounds = np.r_[baseline_columns["ci_low"], baseline_columns["ci_high"]]
    if not np.array_equal(np.isnan(bounds), np.isnan(baseline_bounds)):
        return Verdict(False, "non-result: intervals missing on one side only")
    interval_gap = float(np.nanmax(np.abs(bounds - baseline_bounds), initial=0.0))
    return Verdict(fit_gap <= TOL_BETA and interval_gap <= TOL_INTERVAL,
                   f"full fit max |difference| {fit_gap:.2g} (tolerance {TOL_BETA:g}, natural units); the same rounds' "
                   f"interval bounds max |difference| {interval_gap:.2g} Elo (tolerance {TOL_INTERVAL:g})")


def comparisons(name: str, result: dict, verdict: Verdict) -> list[Comparison]:
    """vase's current path against its previous one (not a peer: no peer fits a bootstrap on these graphs)."""
    baseline = "previous path (scipy cg, one Newton fit per round; vase's own, copied here)"
    workers, rounds = result["workers"], result["rounds"]
    case = f"m-elo prior {PRIOR}, {name} ({result['players']:,} players)"
    return [Comparison(f"full fit, {case}", SOLVER_ONLY, baseline, result["full_fit_s"], result["baseline_full_fit_s"],
                       verdict),
            Comparison(f"bootstrap, {case}", f"{PER_ROUND}, CPU seconds in this process", baseline,
                       result["cpu_per_round_s"], result["baseline_cpu_per_round_s"], verdict),
            Comparison(f"bootstrap, {case}, {result['onestep_rounds']} rounds on {workers} workers: one-step (refit=onestep)",
                       "wall time, solver only", f"the exact refit (refit=exact), the same draws{scaled_from(result)}",
                       result[f"onestep_{result['onestep_rounds']}_rounds_{workers}_workers_s"],
                       result[f"exact_{result['onestep_rounds']}_rounds_{workers}_workers_s"],
                       Verdict(result["onestep_share_within_a_tenth"] >= 0.99,
                               f"{result['onestep_share_within_a_tenth']:.2%} of the agents' one-step endpoints within 10% "
                               "of the exact interval's width (acceptance: 99%)")),
            Comparison(f"bootstrap, {case}, {rounds} rounds on {workers} workers against the baseline's "
                       f"{result['baseline_rounds_measured']} rounds scaled", "wall time, solver only", baseline,
                       result[f"bootstrap_{workers}_workers_s"], result["baseline_estimated_s"], verdict)]


def scaled_from(result: dict) -> str:
    """How the exact refit's time was had: measured on the one-step's rounds, or on fewer and scaled."""
    k, e = result["onestep_rounds"], result["exact_rounds"]
    return "" if e == k else f", {e} rounds measured and scaled to {k}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--baseline-rounds", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--check-rounds", type=int, default=100, help="rounds checked for the same bytes")
    parser.add_argument("--diplomacy", action="store_true", help="also the Diplomacy-scale log (52,958 players)")
    parser.add_argument("--onestep-rounds", type=int, default=100,
                        help="rounds timed by the one-step bootstrap beside the exact refit (1000: the issue's case)")
    parser.add_argument("--exact-rounds", type=int, default=None,
                        help="rounds of the exact refit beside it (default: as many), scaled to the one-step's")
    args = parser.parse_args()
    results = {"load_average": os.getloadavg()[0],
               "wta_like": bench_graph("WTA-like", wta_like(), args.rounds, args.baseline_rounds, args.workers,
                                       args.check_rounds, args.onestep_rounds, args.exact_rounds)}
    if args.diplomacy:
        results["diplomacy"] = bench_graph("Diplomacy-scale", diplomacy_like(), args.rounds, 2, args.workers,
                                             args.check_rounds, args.onestep_rounds, args.exact_rounds)
    found = [c for key in ("wta_like", "diplomacy") if key in results for c in results[key].pop("comparisons")]
    print(f"written {report('m_elo_sparse', found, results)}")


if __name__ == "__main__":
    main()
