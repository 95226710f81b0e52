"""Benchmarks of the Elo family, as ratios to baselines timed in the same run.

1. Bradley-Terry fit on 10^6 battles over 200 models, from raw (a, b, outcome) arrays:
   vase (bincount to counts, Newton on the cells) against a FastChat-style fit (unique rows with
   their counts, ties as half a win each way, L-BFGS on the weighted logistic loss, as FastChat's
   `compute_mle_elo` describes it) and against evalica's Bradley-Terry.
2. Bootstrap: vase's 1000 Poisson rounds (Dask, local threads; chunks fitted together by the
   chord method) against FastChat-style 100 rounds (multinomial weights on the unique rows, one
   L-BFGS fit each), and against vase's plain path (one Newton fit per round), per round.
3. End to end (`--e2e`): 10^8 battle rows written as Parquet files of 10^7 rows, `Store.ingest`
   (timed separately), then `reduce_store` and `m-elo` with 1000 bootstrap rounds.

Run: `python -m benchmarks.bench_elo [--e2e]`; prints a table and writes benchmarks/results/elo.json.
"""

from __future__ import annotations

import argparse
import functools
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.optimize as opt

from benchmarks.common import best_of
from pipeline.methods.bradley_terry import STEP_TOL, Cells, fit
from pipeline.methods.m_elo import bootstrap_intervals, m_elo
from pipeline.methods.threads import one_blas_thread
from pipeline.stats.counts import PairwiseCounts
from pipeline.stats.game_pairs import PerGameCounts

MODELS, BATTLES, SEED = 200, 1_000_000, 20240901
RESULTS = Path(__file__).parent / "results" / "elo.json"


def battles(n: int, rows: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Uniform random pairs; outcome 0 a wins, 1 b wins, 2 tie (10%), Bradley-Terry strengths N(0, 1)."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 1, n)
    a = rng.integers(0, n, rows)
    b = (a + rng.integers(1, n, rows)) % n
    a_wins = rng.random(rows) < 1 / (1 + np.exp(strength[b] - strength[a]))
    return a, b, np.where(rng.random(rows) < 0.1, 2, np.where(a_wins, 0, 1)).astype(np.int8)


def vase_counts(n: int, a: np.ndarray, b: np.ndarray, outcome: np.ndarray) -> PairwiseCounts:
    decided = outcome < 2
    win, lose = np.where(outcome == 0, a, b)[decided], np.where(outcome == 0, b, a)[decided]
    wins = np.bincount(win * n + lose, minlength=n * n).reshape(n, n).astype(np.float64)
    tie = np.bincount(a[~decided] * n + b[~decided], minlength=n * n).reshape(n, n).astype(np.float64)
    return PairwiseCounts(np.arange(n), wins, tie + tie.T)


def fastchat_rows(n: int, a: np.ndarray, b: np.ndarray, outcome: np.ndarray) -> tuple[np.ndarray, ...]:
    """Unique (a, b, outcome) rows with counts; a tie is a half win for each side."""
    keys, counts = np.unique((a * n + b) * 3 + outcome, return_counts=True)
    ra, rb, ro = keys // 3 // n, keys // 3 % n, keys % 3
    return ra, rb, np.select([ro == 0, ro == 1], [1.0, 0.0], 0.5), counts.astype(np.float64)


def fastchat_fit(n: int, ra: np.ndarray, rb: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    def loss(beta):
        d = beta[ra] - beta[rb]
        p = 1 / (1 + np.exp(-d))
        value = -(w * (y * np.log(p) + (1 - y) * np.log1p(-p))).sum()
        g = w * (p - y)
        return value, np.bincount(ra, g, minlength=n) - np.bincount(rb, g, minlength=n)

    result = opt.minimize(loss, np.zeros(n), jac=True, method="L-BFGS-B", options={"gtol": 1e-6 * w.sum() / n})
    return result.x - result.x.mean()




def bench_fit(results: dict) -> None:
    a, b, outcome = battles(MODELS, BATTLES, SEED)
    # One BLAS thread, as the registry runs every method: a threaded BLAS on a busy 2-core machine
    # spends more time waiting for its threads than in the 200 x 200 Cholesky.
    with one_blas_thread():
        t_vase, ours_fit = best_of(lambda: fit(Cells.from_counts(vase_counts(MODELS, a, b, outcome))), 3)
    t_fc, beta_fc = best_of(lambda: fastchat_fit(MODELS, *fastchat_rows(MODELS, a, b, outcome)), 3)
    import evalica

    names = np.array([f"m{i:03d}" for i in range(MODELS)])
    winners = [evalica.Winner.X, evalica.Winner.Y, evalica.Winner.Draw]
    xs, ys, ws = names[a].tolist(), names[b].tolist(), [winners[o] for o in outcome.tolist()]
    t_ev, ev = best_of(lambda: evalica.bradley_terry(xs, ys, ws, tolerance=1e-10, limit=1000), 1)
    ev_beta = np.log(ev.scores.reindex(names).to_numpy())
    ours = ours_fit.beta
    results["fit"] = {
        "battles": BATTLES, "models": MODELS, "vase_s": t_vase, "fastchat_lbfgs_s": t_fc, "evalica_s": t_ev,
        "fastchat_over_vase": t_fc / t_vase, "evalica_over_vase": t_ev / t_vase,
        "max_abs_diff_fastchat": float(np.abs(ours - beta_fc).max()),
        "max_abs_diff_evalica": float(np.abs(ours - (ev_beta - ev_beta.mean())).max()),
        "evalica_note": "timed on Python lists of names, as its API takes them",
    }


def bench_bootstrap(results: dict) -> None:
    a, b, outcome = battles(MODELS, BATTLES, SEED)
    counts = vase_counts(MODELS, a, b, outcome)
    with one_blas_thread():
        t_vase, _ = best_of(lambda: m_elo(counts, PerGameCounts(None), np.arange(counts.n), bootstrap=1000, seed=1), 1)
    ra, rb, y, w = fastchat_rows(MODELS, a, b, outcome)
    rng = np.random.default_rng(1)

    def fastchat_bootstrap(rounds: int = 100) -> np.ndarray:
        draws = rng.multinomial(int(w.sum()), w / w.sum(), size=rounds)
        return np.array([fastchat_fit(MODELS, ra, rb, y, draw.astype(np.float64)) for draw in draws])

    t_fc, _ = best_of(fastchat_bootstrap, 1)
    cells = Cells.from_counts(counts)
    full, options = fit(cells), {"davidson": False, "prior": 0.0, "tol": STEP_TOL, "max_iter": 100}
    t_plain, _ = best_of(lambda: bootstrap_intervals(cells, full, options, 100, 1, 400.0, 1000.0, algorithm="newton"), 1)
    results["bootstrap"] = {"vase_1000_rounds_s": t_vase, "fastchat_100_rounds_s": t_fc,
                            "fastchat100_over_vase1000": t_fc / t_vase, "vase_plain_100_rounds_s": t_plain,
                            "plain_over_chord_per_round": t_plain * 10 / t_vase}


def bench_end_to_end(results: dict, rows: int = 100_000_000, per_file: int = 10_000_000) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.stats import reduce_store
    from pipeline.store import Store

    names = np.array([f"model-{i:03d}" for i in range(MODELS)], dtype=object)
    labels = np.array(["model_a", "model_b", "tie"], dtype=object)
    per_file = min(per_file, rows)
    with tempfile.TemporaryDirectory(dir=Path(__file__).parent / "results") as tmp:
        tmp = Path(tmp)
        paths, t_write = [], 0.0
        for part in range(rows // per_file):
            start = time.perf_counter()
            a, b, outcome = battles(MODELS, per_file, SEED + part)
            path = tmp / f"battles-{part:02d}.parquet"
            pq.write_table(pa.table({"model_a": pa.array(names[a], pa.string()), "model_b": pa.array(names[b], pa.string()),
                                     "winner": pa.array(labels[outcome], pa.string())}), path)
            paths.append(path)
            t_write += time.perf_counter() - start
        print(f"  generated {rows} rows in {t_write:.1f} s", flush=True)
        store, t_ingest = Store(tmp / "store"), 0.0
        for path in paths:
            t_file, _ = best_of(lambda: store.ingest([path], "battles"), 1)
            t_ingest += t_file
            print(f"  ingested {path.name} in {t_file:.1f} s", flush=True)
        t_reduce, stats = best_of(lambda: reduce_store(store, "battles", {"pairwise", "pairwise_per_game"}), 1)
        print(f"  reduced in {t_reduce:.1f} s", flush=True)
        t_rate, ratings = best_of(lambda: m_elo(stats.pairwise, stats.extra["pairwise_per_game"], stats.agent_keys, bootstrap=1000, seed=1), 1)
    results["end_to_end"] = {"rows": rows, "files": len(paths), "generate_s": t_write, "ingest_s": t_ingest,
                             "reduce_s": t_reduce, "m_elo_1000_bootstrap_s": t_rate,
                             "store_to_ratings_s": t_reduce + t_rate, "agents": int(len(ratings.agents))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--e2e", action="store_true", help="also run the 10^8-row end-to-end benchmark")
    parser.add_argument("--e2e-only", action="store_true")
    parser.add_argument("--e2e-rows", type=int, default=100_000_000, help="rows of the end-to-end benchmark (10^7 per file)")
    args = parser.parse_args()
    results: dict = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    steps = [] if args.e2e_only else [bench_fit, bench_bootstrap]
    steps += [functools.partial(bench_end_to_end, rows=args.e2e_rows)] if args.e2e or args.e2e_only else []
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    for step in steps:
        print(f"running {getattr(step, 'func', step).__name__}", flush=True)
        step(results)
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")  # each section as soon as it is done
    for section, values in results.items():
        print(f"\n{section}")
        for key, value in values.items():
            print(f"  {key:32s} {value:.4g}" if isinstance(value, float) else f"  {key:32s} {value}")


if __name__ == "__main__":
    main()
