"""What a log kind's rows mean for the reductions: weak orders, or pairwise comparisons.

Every stored kind turns a table of its rows (store ids, weights on the grid of `pipeline.weights`)
into one of these. Most kinds give `WeakOrders`: one ballot per unit (a game, a task, a ballot,
a review). Kinds whose every row compares two agents (battles) give `Comparisons`, which the
reductions count directly as pairs; each comparison is also a ballot of two
(`Comparisons.weak_orders`), which is how backtests and position statistics see it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# The most agents one unit (a ballot, a game, a task, a review) may rank: a unit of L agents makes
# L(L-1)/2 pairs in the reductions, about 50 million at this bound. Larger units are quarantined.
MAX_RANKED = 10_000


@dataclass(frozen=True)
class WeakOrders:
    """Ballots as weak orders, CSR-style: members of ballot i are agents[offsets[i]:offsets[i+1]],
    sorted by level (lower is better; equal levels are ties), then by id."""

    offsets: np.ndarray
    agents: np.ndarray
    levels: np.ndarray
    weights: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @classmethod
    def from_rows(cls, ballot: np.ndarray, agent: np.ndarray, level: np.ndarray, weight: np.ndarray) -> WeakOrders:
        """Rows (ballot code, agent, level, weight of the row's ballot) in any order; ballots in code order."""
        order = np.lexsort((agent, level, ballot))
        ballot = ballot[order]
        starts = np.flatnonzero(np.r_[True, ballot[1:] != ballot[:-1]]) if len(ballot) else np.zeros(0, np.int64)
        offsets = np.r_[starts, len(ballot)].astype(np.int64)
        return cls(offsets, agent[order].astype(np.int64), level[order].astype(np.float64), weight[order][starts])

    def select(self, ballots: np.ndarray) -> WeakOrders:
        """The ballots at the given indices, in the order given."""
        ballots = np.asarray(ballots, dtype=np.int64)
        lengths = np.diff(self.offsets)[ballots]
        offsets = np.r_[0, np.cumsum(lengths)].astype(np.int64)
        rows = np.repeat(self.offsets[ballots] - offsets[:-1], lengths) + np.arange(offsets[-1])
        return WeakOrders(offsets, self.agents[rows], self.levels[rows], self.weights[ballots])


A_WINS, B_WINS, TIE = 0, 1, 2


@dataclass(frozen=True)
class Comparisons:
    """Pairwise comparisons, one per row: agents `a` and `b`, `outcome` A_WINS, B_WINS or TIE, `weights`."""

    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    weights: np.ndarray

    def __len__(self) -> int:
        return len(self.a)

    def weak_orders(self) -> WeakOrders:
        """Each comparison as a ballot of two: the winner at level 0 and the loser at 1, a tie both at 0."""
        ballot = np.repeat(np.arange(len(self.a), dtype=np.int64), 2)
        level = np.column_stack([self.outcome == B_WINS, self.outcome == A_WINS]).astype(np.float64).ravel()
        agents = np.column_stack([self.a, self.b]).astype(np.int64).ravel()
        return WeakOrders.from_rows(ballot, agents, level, np.repeat(self.weights, 2))
