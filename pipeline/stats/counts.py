"""Sufficient statistics: the inputs of every rating method.

Agents are local indices 0..k-1 here; `agents[i]` is the store id of local agent i (ids are
sorted, so local order is store-id order). Statistics hold ids only: names come back in
`pipeline.report`. Weights are floats on a 2^-24 grid and were summed exactly (see
`pipeline.stats.partials`), so equal inputs give equal statistics bit for bit.

Notation of [VasE] section 3.1: N[x, y] is the weight of comparisons in which x is strictly
preferred to y, T[x, y] the weight of ties between x and y (symmetric), M = N - N^T the margins.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    from pipeline.stats.recency import Decay

Matrix = np.ndarray | sp.csr_array
CORE_STATISTICS = frozenset({"pairwise", "positions", "histogram"})  # fields of `Statistics`; the others are extras


def _check_agents(agents: np.ndarray) -> np.ndarray:
    agents = np.asarray(agents, dtype=np.int64)
    if agents.ndim != 1 or np.any(np.diff(agents) <= 0):
        raise ValueError("agents must be strictly increasing store ids")
    return agents


@dataclass(frozen=True, eq=False)
class PairwiseCounts:
    """N (`wins`) and T (`ties`) over k agents, dense (ndarray) or sparse (csr_array)."""

    agents: np.ndarray
    wins: Matrix
    ties: Matrix

    def __post_init__(self) -> None:
        object.__setattr__(self, "agents", _check_agents(self.agents))
        k = len(self.agents)
        for name, mat in (("wins", self.wins), ("ties", self.ties)):
            if mat.shape != (k, k):
                raise ValueError(f"{name} has shape {mat.shape}, expected ({k}, {k})")
            values = mat.data if sp.issparse(mat) else mat
            if values.dtype != np.float64:
                raise ValueError(f"{name} must be float64, not {values.dtype}")
            if np.any(values < 0) or not np.all(np.isfinite(values)):
                raise ValueError(f"{name} must be finite and non-negative")
            if np.any(mat.diagonal() != 0):
                raise ValueError(f"{name} must have a zero diagonal (an agent against itself)")
        asym = self.ties - self.ties.T
        if (abs(asym).max() if sp.issparse(asym) else np.abs(asym).max(initial=0)) != 0:
            raise ValueError("ties must be symmetric")

    @property
    def n(self) -> int:
        return len(self.agents)

    @property
    def is_sparse(self) -> bool:
        return sp.issparse(self.wins)

    @cached_property
    def margins(self) -> Matrix:
        """M = N - N^T."""
        return self.wins - self.wins.T

    @cached_property
    def total_weight(self) -> float:
        return float(self.wins.sum() + self.ties.sum() / 2)

    def dense(self) -> PairwiseCounts:
        if not self.is_sparse:
            return self
        return PairwiseCounts(self.agents, self.wins.toarray(), self.ties.toarray())


@dataclass(frozen=True, eq=False)
class PositionCounts:
    """Weight of each agent at each place of the ballots, by ballot length.

    `groups[(L, s, g)][x]` is the weight of ballots of length L in which agent x sits in a tie
    group of size g starting at position s (0 is the top). Strict ballots only have g = 1. A tie
    group shares its positions evenly: x is at each of positions s..s+g-1 with weight share 1/g.
    """

    agents: np.ndarray
    groups: dict[tuple[int, int, int], np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "agents", _check_agents(self.agents))
        for (length, start, size), weights in self.groups.items():
            if not (0 <= start and 1 <= size and start + size <= length):
                raise ValueError(f"bad position key {(length, start, size)}")
            if weights.shape != (len(self.agents),) or np.any(weights < 0):
                raise ValueError("position weights must be non-negative, one per agent")

    def score(self, points: Callable[[int, int], Fraction | int]) -> np.ndarray:
        """Sum over ballots of `points(L, position)` averaged over each agent's tie group, exactly:
        an object array of Fractions. Each weight is a binary fraction (a float) and each share a
        fraction, so the sums are taken as integers on a common denominator; scores equal as
        fractions are equal (1/3 + 1 + 1 and 1/3 + 1/2 + 1/3 + 1/3 + 1/3 + 1/2 differ in floating point)."""
        shares = {key: sum((Fraction(points(key[0], p)) for p in range(key[1], key[1] + key[2])), Fraction(0)) / key[2]
                  for key in self.groups}
        used = [key for key in sorted(self.groups) if shares[key] and self.groups[key].any()]
        total = np.array([0] * len(self.agents), dtype=object)
        if not used:
            return total + Fraction(0)
        denominator = math.lcm(*(shares[key].denominator for key in used))
        # weight = mantissa * 2**(exponent - 53), the mantissa an integer below 2**53
        lowest = min(int(np.frexp(self.groups[key][self.groups[key] > 0])[1].min()) for key in used)
        for key in used:
            weights = self.groups[key]
            present = np.flatnonzero(weights)
            mantissas, exponents = np.frexp(weights[present])
            factor = shares[key].numerator * (denominator // shares[key].denominator)
            for i, mantissa, exponent in zip(present.tolist(), (mantissas * 2.0**53).astype(np.int64).tolist(), exponents.tolist()):
                total[i] += (mantissa << (exponent - lowest)) * factor
        return total * (Fraction(2) ** (lowest - 53) / denominator)

    @property
    def lengths(self) -> list[int]:
        return sorted({key[0] for key in self.groups})


@dataclass(frozen=True, eq=False)
class BallotHistogram:
    """Distinct weak orders with their total weight, in a canonical order.

    A ballot is a tuple of tie groups (best first), each a tuple of local agent indices sorted
    increasingly; ballots are listed in increasing order of that tuple.
    """

    agents: np.ndarray
    ballots: tuple[tuple[tuple[int, ...], ...], ...]
    weights: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "agents", _check_agents(self.agents))
        if len(self.ballots) != len(self.weights):
            raise ValueError("one weight per distinct ballot")
        if list(self.ballots) != sorted(set(self.ballots)):
            raise ValueError("ballots must be distinct and sorted")

    def __len__(self) -> int:
        return len(self.ballots)


@dataclass(frozen=True, eq=False)
class Statistics:
    """What a reduction produced for one log kind; each field is None unless it was asked for.

    `agent_keys[i]` is local agent i's position among the present agents' names sorted by Unicode
    code point: a canonical order that does not depend on the ids a store assigned (tie-breaks by
    name, seeds of resampling), carried without the names. Where the ids were given in name order
    (the in-memory paths) it is `arange`, the default.
    """

    kind: str
    agents: np.ndarray
    appearances: np.ndarray  # number of ballots (battles, games, tasks) each agent appears in
    pairwise: PairwiseCounts | None = None
    positions: PositionCounts | None = None
    histogram: BallotHistogram | None = None
    extra: dict[str, object] = field(default_factory=dict)
    agent_keys: np.ndarray | None = None
    decay: Decay | None = None  # the pairwise counts weigh each record by its age (`pipeline.stats.recency`)

    @property
    def half_life_days(self) -> float:
        """The half-life the counts were weighed by (inf: not weighed)."""
        return math.inf if self.decay is None else self.decay.half_life_days

    def __post_init__(self) -> None:
        object.__setattr__(self, "agents", _check_agents(self.agents))
        keys = np.arange(len(self.agents)) if self.agent_keys is None else np.asarray(self.agent_keys, dtype=np.int64)
        if sorted(keys.tolist()) != list(range(len(self.agents))):
            raise ValueError("agent_keys must be a permutation of 0..k-1, one per agent")
        object.__setattr__(self, "agent_keys", keys)
        for stat in (self.pairwise, self.positions, self.histogram):
            if stat is not None and not np.array_equal(stat.agents, self.agents):
                raise ValueError("every statistic must cover the same agents")
        k = len(self.agents)
        keys = np.arange(k, dtype=np.int64) if self.agent_keys is None else np.asarray(self.agent_keys, dtype=np.int64)
        if not np.array_equal(np.sort(keys), np.arange(k)):
            raise ValueError("agent_keys must be a permutation of 0..k-1, one per agent")
        object.__setattr__(self, "agent_keys", keys)
