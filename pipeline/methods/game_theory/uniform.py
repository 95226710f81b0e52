"""Uniform rating of a game's strategies: mean payoff against uniformly random co-players.

r_p(a_p) = mean over a_-p of G_p(a_p, a_-p) ([DevR] section 3.2, "Uniform"): dominance
preserving, but neither clone nor offset invariant; the baseline of [DevR] table 2. No solver:
ratings within 1e-12 of the payoff range (the rounding of a mean) share a rank. Battles without
prompts are rated as `agent-agent` under `game=auto`.
"""

from __future__ import annotations

import numpy as np

from pipeline.methods.game_theory.equilibria import GAME_RULES, GameData, choose_game, game_ratings, payoff_range
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import method

DEFAULT_GAMES = {"scores": "agent-agent-task", "battles": "model-model-prompt"}
TIE_TOLERANCE = 1e-12  # of the payoff range


@method("uniform", needs=("game_data",), rules=GAME_RULES)
def uniform(data: GameData, *, game: str = "auto", norm: str = "minmax") -> Ratings:
    """Uniform rating: mean payoff of each strategy against uniformly random co-players [DevR]."""
    chosen = choose_game(data, game, norm, DEFAULT_GAMES)
    axes = range(chosen.n_players)
    ratings = [g.mean(axis=tuple(a for a in axes if a != p)) for p, g in enumerate(chosen.payoffs)]
    marginals = [np.full(k, 1.0 / k) for k in chosen.shape]
    tie = TIE_TOLERANCE * payoff_range(chosen)
    return game_ratings(chosen, ratings, marginals, info={"tie_tolerance": tie}, tie_tolerance=tie)
