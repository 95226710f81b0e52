"""Benchmarks of the game-theoretic methods (fixed seeds; ratios to same-run baselines).

1. Deviation ratings on a 3-player agent vs agent vs task game, 40 agents x 18 tasks (target
   under 10 s); baseline: one LP of the first iteration passed to HiGHS whole, without symmetry
   reduction or column generation (the naive formulation needs up to 58 such LPs).
2. Nash averaging of a 200-agent antisymmetric game (default interior-point path)
   against OpenSpiel's nash_averaging (which needs cvxpy; skipped, and said so, if it is missing).

Run: python -m benchmarks.bench_games   (writes benchmarks/results/games.json)
"""

from __future__ import annotations

import json

import numpy as np

from benchmarks.common import best_of, save
from pipeline.games import build
from pipeline.methods.game_theory.deviation import constraint_matrix, deviation_ratings, solve_full
from pipeline.methods.game_theory.nash_averaging import nash_average
from pipeline.stats.game_data import ScoreTable


def main() -> None:
    results: dict[str, object] = {}
    rng = np.random.default_rng(0)
    k, t = 40, 18
    table = ScoreTable(np.arange(k), tuple(f"t{i}" for i in range(t)), rng.random((k, t)), np.ones(t, bool), np.ones(t))
    game = build(table, "agent-agent-task")
    seconds, (ratings, _, info) = best_of(lambda: deviation_ratings(game), repeat=1)
    a = np.round(constraint_matrix(game), 14)
    naive_lp, _ = best_of(lambda: solve_full(a, np.zeros(a.shape[0], bool), np.zeros(a.shape[0])), repeat=1)
    results["deviation_40x40x18"] = {"seconds": seconds, "lps": info["lps"], "lp_columns": info["lp_columns"],
                                     "naive_first_lp_seconds": naive_lp, "ratio_to_naive_first_lp": seconds / naive_lp}

    m = 200
    x = np.random.default_rng(1).normal(size=(m, m))
    payoff = x - x.T
    ours, (p, _, _) = best_of(lambda: nash_average(payoff))
    entry = {"seconds": ours, "support": int((p > 0).sum())}
    try:
        import pyspiel
        from open_spiel.python.algorithms import nash_averaging as spiel

        matrix_game = pyspiel.create_matrix_game(payoff.tolist(), (-payoff).tolist())
        theirs, (spiel_p, _) = best_of(lambda: spiel.nash_averaging(matrix_game, a_v_a=True))
        entry |= {"open_spiel_seconds": theirs, "ratio_to_open_spiel": ours / theirs,
                  "max_abs_strategy_difference": float(np.abs(np.ravel(spiel_p)[:m] - p).max())}
    except ImportError as exc:
        entry["open_spiel"] = f"skipped: {exc}"
    results["nash_averaging_200"] = entry
    save("games", results)
    for name, values in results.items():
        print(name, json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in values.items()}))


if __name__ == "__main__":
    main()
