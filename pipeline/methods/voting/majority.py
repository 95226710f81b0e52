"""Helpers shared by the majority-graph methods (Kemeny, Schulze, ranked pairs, maximal lotteries).

No method is registered here. The Condorcet diagnostics follow [VasE] section 3.1: a (strong)
Condorcet winner beats every other agent head to head, M(a, b) > 0 for all b != a; a weak
Condorcet winner loses to no one, M(a, b) >= 0. Pairs that never met have margin 0.

Ballot logistics [VasE, appendix E]: these methods read only N and M, so a partial ballot counts
for the pairs it ranks (an agent missing from a ballot is not assumed to be below the others), a
tie inside a ballot adds to T and to neither N(a, b) nor N(b, a), weights are real, and agents may
appear in any number of ballots; pairs that never met have margin 0.

Methods whose outcome is an order (Kemeny, Schulze, ranked pairs, STV) take their rank from the
order, as tie groups, and their score from the paper's appendix C definition, which describes the
order but need not decrease along it; `ranked` builds such a `Ratings`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from pipeline.methods.ratings import Ratings
from pipeline.stats.counts import PairwiseCounts

DENSE_LIMIT = 5000  # agents; the order methods below are O(m^2) memory and O(m^3) time


def dense_counts(pairs: PairwiseCounts, name: str) -> tuple[np.ndarray, np.ndarray]:
    """N and M as dense arrays, refusing sizes the dense algorithms cannot handle."""
    if pairs.n > DENSE_LIMIT:
        raise ValueError(f"{name} works on dense margins and is limited to {DENSE_LIMIT} agents, not {pairs.n}; "
                         "use maximal-lotteries or copeland for larger pools")
    dense = pairs.dense()
    return dense.wins, dense.margins


def wins_losses(pairs: PairwiseCounts) -> tuple[np.ndarray, np.ndarray]:
    """Per agent, the number of agents it beats (M > 0) and loses to (M < 0), dense or sparse."""
    margins = pairs.margins
    if sp.issparse(margins):
        margins = sp.csr_array(margins)
        margins.eliminate_zeros()
        return np.asarray((margins > 0).sum(axis=1)).ravel(), np.asarray((margins < 0).sum(axis=1)).ravel()
    return (margins > 0).sum(axis=1), (margins < 0).sum(axis=1)


def condorcet_info(pairs: PairwiseCounts) -> dict[str, object]:
    """Strong and weak Condorcet winners (store ids), from the signs of the margins."""
    beats, loses = wins_losses(pairs)
    strong = np.flatnonzero(beats == pairs.n - 1)
    return {
        "condorcet_winner_agent": int(pairs.agents[strong[0]]) if len(strong) else None,
        "weak_condorcet_winner_agents": pairs.agents[loses == 0].tolist(),
    }


def ranked(agents: np.ndarray, groups: Sequence[Sequence[int]], score: np.ndarray, *, extras: dict[str, np.ndarray] | None = None,
           info: dict[str, object] | None = None) -> Ratings:
    """Ratings whose ranks come from an order of tie groups (best first, local indices)."""
    rank = np.zeros(len(agents), dtype=np.int64)
    placed = 0
    for group in groups:
        rank[np.asarray(group, dtype=np.int64)] = placed + 1
        placed += len(group)
    if placed != len(agents) or np.any(rank == 0):
        raise ValueError("the order must place every agent exactly once")
    return Ratings(np.asarray(agents, dtype=np.int64), np.asarray(score, dtype=np.float64), rank, dict(extras or {}),
                   dict(info or {}))


def order_info(agents: np.ndarray, groups: Sequence[Sequence[int]]) -> dict[str, object]:
    """The order as lists of store ids, best first, and whether it is strict."""
    return {"order_agents": [agents[np.asarray(g, dtype=np.int64)].tolist() for g in groups],
            "strict_order": all(len(g) == 1 for g in groups)}
