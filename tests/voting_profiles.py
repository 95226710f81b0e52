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


PAIRWISE_KINDS = ("strict", "weak", "partial", "weighted")


def random_wins(rng: np.random.Generator, kind: str, m: int, voters: int) -> np.ndarray:
    """N[a, b] of `voters` random ballots over m agents, without building the ballots as text.

    `strict`: complete strict orders; `weak`: complete with ties (each pair of neighbours tied with
    probability 0.3); `partial`: weak orders cut after a random number (at least two) of agents,
    the rest unranked; `weighted`: partial ones with exponential weights on the store's 2^-24 grid.
    """
    levels = np.argsort(rng.random((voters, m)), axis=1).astype(np.float64)
    if kind != "strict":
        tied = np.c_[np.zeros((voters, 1), dtype=bool), rng.random((voters, m - 1)) < 0.3]
        levels = np.take_along_axis(np.cumsum(~tied, axis=1), levels.astype(np.int64), axis=1).astype(np.float64)
    if kind in ("partial", "weighted"):
        place = np.argsort(np.argsort(levels + rng.random((voters, m)) / 2, axis=1), axis=1)
        levels = np.where(place < rng.integers(2, m + 1, voters)[:, None], levels, np.inf)
    weight = np.rint(rng.exponential(1.0, voters) * 2**24) / 2**24 if kind == "weighted" else np.ones(voters)
    return np.einsum("v,vab->ab", weight, (levels[:, :, None] < levels[:, None, :]).astype(np.float64))
