"""Shared plumbing of the game-theoretic methods: choosing the game, publishing per-player ratings.

Rows of the resulting `Ratings`:
- for a game built from the store, the strategies of the first player (agents, by store id:
  agent A, model A, or the king); other players whose strategies are the same agents add extra
  columns `<player>_rating` and `<player>_marginal`; players whose strategies are tasks or prompts
  are reported in `info` as `<player>_ratings` and `<player>_marginal` (name -> value);
- for an nfg game (no store), every strategy of every player, with `agents` numbered 0..S-1 in
  the order of `Game.labels` (`player:strategy`), which is the name list to publish them with;
  extras `player` and `marginal`.
Co-player contributions c(a'_p, a_j) ([DevR] section 5.2, [GTLLM] section 4.3) become extra
columns `c[<strategy>]` of the rated player, one per strategy of the last player (task or prompt).
"""

from __future__ import annotations

import highspy
import numpy as np
import scipy.sparse as sp

from pipeline.games import Game, build
from pipeline.methods.convergence import ConvergenceError
from pipeline.methods.ratings import Ratings
from pipeline.stats.game_data import PromptCounts, ScoreTable

GameData = ScoreTable | PromptCounts | Game


def choose_game(data: GameData, game: str, norm: str, defaults: dict[str, str]) -> Game:
    """Build the game: `auto` picks `defaults['scores']` or `defaults['battles']`."""
    if game == "auto" and not isinstance(data, Game):
        game = defaults["scores" if isinstance(data, ScoreTable) else "battles"]
    return build(data, game, norm=norm)


def game_ratings(game: Game, ratings: list[np.ndarray],
                 marginals: list[np.ndarray], *, contributions: np.ndarray | None = None,
                 info: dict[str, object] | None = None) -> Ratings:
    """`Ratings` from one rating vector and one equilibrium marginal per player (see module doc)."""
    info = dict(game.info) | dict(info or {})
    if game.ids[0] is None:
        extras = {"player": np.array([p for p, k in zip(game.players, game.shape) for _ in range(k)], dtype=object),
                  "marginal": np.concatenate(marginals)}
        if contributions is not None:
            info["contributions"] = contributions.tolist()
        return Ratings.from_scores(np.arange(sum(game.shape)), np.concatenate(ratings) + 0.0, extras=extras, info=info)
    extras = {"marginal": marginals[0]}
    for p in range(1, game.n_players):
        if game.ids[p] is not None and np.array_equal(game.ids[p], game.ids[0]):
            extras[f"{game.players[p]}_rating"], extras[f"{game.players[p]}_marginal"] = ratings[p], marginals[p]
        else:
            info[f"{game.players[p]}_ratings"] = dict(zip(game.strategies[p], ratings[p].tolist()))
            info[f"{game.players[p]}_marginal"] = dict(zip(game.strategies[p], marginals[p].tolist()))
    if contributions is not None:
        extras |= {f"c[{s}]": contributions[:, j] for j, s in enumerate(game.strategies[-1])}
    return Ratings.from_scores(game.ids[0], ratings[0] + 0.0, extras=extras, info=info)


def solve_lp(cost: np.ndarray, matrix: np.ndarray, row_lower: np.ndarray, row_upper: np.ndarray,
             col_lower: np.ndarray, col_upper: np.ndarray, *,
             options: dict[str, object] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Minimise cost @ x subject to row bounds on matrix @ x and column bounds; (x, row duals).

    `options` are HiGHS options, e.g. {"solver": "ipm", "run_crossover": "off"}.
    """
    a = sp.csc_matrix(matrix)
    lp = highspy.HighsLp()
    lp.num_row_, lp.num_col_ = a.shape
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = cost, col_lower, col_upper
    lp.row_lower_, lp.row_upper_ = row_lower, row_upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = a.indptr, a.indices, a.data
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    for key, value in (options or {}).items():
        h.setOptionValue(key, value)
    h.passModel(lp)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        raise ConvergenceError(f"LP not solved: {h.modelStatusToString(h.getModelStatus())}")
    sol = h.getSolution()
    return np.asarray(sol.col_value), np.asarray(sol.row_dual)
