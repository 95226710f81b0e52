"""Pairwise predictive metrics for methods that give win probabilities (the Elo family).

The test battles are the pairs of every test unit: a battle itself, or the L(L-1)/2 pairs of an
L-player game, as Elo reads a Diplomacy game in [VasE] section 4.3. For a pair (a, b) with
outcome y = 1 if a finished ahead, 0 if b did and 1/2 for a tie, and p = P(a beats b) from
`Ratings.win_probability`:
- log-loss: -(y log p + (1 - y) log(1 - p)), a tie scoring as half a win and half a loss (the
  convention of Bradley-Terry fits that count ties as half wins), p clipped to [1e-15, 1 - 1e-15];
- Brier score: (p - y)^2;
- AUC: the probability that a decisive pair's predicted winner is the actual one, ties in p
  counting 1/2 (Mann-Whitney). Each decisive pair enters in both orientations, (p, y) and
  (1 - p, 1 - y), so the AUC does not depend on which player is listed first; ties are left out.
  Probabilities are rounded to 12 decimals first, so that p and 1 - p of equal pairs compare equal.
All three are weighted by the unit's weight. Pairs with a player the ratings do not know follow
the Kendall policy (`pipeline.backtest.kendall`): `tie` predicts p = 1/2, `skip` leaves them out.
"""

from __future__ import annotations

import numpy as np

from pipeline.methods.ratings import Ratings
from pipeline.stats.partials import WeakOrders

EPS = 1e-15


def _weights(w: np.ndarray | None, like: np.ndarray) -> np.ndarray:
    return np.ones(len(like)) if w is None else np.asarray(w, dtype=np.float64)


def log_loss(p: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> float:
    p = np.clip(np.asarray(p, dtype=np.float64), EPS, 1 - EPS)
    y = np.asarray(y, dtype=np.float64)
    return float(np.average(-(y * np.log(p) + (1 - y) * np.log1p(-p)), weights=_weights(w, p)))


def brier(p: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> float:
    p, y = np.asarray(p, dtype=np.float64), np.asarray(y, dtype=np.float64)
    return float(np.average((p - y) ** 2, weights=_weights(w, p)))


def auc(score: np.ndarray, label: np.ndarray, w: np.ndarray | None = None) -> float:
    """Weighted area under the ROC curve of `score` for binary `label` (NaN if a class is empty)."""
    score, label = np.asarray(score, dtype=np.float64), np.asarray(label).astype(bool)
    w = _weights(w, score)
    pos, neg = np.where(label, w, 0.0), np.where(label, 0.0, w)
    if pos.sum() == 0 or neg.sum() == 0:
        return float("nan")
    order = np.argsort(score, kind="stable")
    s, pos, neg = score[order], pos[order], neg[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    pos_g, neg_g = np.add.reduceat(pos, starts), np.add.reduceat(neg, starts)
    below = np.cumsum(neg_g) - neg_g  # negatives with a strictly lower score
    return float(np.sum(pos_g * (below + 0.5 * neg_g)) / (pos.sum() * neg.sum()))


def unit_pairs(orders: WeakOrders) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Member positions (into `orders.agents`) of every pair of every unit, its outcome and weight."""
    lengths = np.diff(orders.offsets)
    first, second, units = [], [], []
    for length in np.unique(lengths[lengths > 1]):
        sel = np.flatnonzero(lengths == length)
        i, j = np.triu_indices(int(length), 1)
        first.append((orders.offsets[sel][:, None] + i).ravel())
        second.append((orders.offsets[sel][:, None] + j).ravel())
        units.append(np.repeat(sel, len(i)))
    if not first:
        empty = np.zeros(0, np.int64)
        return empty, empty, np.zeros(0), np.zeros(0)
    a, b, unit = np.concatenate(first), np.concatenate(second), np.concatenate(units)
    y = np.where(orders.levels[a] < orders.levels[b], 1.0, np.where(orders.levels[a] > orders.levels[b], 0.0, 0.5))
    return a, b, y, orders.weights[unit]


def predictive_metrics(ratings: Ratings, orders: WeakOrders, rows: np.ndarray, unseen: str = "tie") -> dict[str, float]:
    """Log-loss, Brier and AUC of `ratings` on the pairs of `orders`; `rows[m]` is member m's row in ratings (-1 unseen)."""
    a, b, y, w = unit_pairs(orders)
    ra, rb = rows[a], rows[b]
    seen = (ra >= 0) & (rb >= 0)
    p = np.full(len(a), 0.5)
    p[seen] = ratings.win_probability(ra[seen], rb[seen])
    if unseen == "skip":
        p, y, w = p[seen], y[seen], w[seen]
    if not len(p):
        return {"log_loss": float("nan"), "brier": float("nan"), "auc": float("nan")}
    decisive = y != 0.5
    pd, yd, wd = np.round(p[decisive], 12), y[decisive], w[decisive]
    return {"log_loss": log_loss(p, y, w), "brier": brier(p, y, w),
            "auc": auc(np.r_[pd, np.round(1 - pd, 12)], np.r_[yd, 1 - yd] > 0.5, np.r_[wd, wd])}
