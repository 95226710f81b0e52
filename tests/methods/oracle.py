"""OpenSpiel's voting module as a test oracle (a dev dependency, never imported by pipeline/)."""

from __future__ import annotations

import numpy as np
from open_spiel.python.voting import base


def random_strict_profile(rng: np.random.Generator, m: int, n: int) -> list[str]:
    """n strict complete ballots over m alternatives named a0..a{m-1}, as ranking strings."""
    return [">".join(f"a{i}" for i in rng.permutation(m)) for _ in range(n)]


def openspiel_scores(rule, rankings: list[str], names: list[str]) -> np.ndarray:
    """OpenSpiel's score of each alternative, in the order of `names`."""
    profile = base.PreferenceProfile(votes=[r.split(">") for r in rankings], alternatives=names)
    outcome = rule.run_election(profile)
    by_name = dict(zip(outcome.ranking, outcome.scores))
    return np.array([float(by_name[n]) for n in names])
