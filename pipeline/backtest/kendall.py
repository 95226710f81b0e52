"""Kendall-tau distance between a rating's order and each test game's order [VasE] section 4.3.

K_d(R, g) counts the pairs of g's players that R and g order differently [Ken38]. Both orders
may have ties (a game's tied places; equal ratings), so the rule for ties is the one of Fagin et
al.'s K^(p) with p = 1/2 [FKM06]: a pair strictly ordered both ways counts 1 if the orders
disagree and 0 if they agree; a pair tied in both counts 0; a pair tied in exactly one of them
counts 1/2. For strict orders this is the plain count of disagreements (so (1 - tau) / 2 times
the number of pairs, tau being Kendall's tau), and it is a metric on weak orders.

Players never seen in training have no rating. With `unseen="tie"` (the default) the rating is
taken to have no opinion on them: every pair with such a player is a predicted tie, so it counts
1/2 when the game orders the pair strictly and 0 when the game ties it; this keeps every game's
pairs in the error, and costs each method the same. With `unseen="skip"` those pairs are left
out (counted neither as errors nor as pairs). Either way the pairs are counted in `unseen`.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from pipeline.stats.partials import WeakOrders

TIE_PENALTY = 0.5
UNSEEN_POLICIES = ("tie", "skip")


def kendall_distance(x: np.ndarray, y: np.ndarray, penalty: float = TIE_PENALTY) -> float:
    """Distance between two weak orders of the same items, given as levels (lower is better).

    The plain reference version, a loop over pairs; `game_distances` is the vectorised one.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("two level vectors of the same length are needed")
    total = 0.0
    for i, j in combinations(range(len(x)), 2):
        sx, sy = np.sign(x[j] - x[i]), np.sign(y[j] - y[i])
        if sx != 0 and sy != 0:
            total += float(sx != sy)
        elif sx != sy:
            total += penalty
    return total


@dataclass(frozen=True, eq=False)
class GameDistances:
    """Per test unit: the distance, the pairs it was computed over, and pairs with an unseen player."""

    distance: np.ndarray
    pairs: np.ndarray
    unseen: np.ndarray


def game_distances(orders: WeakOrders, predicted: np.ndarray, unseen: str = "tie",
                   penalty: float = TIE_PENALTY) -> GameDistances:
    """K_d between each unit of `orders` and `predicted`, one level per member (lower is better, NaN unseen)."""
    if unseen not in UNSEEN_POLICIES:
        raise ValueError(f"unknown unseen-player policy {unseen!r}; expected one of {', '.join(UNSEEN_POLICIES)}")
    predicted = np.asarray(predicted, dtype=np.float64)
    if predicted.shape != orders.agents.shape:
        raise ValueError("one predicted level per member of the test units is needed")
    units = len(orders.offsets) - 1
    distance, pairs, missing_pairs = np.zeros(units), np.zeros(units, np.int64), np.zeros(units, np.int64)
    lengths = np.diff(orders.offsets)
    for length in np.unique(lengths[lengths > 1]):  # test sets are small: one block per game length
        sel = np.flatnonzero(lengths == length)
        idx = orders.offsets[sel][:, None] + np.arange(length)
        i, j = np.triu_indices(int(length), 1)
        level, pred = orders.levels[idx], predicted[idx]
        actual = np.sign(level[:, j] - level[:, i])
        missing = np.isnan(pred[:, i]) | np.isnan(pred[:, j])
        guess = np.sign(np.nan_to_num(pred[:, j] - pred[:, i]))  # 0 where a player is unseen: a predicted tie
        d = np.where((actual != 0) & (guess != 0), (actual != guess).astype(float), np.where(actual == guess, 0.0, penalty))
        counted = np.ones_like(missing) if unseen == "tie" else ~missing
        distance[sel] = np.where(counted, d, 0.0).sum(axis=1)
        pairs[sel] = counted.sum(axis=1)
        missing_pairs[sel] = missing.sum(axis=1)
    return GameDistances(distance, pairs, missing_pairs)
