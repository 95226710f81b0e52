"""Normal-form games: one payoff tensor per player, named strategies, deviation gains.

Notation of [DevR] section 2: player p picks a_p from A_p; G_p(a) is p's payoff at the joint
strategy a = (a_1, ..., a_N); a joint distribution sigma over A has CCE deviation gains
delta_p(a'_p) = sum_a sigma(a) [G_p(a'_p, a_-p) - G_p(a)] ([DevR] equation 3a).
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np


@dataclass(frozen=True, eq=False)
class Game:
    """An N-player normal-form game.

    `payoffs[p]` has shape (|A_1|, ..., |A_N|) for every p; `strategies[p]` names p's strategies.
    `ids[p]`, when not None, gives the store id of each of p's strategies (players whose strategies
    are agents of the store); `info` records how the game was built (builder, normalisation).
    """

    payoffs: tuple[np.ndarray, ...]
    players: tuple[str, ...]
    strategies: tuple[tuple[str, ...], ...]
    ids: tuple[np.ndarray | None, ...] = ()
    info: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        payoffs = tuple(np.asarray(g, dtype=np.float64) for g in self.payoffs)
        n = len(payoffs)
        if n == 0:
            raise ValueError("a game needs at least one player")
        shape = payoffs[0].shape
        if len(shape) != n:
            raise ValueError(f"{n} players need payoff tensors with {n} axes, not {len(shape)}")
        if any(g.shape != shape for g in payoffs):
            raise ValueError(f"payoff tensors disagree in shape: {[g.shape for g in payoffs]}")
        if any(s < 1 for s in shape):
            raise ValueError(f"every player needs at least one strategy; shape {shape}")
        if not all(np.all(np.isfinite(g)) for g in payoffs):
            raise ValueError("payoffs must be finite")
        if len(self.players) != n or len(set(self.players)) != n:
            raise ValueError(f"need {n} distinct player names, got {list(self.players)}")
        strategies = tuple(tuple(str(s) for s in names) for names in self.strategies)
        if len(strategies) != n or any(len(s) != k for s, k in zip(strategies, shape)):
            raise ValueError(f"strategy names must match the shape {shape}")
        if any(len(set(s)) != len(s) for s in strategies):
            raise ValueError("strategy names of a player must be distinct")
        ids = self.ids or (None,) * n
        if len(ids) != n or any(i is not None and len(i) != k for i, k in zip(ids, shape)):
            raise ValueError("ids must give one store id per strategy (or None) for every player")
        object.__setattr__(self, "payoffs", payoffs)
        object.__setattr__(self, "strategies", strategies)
        object.__setattr__(self, "ids", tuple(None if i is None else np.asarray(i, dtype=np.int64) for i in ids))

    @property
    def shape(self) -> tuple[int, ...]:
        return self.payoffs[0].shape

    @property
    def n_players(self) -> int:
        return len(self.payoffs)

    @cached_property
    def labels(self) -> list[str]:
        """`player:strategy` for every strategy of every player, players in order."""
        return [f"{p}:{s}" for p, names in zip(self.players, self.strategies) for s in names]

    def gains(self, sigma: np.ndarray) -> list[np.ndarray]:
        """CCE deviation gains delta_p(a'_p) of the joint `sigma`, one vector per player ([DevR] eq. 3a)."""
        return [deviation_payoff(g, sigma, p) - float(np.vdot(sigma, g)) for p, g in enumerate(self.payoffs)]

    def contributions(self, sigma: np.ndarray, p: int, j: int) -> np.ndarray:
        """c[a'_p, a_j] = sum over a with co-player j at a_j of sigma(a) [G_p(a'_p, a_-p) - G_p(a)].

        Row sums are the deviation gains of p ([DevR] section 5.2; [GTLLM] section 4.3).
        """
        if p == j:
            raise ValueError("contributions are by a co-player's strategy")
        g = self.payoffs[p]
        rest = sigma.sum(axis=p)  # sigma over a_-p
        letters = string.ascii_letters[: self.n_players]
        others = letters.replace(letters[p], "")
        deviate = np.einsum(f"{letters},{others}->{letters[p]}{letters[j]}", g, rest)
        stay = np.einsum(f"{letters},{letters}->{letters[j]}", g, sigma)
        return deviate - stay[None, :]

    def symmetric(self, p: int, q: int, tol: float = 0.0) -> bool:
        """Whether swapping players p and q maps the game to itself (a payoff symmetry, [DevR] A.1)."""
        if self.shape[p] != self.shape[q] or p == q:
            return False
        axes = list(range(self.n_players))
        axes[p], axes[q] = q, p
        for k, g in enumerate(self.payoffs):
            image = p if k == q else q if k == p else k
            if not np.allclose(np.transpose(g, axes), self.payoffs[image], rtol=0.0, atol=tol):
                return False
        return True


def deviation_payoff(g: np.ndarray, sigma: np.ndarray, p: int) -> np.ndarray:
    """sum_a sigma(a) g(a'_p, a_-p) for every a'_p: p's payoff for deviating to a'_p from sigma."""
    rest = sigma.sum(axis=p)
    moved = np.moveaxis(g, p, 0)
    return moved.reshape(moved.shape[0], -1) @ rest.ravel()


def product(marginals: list[np.ndarray]) -> np.ndarray:
    """The joint distribution of independent players with the given marginals."""
    joint = np.ones(())
    for m in marginals:
        joint = np.multiply.outer(joint, m)
    return joint


def marginals(sigma: np.ndarray) -> list[np.ndarray]:
    axes = range(sigma.ndim)
    return [sigma.sum(axis=tuple(a for a in axes if a != p)) for p in axes]
