"""Bradley-Terry (m-Elo) against its peers' own code, timed in one run; a ratio counts only where the
contender's answer is vase's within `TOL_ELO` Elo points (both centred on their mean).

Data: `--battles` (1e6) uniform random battles over `--models` (200), 10% ties, Bradley-Terry
strengths N(0, 1); with `--wta`, also the WTA tour 2000-2024 (2,692 players, 68,624 matches,
/work/shared/datasets/wta_matches), where many players never win, so vase rates it with prior 0.01.

Contenders (where their code comes from):
- FastChat: `compute_bt`, `fit_bt` and `compute_bootstrap_bt` of fastchat/serve/monitor/rating_systems.py,
  copied verbatim in benchmarks/peers/fastchat_rating_systems.py (its defaults: L-BFGS, gtol 1e-6,
  at most 100 iterations).
- choix: `ilsr_pairwise_dense` on the win matrix, ties as half a win each way; on WTA `opt_pairwise`
  with alpha = prior / 2, the same Gaussian prior as vase's.
- evalica: `bradley_terry` on lists of names, its API (tolerance 1e-10, limit 1000).
- rewrite: `lbfgs_rewrite`, the scipy L-BFGS this benchmark used to call "FastChat" (gtol scaled by the
  battles, no iteration cap), vase's rewrite of FastChat's approach, not FastChat's code; kept beside it.

What is compared (each printed line names it):
1. solver only: each side's solver on its own summary of the battles, built before the clock starts
   (vase `fit` on its cells, FastChat `fit_bt` on `preprocess_for_bt`'s unique rows, choix on its win
   matrix); evalica has no entry point below its API, so its line times the API on lists.
2. bootstrap, per round: `--rounds` (100) resample rounds on each side, one core each (vase's chunks
   under Dask's synchronous scheduler; FastChat's `fit_bt` on each round's multinomial weights, the
   function its process pool maps; numba compiles vase's before the clock starts). The answers are
   checked on the 95% intervals' widths: the median over models of their width / vase's within
   1 +- `TOL_WIDTH` (each side's draws are its own, so only their spread can be compared).
3. whole command: a fresh process from the CSV file to written ratings, `vase rate FILE -m
   m-elo:bootstrap=0` against `python -m benchmarks.peers.rate_file PEER FILE` (pandas reads the CSV,
   the peer rates it): start-up, reading, aggregation and writing included on both sides.

Run: `python -m benchmarks.bench_elo [--battles N] [--rounds R] [--wta]`; prints one line per comparison
and writes benchmarks/results/elo.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dask
import numpy as np
import pandas as pd
import polars as pl
import scipy.optimize as opt

from benchmarks.common import (PER_ROUND, SOLVER_ONLY, WHOLE_COMMAND, Comparison, Verdict, best_of, non_result, report,
                               scores_agree)
from benchmarks.peers import fastchat_rating_systems as fastchat
from pipeline.methods.bradley_terry.core import STEP_TOL, Cells, fit
from pipeline.methods.bradley_terry.m_elo import bootstrap_intervals
from pipeline.methods.numerics.threads import one_blas_thread
from pipeline.stats.counts import PairwiseCounts

MODELS, BATTLES, ROUNDS, SEED, WTA_PRIOR = 200, 1_000_000, 100, 20240901, 0.01
TOL_ELO = 1.0     # Elo points: well above every solver's stopping error, far below a rating's 95% interval
TOL_WIDTH = 0.1   # bootstrap: the median over models of two independent estimates of each 95% interval's width
ELO = 400 / math.log(10)  # Elo points per natural unit (vase's beta, choix's and evalica's log-strengths)
ROOT = Path(__file__).resolve().parents[1]
WTA = Path("/work/shared/datasets/wta_matches/wta_matches_2000_2024.parquet")
OUTCOMES = np.array(["model_a", "model_b", "tie"])


def battles(n: int, rows: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Uniform random pairs; outcome 0 a wins, 1 b wins, 2 tie (10%), Bradley-Terry strengths N(0, 1)."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 1, n)
    a = rng.integers(0, n, rows)
    b = (a + rng.integers(1, n, rows)) % n
    a_wins = rng.random(rows) < 1 / (1 + np.exp(strength[b] - strength[a]))
    return a, b, np.where(rng.random(rows) < 0.1, 2, np.where(a_wins, 0, 1)).astype(np.int8)


def names(n: int) -> np.ndarray:
    return np.array([f"m{i:03d}" for i in range(n)])


def battle_frame(n: int, a: np.ndarray, b: np.ndarray, outcome: np.ndarray) -> pd.DataFrame:
    """The battles as FastChat's functions take them: model_a, model_b, winner."""
    labels = names(n)
    return pd.DataFrame({"model_a": labels[a], "model_b": labels[b], "winner": OUTCOMES[outcome]})


def vase_counts(n: int, a: np.ndarray, b: np.ndarray, outcome: np.ndarray) -> PairwiseCounts:
    decided = outcome < 2
    win, lose = np.where(outcome == 0, a, b)[decided], np.where(outcome == 0, b, a)[decided]
    wins = np.bincount(win * n + lose, minlength=n * n).reshape(n, n).astype(np.float64)
    tie = np.bincount(a[~decided] * n + b[~decided], minlength=n * n).reshape(n, n).astype(np.float64)
    return PairwiseCounts(np.arange(n), wins, tie + tie.T)


def win_matrix(counts: PairwiseCounts) -> np.ndarray:
    """choix's input: wins[i, j] = times i beat j, a tie half a win each way."""
    return np.asarray(counts.wins, dtype=float) + np.asarray(counts.ties, dtype=float) / 2


def unique_rows(n: int, a: np.ndarray, b: np.ndarray, outcome: np.ndarray) -> tuple[np.ndarray, ...]:
    """The rewrite's summary: unique (a, b, outcome) rows with counts; a tie is a half win for each side."""
    keys, counts = np.unique((a * n + b) * 3 + outcome, return_counts=True)
    ra, rb, ro = keys // 3 // n, keys // 3 % n, keys % 3
    return ra, rb, np.select([ro == 0, ro == 1], [1.0, 0.0], 0.5), counts.astype(np.float64)


def lbfgs_rewrite(n: int, ra: np.ndarray, rb: np.ndarray, y: np.ndarray, w: np.ndarray, prior: float = 0.0) -> np.ndarray:
    """vase's rewrite of FastChat's approach (weighted logistic loss on unique rows, L-BFGS), natural units."""
    def loss(beta):
        d = beta[ra] - beta[rb]
        p = 1 / (1 + np.exp(-d))
        value = -(w * (y * np.log(p) + (1 - y) * np.log1p(-p))).sum() + prior / 2 * beta @ beta
        g = w * (p - y)
        return value, np.bincount(ra, g, minlength=n) - np.bincount(rb, g, minlength=n) + prior * beta

    result = opt.minimize(loss, np.zeros(n), jac=True, method="L-BFGS-B", options={"gtol": 1e-6 * w.sum() / n})
    return result.x - result.x.mean()


def evalica_elo(labels: np.ndarray, a: np.ndarray, b: np.ndarray, outcome: np.ndarray):
    """evalica's Bradley-Terry on lists of names (its API), timed from the lists: returns a thunk, which
    answers None where evalica is not installed (it comes with the bench extra)."""
    try:
        import evalica
    except ImportError:
        return lambda: None

    winners = [evalica.Winner.X, evalica.Winner.Y, evalica.Winner.Draw]
    xs, ys, ws = labels[a].tolist(), labels[b].tolist(), [winners[o] for o in outcome.tolist()]

    def run() -> np.ndarray:
        result = evalica.bradley_terry(xs, ys, ws, tolerance=1e-10, limit=1000)
        return ELO * np.log(result.scores.reindex(labels).to_numpy(dtype=float))

    return run


def evalica_verdict(ours: np.ndarray, theirs: np.ndarray | None) -> Verdict:
    if theirs is None:
        return non_result("evalica is not installed (pip install '.[bench]')")
    return scores_agree(ours, theirs, TOL_ELO, " Elo")


def fit_comparisons(n: int, a: np.ndarray, b: np.ndarray, outcome: np.ndarray, case: str) -> list[Comparison]:
    """Solver only, on one data set without a prior (the MLE exists)."""
    counts = vase_counts(n, a, b, outcome)
    cells = Cells.from_counts(counts)
    # One BLAS thread, as the registry runs every method: a threaded BLAS on a busy 2-core machine
    # spends more time waiting for its threads than in the 200 x 200 Cholesky.
    with one_blas_thread():
        t_vase, ours = best_of(lambda: fit(cells), 3)
    ours = ELO * ours.beta
    labels = names(n)
    matchups, outcomes, models, weights = fastchat.preprocess_for_bt(battle_frame(n, a, b, outcome))
    order = pd.Index(models).get_indexer(labels)  # FastChat numbers models in order of appearance
    t_fc, theirs = best_of(lambda: fastchat.fit_bt(matchups, outcomes, weights, len(models), math.log(10.0)), 3)
    rows = unique_rows(n, a, b, outcome)
    t_rw, rewrite = best_of(lambda: lbfgs_rewrite(n, *rows), 3)
    import choix

    matrix = win_matrix(counts)
    t_ch, ilsr = best_of(lambda: choix.ilsr_pairwise_dense(matrix), 3)
    t_ev, ev = best_of(evalica_elo(labels, a, b, outcome), 1)
    return [
        Comparison(case, SOLVER_ONLY, "FastChat fit_bt (verbatim copy)", t_vase, t_fc,
                   scores_agree(ours, 400 * theirs[order], TOL_ELO, " Elo")),  # FastChat's units: log10 odds
        Comparison(case, SOLVER_ONLY, "choix ilsr_pairwise_dense", t_vase, t_ch,
                   scores_agree(ours, ELO * ilsr, TOL_ELO, " Elo")),
        Comparison(case, "solver only; evalica: its API on lists of names", "evalica bradley_terry", t_vase, t_ev,
                   evalica_verdict(ours, ev)),
        Comparison(case, SOLVER_ONLY, "L-BFGS rewrite (vase's, not FastChat's code)", t_vase, t_rw,
                   scores_agree(ours, ELO * rewrite, TOL_ELO, " Elo")),
    ]


def wta_cells() -> tuple[Cells, np.ndarray, np.ndarray, int]:
    """The WTA matches as winner, loser indices (players numbered by id) and vase's cells."""
    table = pl.read_parquet(WTA, columns=["winner_id", "loser_id"])
    ids, codes = np.unique(np.r_[table["winner_id"].to_numpy(), table["loser_id"].to_numpy()], return_inverse=True)
    winner, loser = codes[: table.height], codes[table.height:]
    n = len(ids)
    columns = np.zeros((len(winner), 3))
    columns[:, 0], columns[:, 1] = winner < loser, winner > loser
    return Cells.summed(n, np.minimum(winner, loser), np.maximum(winner, loser), columns), winner, loser, n


def wta_comparisons() -> list[Comparison]:
    """Solver only on the WTA tour, where the MLE does not exist: vase and choix with the same prior."""
    cells, winner, loser, n = wta_cells()
    with one_blas_thread():
        t_vase, ours = best_of(lambda: fit(cells, prior=WTA_PRIOR), 3)
    ours = ELO * ours.beta
    never_won = n - len(np.unique(winner))
    case = f"fit, WTA 2000-2024 ({n:,} players, {len(winner):,} matches, prior {WTA_PRIOR} where a peer has one)"
    import choix

    pairs = list(zip(winner.tolist(), loser.tolist()))
    t_ch, theirs = best_of(lambda: choix.opt_pairwise(n, pairs, alpha=WTA_PRIOR / 2), 1)
    zeros = np.zeros(len(winner), dtype=np.int8)
    frame = battle_frame(n, winner, loser, zeros)
    matchups, outcomes, models, weights = fastchat.preprocess_for_bt(frame)
    order = pd.Index(models).get_indexer(names(n))
    t_fc, fc = best_of(lambda: fastchat.fit_bt(matchups, outcomes, weights, len(models), math.log(10.0)), 1)
    fc_verdict = scores_agree(ours, 400 * fc[order], TOL_ELO, " Elo")
    no_prior = (f"; FastChat's fit has no prior, and without one the MLE does not exist ({never_won:,} players never "
                f"win): its answer is where L-BFGS stops")
    rows = unique_rows(n, winner, loser, zeros)
    t_rw, rewrite = best_of(lambda: lbfgs_rewrite(n, *rows, prior=WTA_PRIOR), 1)
    t_ev, ev = best_of(evalica_elo(names(n), winner, loser, zeros), 1)
    return [
        Comparison(case, SOLVER_ONLY, "choix opt_pairwise (alpha = prior/2)", t_vase, t_ch,
                   scores_agree(ours, ELO * theirs, TOL_ELO, " Elo")),
        Comparison(case, SOLVER_ONLY, "FastChat fit_bt (verbatim copy)", t_vase, t_fc,
                   Verdict(False, f"non-result: {fc_verdict.detail}{no_prior}")),
        Comparison(case, "solver only; evalica: its API on lists of names", "evalica bradley_terry", t_vase, t_ev,
                   evalica_verdict(ours, ev)),
        Comparison(case, SOLVER_ONLY, "L-BFGS rewrite with the prior (vase's, not FastChat's code)", t_vase, t_rw,
                   scores_agree(ours, ELO * rewrite, TOL_ELO, " Elo")),
    ]


def interval_widths(rounds_elo: np.ndarray) -> np.ndarray:
    low, high = np.percentile(rounds_elo, [2.5, 97.5], axis=0)
    return high - low


def bootstrap_comparison(n: int, a: np.ndarray, b: np.ndarray, outcome: np.ndarray, rounds: int, case: str) -> Comparison:
    """Per round, one core each: vase's chunks in this process against FastChat's fit_bt per round."""
    cells = Cells.from_counts(vase_counts(n, a, b, outcome))
    options = {"davidson": False, "prior": 0.0, "tol": STEP_TOL, "max_iter": 100}
    with one_blas_thread():
        full = fit(cells)
        with dask.config.set(scheduler="sync"):
            bootstrap_intervals(cells, full, options, 2, 1, 400.0, 1000.0)  # numba compiles before the clock starts
            t_vase, (columns, _) = best_of(lambda: bootstrap_intervals(cells, full, options, rounds, 1, 400.0, 1000.0), 1)
    ours = columns["ci_high"] - columns["ci_low"]
    matchups, outcomes, models, weights = fastchat.preprocess_for_bt(battle_frame(n, a, b, outcome))
    order = pd.Index(models).get_indexer(names(n))
    # compute_bootstrap_bt's draws, then the function its pool maps, one round after another
    draws = np.random.default_rng(seed=0).multinomial(n=len(a), pvals=weights / weights.sum(), size=rounds) / len(a)
    t_fc, theirs = best_of(lambda: np.array([fastchat.fit_bt(matchups, outcomes, w, len(models), math.log(10.0))
                                             for w in draws]), 1)
    ratio = float(np.median(interval_widths(400 * theirs[:, order]) / ours))
    verdict = Verdict(abs(ratio - 1) <= TOL_WIDTH, f"95% interval widths: median over models of FastChat's / vase's "
                                                   f"= {ratio:.3f} (tolerance 1 +- {TOL_WIDTH})")
    return Comparison(f"{case}, {rounds} rounds each", f"{PER_ROUND}, solver only, one core each",
                      "FastChat fit_bt per round (verbatim copy)", t_vase / rounds, t_fc / rounds, verdict)


def timed_command(args: list[str], root: Path = ROOT) -> tuple[float, str]:
    """Wall seconds of a fresh process running the checkout at `root`, and the last line of its stderr
    if it failed ("" if not)."""
    env = os.environ | {"PYTHONPATH": str(root)}
    start = time.perf_counter()
    done = subprocess.run(args, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    failure = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1] if done.returncode else ""
    return time.perf_counter() - start, failure


WHOLE_COMMAND_PEERS = {"fastchat": "FastChat compute_bt (verbatim copy)", "choix": "choix ilsr_pairwise_dense",
                       "evalica": "evalica bradley_terry"}


def whole_command_comparisons(n: int, a: np.ndarray, b: np.ndarray, outcome: np.ndarray, case: str,
                              peers: tuple[str, ...] = tuple(WHOLE_COMMAND_PEERS)) -> list[Comparison]:
    """A fresh process each, from the CSV file to written ratings; answers read back from what was written."""
    comparisons = []
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "battles.csv"
        battle_frame(n, a, b, outcome).to_csv(csv, index=False)
        out = Path(tmp) / "vase"
        t_vase, failure = timed_command([sys.executable, "-m", "flows.cli", "rate", str(csv), "--kind", "battles",
                                         "-m", "m-elo:bootstrap=0", "--out", str(out)])
        if failure:
            raise RuntimeError(f"vase rate failed: {failure}")
        ours = pl.read_parquet(out / "ratings.parquet").sort("agent")["score"].to_numpy()
        stages = json.loads((out / "run.json").read_text())["timings_s"]
        print(f"[vase alone] vase rate, {case}: {t_vase:.3g} s, of which " + ", ".join(
            f"{stage.split(':')[0]} {seconds:.3g} s" for stage, seconds in stages.items()), flush=True)
        labels = np.sort(names(n))
        for peer in peers:
            written = Path(tmp) / f"{peer}.csv"
            t_peer, failure = timed_command([sys.executable, "-m", "benchmarks.peers.rate_file", peer, str(csv),
                                             str(written)])
            if failure:
                verdict = non_result(f"the command failed: {failure}")
            else:
                theirs = pd.read_csv(written).set_index("agent")["score"].reindex(labels).to_numpy()
                verdict = scores_agree(ours, theirs, TOL_ELO, " Elo")
            comparisons.append(Comparison(case, f"{WHOLE_COMMAND}, CSV file to ratings", WHOLE_COMMAND_PEERS[peer],
                                          t_vase, None if failure else t_peer, verdict))
    return comparisons


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battles", type=int, default=BATTLES)
    parser.add_argument("--models", type=int, default=MODELS)
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="bootstrap rounds on each side")
    parser.add_argument("--wta", action="store_true", help="also the WTA tour 2000-2024 (needs /work/shared/datasets)")
    args = parser.parse_args()
    n = args.models
    a, b, outcome = battles(n, args.battles, SEED)
    case = f"fit, {args.battles:,} battles x {n} models"
    comparisons = fit_comparisons(n, a, b, outcome, case)
    comparisons.append(bootstrap_comparison(n, a, b, outcome, args.rounds, f"bootstrap, {args.battles:,} battles x {n}"))
    comparisons += whole_command_comparisons(n, a, b, outcome, case)
    if args.wta:
        comparisons += wta_comparisons()
    print(f"written {report('elo', comparisons, {'battles': args.battles, 'models': n, 'rounds': args.rounds})}")


if __name__ == "__main__":
    main()
