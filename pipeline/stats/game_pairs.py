"""Pairwise counts of games with each pair weighted 1/(L-1) in a game of L players.

The core `pairwise` statistic counts each of the L(L-1)/2 pairs of a game with the game's
weight, so a 7-player game weighs as much as 21 battles and big games dominate a Bradley-Terry
fit. Weighting each pair by 1/(L-1) makes every player's comparisons in one game add up to the
game's weight: each player's game counts like one battle for it. Elo-family methods choose with
`games=pairs` (the core counts) or `games=player` (these). Per-game weights are quantised to
the store's 2^-24 grid per game, so the merge stays exact. Every kind that reduces through weak
orders is weighted the same way (a task of a score table is a game over its agents, and so on).
For kinds of comparisons (battles, L = 2) the two coincide and this statistic holds None
(methods then use `pairwise`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from pipeline.logs import log_kind
from pipeline.logs.orders import WeakOrders
from pipeline.stats.counts import PairwiseCounts
from pipeline.stats.encoding import Arrays
from pipeline.stats.extras import EVERY_KIND, Extra, register_extra
from pipeline.stats.partials import DENSE_MAX_AGENTS, PairCounter, weak_order_partial
from pipeline.weights import quantize

PAIR_WEIGHTINGS = ("pairs", "player")  # a game's pairs each at the game's weight, or at 1/(players - 1) of it


@dataclass(frozen=True, eq=False)
class PerGameCounts:
    """`counts` with pairs weighted 1/(L-1), or None for battles (the same as `pairwise`)."""

    counts: PairwiseCounts | None

    def choose(self, pairwise: PairwiseCounts, games: str) -> PairwiseCounts:
        """The counts a method fits: `games` is "pairs" (every pair weighs the game's weight) or "player"."""
        if games not in PAIR_WEIGHTINGS:
            raise ValueError(f"games must be one of {', '.join(PAIR_WEIGHTINGS)}, not {games!r}")
        return self.counts if games == "player" and self.counts is not None else pairwise


def _partial(table: pa.Table, kind: str, n: int) -> PairCounter | None:
    chosen = log_kind(kind)
    if chosen.weak_orders is None:
        return None
    orders = chosen.weak_orders(table)
    players = np.diff(orders.offsets)
    weights = quantize(orders.weights / np.maximum(players - 1, 1))
    orders = WeakOrders(orders.offsets, orders.agents, orders.levels, weights)
    return weak_order_partial(orders, n, frozenset({"pairwise"}), n <= DENSE_MAX_AGENTS).pairs


def _merge(x: PairCounter | None, y: PairCounter | None) -> PairCounter | None:
    return None if x is None else x + y


def _subtract(x: PairCounter | None, y: PairCounter | None) -> PairCounter | None:
    return None if x is None else x - y


def _resize(counter: PairCounter | None, n: int) -> PairCounter | None:
    return None if counter is None else counter.resized(n)


def _finalize(counter: PairCounter | None, present: np.ndarray, name_orders: Mapping[str, np.ndarray]) -> PerGameCounts:
    return PerGameCounts(None if counter is None else counter.finalize(present))


def _encode(counter: PairCounter | None) -> Arrays:
    return {} if counter is None else counter.to_arrays()


def _decode(arrays: Arrays) -> PairCounter | None:
    return PairCounter.from_arrays(arrays) if arrays else None


PAIRWISE_PER_GAME = register_extra(Extra("pairwise_per_game", {EVERY_KIND: ()}, _partial, _merge, _finalize, _encode, _decode,
                                         resize=_resize, subtract=_subtract))
