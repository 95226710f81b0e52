"""Normal-form games: games built from statistics for the game-theoretic methods, and game files
(the `nfg` log kind, rated directly)."""

from pipeline.games.builders import GAMES, NORMALISATIONS, build, normalise
from pipeline.games.game import Game, deviation_payoff, marginals, product
from pipeline.games.nfg import read_nfg

__all__ = ["GAMES", "NORMALISATIONS", "Game", "build", "deviation_payoff", "marginals", "normalise", "product", "read_nfg"]
