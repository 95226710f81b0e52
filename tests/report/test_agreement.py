"""Kendall tau-b between methods' rankings, and the agents the methods disagree on."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pipeline.report.agreement import disagreements, kendall_matrix


def test_tau_b_over_common_agents_with_ties():
    ranks = {
        "same": {"a": 1, "b": 2, "c": 3, "d": 4},
        "copy": {"a": 1, "b": 2, "c": 3, "d": 4, "extra": 5},  # `extra` is left out of every comparison
        "reverse": {"a": 4, "b": 3, "c": 2, "d": 1},
        "ties": {"a": 1, "b": 1, "c": 3, "d": 3},
        "level": {"a": 1, "b": 1, "c": 1, "d": 1},  # every agent level: no order to compare
    }
    tau = kendall_matrix(ranks)
    assert tau[0, 1] == pytest.approx(1.0) and tau[0, 2] == pytest.approx(-1.0)
    # a, b tied and c, d tied against a strict order: 4 concordant pairs of 6, tau-b = 4 / sqrt(6 * 4)
    assert tau[0, 3] == pytest.approx(4 / np.sqrt(24)) == pytest.approx(stats.kendalltau([1, 2, 3, 4], [1, 1, 3, 3]).statistic)
    assert np.isnan(tau[0, 4]) and np.allclose(tau, tau.T, equal_nan=True) and np.all(np.diag(tau) == 1)


def test_disagreements_widest_first():
    ranks = {"m1": {"a": 1, "b": 2, "c": 3, "x": 9}, "m2": {"a": 8, "b": 2, "c": 5, "x": 1}, "m3": {"a": 1, "c": 7}}
    found = disagreements(ranks, gap=3)
    assert [(d.agent, d.spread) for d in found] == [("x", 8), ("a", 7), ("c", 4)]
    assert (found[1].best_by, found[1].worst_by) == (["m1", "m3"], ["m2"])
    assert disagreements(ranks, gap=8) == []
