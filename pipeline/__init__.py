"""vase: ratings of agents from logs of battles, games, scores and ballots."""

__version__ = "0.1.0"
