"""Affinity-entropy equilibria [GTLLM]: target, clone invariance under duplicated prompts."""

import numpy as np
import pytest

from pipeline.games import Game
from pipeline.methods.affinity import affinity_cce, affinity_ne, affinity_target
from pipeline.stats.game_data import PromptCounts


def test_target_spreads_each_clone_group_evenly():
    # Strategies 0 and 1 are clones: affinity entropy gives each group 1/2, split evenly inside.
    g = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    np.testing.assert_allclose(affinity_target(g, 0), [0.25, 0.25, 0.5], atol=1e-6)


@pytest.mark.parametrize("method", [affinity_cce, affinity_ne])
def test_rock_paper_scissors_rates_everything_zero(method):
    a = np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0.0]])
    r = method(Game((a, -a), ("x", "y"), (("R", "P", "S"),) * 2))
    np.testing.assert_allclose(r.score, 0.0, atol=1e-6)
    assert r.extras["player"].tolist() == ["x"] * 3 + ["y"] * 3


def _battles(copies: int) -> PromptCounts:
    """Three models on four prompts; prompt 3 (adversarial to model 0) repeated `copies` times."""
    rng = np.random.default_rng(5)
    rows = []
    for p in range(4 + copies):
        base = min(p, 3)
        local = np.random.default_rng(base)
        for a in range(3):
            for b in range(3):
                if a != b:
                    wins = float(local.integers(0, 4)) + (3.0 if (base == 3 and b == 0) else 0.0)
                    rows.append((p, a, b, wins))
    prompt, a, b, wins = (np.array(c) for c in zip(*rows))
    del rng
    return PromptCounts(np.arange(3), prompt, a, b, wins, np.zeros(len(wins)))


def test_cce_ratings_unchanged_when_a_prompt_is_duplicated_many_times():
    base = affinity_cce(_battles(0), game="king-of-the-hill")
    many = affinity_cce(_battles(30), game="king-of-the-hill")
    np.testing.assert_allclose(many.score, base.score, atol=1e-5)
