"""Random ballot profiles for the voting tests: seeded, as strings `a>b=c` for `profile()`."""

from __future__ import annotations

import numpy as np

NAMES = "abcdefghijklmnopqrstuvwxyz"


def strict_ballots(rng: np.random.Generator, m: int, voters: int) -> list[str]:
    """`voters` uniformly random strict complete orders over the first m letters."""
    return [">".join(NAMES[i] for i in rng.permutation(m)) for _ in range(voters)]


def weak_ballots(rng: np.random.Generator, m: int, voters: int) -> list[str]:
    """Random weak orders, some partial (a random prefix of at least two agents)."""
    out = []
    for _ in range(voters):
        order = rng.permutation(m)[: rng.integers(2, m + 1)]
        cuts = rng.random(len(order) - 1) < 0.3
        out.append("".join(NAMES[a] + ("=" if tie else ">") for a, tie in zip(order, cuts)) + NAMES[order[-1]])
    return out


def mixed_profiles(seed: int, count: int, most: int = 7):
    """`count` seeded profiles over 3..most agents, strict and weak/partial in turn, as ballot lists."""
    rng = np.random.default_rng(seed)
    for trial in range(count):
        yield (strict_ballots if trial % 2 else weak_ballots)(rng, int(rng.integers(3, most + 1)), int(rng.integers(2, 12)))
