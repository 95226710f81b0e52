"""Poisson redraws by guide-table inversion: the right distribution, reproducible, and the fallback."""

import numpy as np
import pytest
from scipy.stats import poisson

from pipeline.methods import resample
from pipeline.methods.resample import poisson_draws


@pytest.mark.parametrize("weight", [0.0, 0.5, 3.0, 7.25, 400.0])
def test_draws_follow_the_poisson_law(weight):
    draws = poisson_draws(np.array([weight, weight]), 40_000, np.random.default_rng(0)).ravel()
    values, seen = np.unique(draws, return_counts=True)
    expected = poisson.pmf(values, weight) * len(draws)
    frequent = expected > 50  # a chi-square-style check on the frequent values: within 5 standard deviations
    assert np.all(np.abs(seen[frequent] - expected[frequent]) < 5 * np.sqrt(expected[frequent]))
    assert draws.mean() == pytest.approx(weight, abs=5 * np.sqrt(max(weight, 1e-9) / len(draws)) + 1e-12)


def test_same_seed_same_draws_and_the_fallback_is_poisson_too(monkeypatch):
    weights = np.array([1.0, 2.0, 30.0, 0.0])
    first = poisson_draws(weights, 100, np.random.default_rng(5))
    assert first.tobytes() == poisson_draws(weights, 100, np.random.default_rng(5)).tobytes()
    assert first.shape == (100, 4) and np.all(first[:, 3] == 0)
    monkeypatch.setattr(resample, "TABLE_MAX", 1)
    fallback = poisson_draws(weights, 100, np.random.default_rng(5))
    assert fallback.tobytes() == np.random.default_rng(5).poisson(weights, size=(100, 4)).astype(np.float64).tobytes()


def test_each_draw_inverts_the_cdf_at_its_own_uniform_also_among_cells_of_weight_zero():
    """Every cell consumes one uniform, weight 0 or not, and its draw is the Poisson quantile of that
    uniform: skipping the look-ups of weight-0 cells changes no draw of the others."""
    rng = np.random.default_rng(1)
    weights = rng.integers(0, 4, 3_000) * rng.choice([1.0, 0.5, 7.25], 3_000)  # about a quarter of weight 0
    draws = poisson_draws(weights, 20, np.random.default_rng(9))
    u = np.random.default_rng(9).random((20, len(weights)))
    below = poisson.cdf(draws - 1, weights)
    assert np.all(draws[:, weights == 0] == 0)
    assert np.all((below <= u) & (u < poisson.cdf(draws, weights)))
