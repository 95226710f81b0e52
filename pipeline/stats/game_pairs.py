"""Pairwise counts of games with each pair weighted 1/(L-1) in a game of L players.

The core `pairwise` statistic counts each of the L(L-1)/2 pairs of a game with the game's
weight, so a 7-player game weighs as much as 21 battles and big games dominate a Bradley-Terry
fit. Weighting each pair by 1/(L-1) makes every player's comparisons in one game add up to the
game's weight: each player's game counts like one battle for it. Elo-family methods choose with
`games=pairs` (the core counts) or `games=player` (these). Per-game weights are quantised to
the store's 2^-24 grid per game, so the merge stays exact. Ballots, score tables (a task is a
game over its agents) and council reviews are weighted the same way. For battles (L = 2) the two
coincide and this statistic holds None (methods then use `pairwise`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from pipeline.stats.counts import PairwiseCounts
from pipeline.stats.extras import Extra, register_extra
from pipeline.stats.partials import DENSE_MAX_AGENTS, UNIT, PairCounter, WeakOrders, weak_order_partial
from pipeline.stats.reduce import weak_orders


@dataclass(frozen=True, eq=False)
class PerGameCounts:
    """`counts` with pairs weighted 1/(L-1), or None for battles (the same as `pairwise`)."""

    counts: PairwiseCounts | None

    def choose(self, pairwise: PairwiseCounts, games: str) -> PairwiseCounts:
        """The counts a method fits: `games` is "pairs" (every pair weighs the game's weight) or "player"."""
        if games not in ("pairs", "player"):
            raise ValueError(f"games must be 'pairs' or 'player', not {games!r}")
        return self.counts if games == "player" and self.counts is not None else pairwise


def _partial(table: pa.Table, kind: str, n: int) -> PairCounter | None:
    if kind == "battles":
        return None
    orders = weak_orders(table, kind)
    players = np.diff(orders.offsets)
    weights = np.rint(orders.weights / np.maximum(players - 1, 1) * UNIT) / UNIT
    orders = WeakOrders(orders.offsets, orders.agents, orders.levels, weights)
    return weak_order_partial(orders, n, frozenset({"pairwise"}), n <= DENSE_MAX_AGENTS).pairs


def _merge(x: PairCounter | None, y: PairCounter | None) -> PairCounter | None:
    return None if x is None else x + y


def _finalize(counter: PairCounter | None, present: np.ndarray, store: object) -> PerGameCounts:
    return PerGameCounts(None if counter is None else counter.finalize(present))


PAIRWISE_PER_GAME = register_extra(Extra(
    "pairwise_per_game", {kind: () for kind in ("battles", "games", "scores", "ballots", "reviews")}, _partial, _merge, _finalize,
))
