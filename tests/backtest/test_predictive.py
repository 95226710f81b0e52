import numpy as np
import pytest
from scipy import stats

from pipeline.backtest.predictive import auc, brier, log_loss, predictive_metrics, unit_pairs
from pipeline.methods.ratings import Ratings
from pipeline.stats.partials import WeakOrders


def test_log_loss_and_brier_by_hand():
    p, y = np.array([0.8, 0.5, 0.1]), np.array([1.0, 0.5, 1.0])
    assert log_loss(p, y) == pytest.approx(-(np.log(0.8) + np.log(0.5) + np.log(0.1)) / 3)
    assert brier(p, y) == pytest.approx((0.04 + 0.0 + 0.81) / 3)
    assert brier(p, y, np.array([2.0, 0.0, 0.0])) == pytest.approx(0.04)


def test_auc_matches_mann_whitney_and_brute_force():
    rng = np.random.default_rng(0)
    score = rng.integers(0, 6, size=60).astype(float)  # many ties in the score
    label = rng.random(60) < 0.4
    u = stats.mannwhitneyu(score[label], score[~label]).statistic
    assert auc(score, label) == pytest.approx(u / (label.sum() * (~label).sum()))
    w = rng.random(60)
    pos, neg = np.flatnonzero(label), np.flatnonzero(~label)
    num = sum(w[i] * w[j] * ((score[i] > score[j]) + 0.5 * (score[i] == score[j])) for i in pos for j in neg)
    assert auc(score, label, w) == pytest.approx(num / (w[pos].sum() * w[neg].sum()))
    assert np.isnan(auc(score, np.ones(60, bool)))


def test_metrics_of_elo_style_ratings():
    # Agents 0, 1, 2 rated 400 apart (logistic scale 400): P(0 beats 1) = 10/11.
    ratings = Ratings.from_scores(np.array([0, 1, 2]), np.array([800.0, 400.0, 0.0]), info={"logistic_scale": 400})
    # Two battles: 0 beats 1; 2 beats 1 (an upset). Agent 7 is unseen in a third battle.
    ballot = np.array([0, 0, 1, 1, 2, 2])
    agent = np.array([0, 1, 2, 1, 0, 7])
    level = np.array([0.0, 1.0, 0.0, 1.0, 0.0, 1.0])
    orders = WeakOrders.from_rows(ballot, agent, level, np.ones(6))
    a, b, y, w = unit_pairs(orders)
    assert len(a) == 3 and np.all(y == 1.0)
    rows = ratings.positions(orders.agents)
    skip = predictive_metrics(ratings, orders, rows, "skip")
    p = np.array([10 / 11, 1 / 11])  # P(winner beats loser)
    assert skip["log_loss"] == pytest.approx(-np.log(p).mean())
    assert skip["brier"] == pytest.approx(((1 - p) ** 2).mean())
    assert skip["auc"] == pytest.approx(0.5)  # oriented both ways: one right (10/11), one wrong (1/11)
    tie = predictive_metrics(ratings, orders, rows, "tie")
    assert tie["log_loss"] == pytest.approx(-(np.log(p).sum() + np.log(0.5)) / 3)


def test_methods_without_probabilities_raise():
    ratings = Ratings.from_scores(np.array([0, 1]), np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="win probabilities"):
        ratings.win_probability(np.array([0]), np.array([1]))
