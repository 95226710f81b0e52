"""Benchmarks of the Elo family, as ratios to baselines timed in the same run.

1. Bradley-Terry fit on 10^6 battles over 200 models, from raw (a, b, outcome) arrays:
   vase (bincount to counts, Newton on the cells) against a FastChat-style fit (unique rows with
   their counts, ties as half a win each way, L-BFGS on the weighted logistic loss, as FastChat's
   `compute_mle_elo` describes it) and against evalica's Bradley-Terry.
2. Bootstrap: vase's 1000 Poisson rounds (Dask, local threads; chunks fitted together by the
   chord method) against FastChat-style 100 rounds (multinomial weights on the unique rows, one
   L-BFGS fit each), and against vase's plain path (one Newton fit per round), per round.
The end to end run at 10^8 rows (ingest, reduce, elo and m-elo with 1000 rounds, peak memory of
every process) is `benchmarks.bench_scale`.

Run: `python -m benchmarks.bench_elo`; prints a table and writes benchmarks/results/elo.json.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import scipy.optimize as opt

from benchmarks.common import best_of
from pipeline.methods.bradley_terry.core import STEP_TOL, Cells, fit
from pipeline.methods.bradley_terry.m_elo import bootstrap_intervals, m_elo
from pipeline.methods.numerics.threads import one_blas_thread
from pipeline.stats.counts import PairwiseCounts

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
        t_vase, _ = best_of(lambda: m_elo(counts, np.arange(counts.n), bootstrap=1000, seed=1), 1)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    results: dict = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    steps = [bench_fit, bench_bootstrap]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    for step in steps:
        print(f"running {step.__name__}", flush=True)
        step(results)
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")  # each section as soon as it is done
    for section, values in results.items():
        print(f"\n{section}")
        for key, value in values.items():
            print(f"  {key:32s} {value:.4g}" if isinstance(value, float) else f"  {key:32s} {value}")


if __name__ == "__main__":
    main()
