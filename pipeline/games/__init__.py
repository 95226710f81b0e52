"""Normal-form games, and games built from data for the game-theoretic methods (`pipeline.methods`)."""

from pipeline.games.builders import GAMES, NORMALISATIONS, build, normalise
from pipeline.games.game import Game, deviation_payoff, marginals, product

__all__ = ["GAMES", "NORMALISATIONS", "Game", "build", "deviation_payoff", "marginals", "normalise", "product"]
