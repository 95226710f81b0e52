"""Benchmarks of the game-theoretic methods (fixed seeds; ratios to same-run baselines).

1. Deviation ratings on a 3-player agent vs agent vs task game, 40 agents x 18 tasks (target
   under 10 s), vase alone: no peer computes deviation ratings. For scale, the first LP of the
   naive formulation (passed to HiGHS whole, without symmetry reduction or column generation; it
   needs up to 58 such LPs) is timed too; it is a part of the work, so no ratio is printed.
2. Nash averaging of a 200-agent antisymmetric game, solver only: vase's default interior-point
   path against OpenSpiel's `nash_averaging` (cvxpy, the bench extra; a non-result line if it is
   missing). OpenSpiel's answer counts where no deviation gains more than `TOL_GAIN` of the largest
   payoff against it; the distance between the two strategies is printed too.

Run: python -m benchmarks.bench_games   (writes benchmarks/results/games.json)
"""

from __future__ import annotations

import numpy as np

from benchmarks.common import SOLVER_ONLY, Comparison, Verdict, best_of, report, scores_agree
from pipeline.games import build
from pipeline.methods.game_theory.deviation import constraint_matrix, deviation_ratings, solve_full
from pipeline.methods.game_theory.nash_averaging import nash_average
from pipeline.stats.game_data import ScoreTable

TOL_GAIN = 1e-6  # of the largest payoff: what a deviation may gain against an equilibrium computed in floating point


def nash_averaging_200() -> tuple[Comparison, dict]:
    m = 200
    x = np.random.default_rng(1).normal(size=(m, m))
    payoff = x - x.T
    ours, (p, _, _) = best_of(lambda: nash_average(payoff))
    case = f"nash averaging, {m}-agent antisymmetric game"
    contender = "OpenSpiel nash_averaging (cvxpy)"
    try:
        import pyspiel
        from open_spiel.python.algorithms import nash_averaging as spiel

        matrix_game = pyspiel.create_matrix_game(payoff.tolist(), (-payoff).tolist())
        theirs, (spiel_p, _) = best_of(lambda: spiel.nash_averaging(matrix_game, a_v_a=True))
        theirs_p = np.ravel(spiel_p)[:m]
        # an equilibrium is judged by the best gain of a deviation against it (0 at one; a generic game has one
        # equilibrium, but where it is ill-conditioned an approximate one can sit far from it)
        gain, limit = max(0.0, float((payoff @ theirs_p).max())), TOL_GAIN * float(np.abs(payoff).max())
        verdict = Verdict(gain <= limit, f"best deviation's gain against OpenSpiel's {gain:.2g}, against vase's "
                                         f"{max(0.0, float((payoff @ p).max())):.2g} (tolerance {limit:.2g}); "
                                         f"strategies {scores_agree(p, theirs_p, 0.0, centre=False).detail.split(' (')[0]}")
    except ImportError as exc:
        theirs, verdict = None, Verdict(False, f"non-result: cannot run here ({exc}; the bench extra)")
    return Comparison(case, SOLVER_ONLY, contender, ours, theirs, verdict), {"support": int((p > 0).sum())}


def main() -> None:
    rng = np.random.default_rng(0)
    k, t = 40, 18
    table = ScoreTable(np.arange(k), tuple(f"t{i}" for i in range(t)), rng.random((k, t)), np.ones(t, bool), np.ones(t))
    game = build(table, "agent-agent-task")
    seconds, (_, _, info) = best_of(lambda: deviation_ratings(game), repeat=1)
    a = np.round(constraint_matrix(game), 14)
    naive_lp, _ = best_of(lambda: solve_full(a, np.zeros(a.shape[0], bool), np.zeros(a.shape[0])), repeat=1)
    deviation = {"seconds": seconds, "lps": info["lps"], "lp_columns": info["lp_columns"],
                 "naive_first_lp_seconds": naive_lp}
    print(f"[vase alone] deviation ratings, {k} agents x {k} x {t} tasks: {seconds:.3f} s in {info['lps']} LPs; the naive "
          f"formulation's first LP alone (of up to 58) {naive_lp:.3f} s")
    nash, facts = nash_averaging_200()
    print(f"written {report('games', [nash], {'deviation_40x40x18': deviation, 'nash_averaging_200': facts})}")


if __name__ == "__main__":
    main()
