"""Stability experiments: consistency, perturbations, detection F1."""

import numpy as np
import pytest

from pipeline.backtest.stability import (consistency, f1_score, pair_agreement, perturb, perturbation_experiment,
                                         shuffle_stability, simulate_votes)
from pipeline.stats.annotators import AnnotatorCounts


def test_pair_agreement_counts_pairs_in_the_same_order():
    # pairs (0,1), (0,2), (1,2): the second ranking swaps 1 and 2 only
    assert pair_agreement(np.array([3.0, 2.0, 1.0]), np.array([3.0, 1.0, 2.0])) == pytest.approx(2 / 3)
    assert consistency(np.array([[3.0, 2.0, 1.0]] * 3)) == 1.0


def test_f1_of_detection():
    # one true positive, one false positive, one miss: precision 1/2, recall 1/2
    assert f1_score(np.array([True, True, False]), np.array([True, False, True])) == 0.5


def one_annotator(x_wins, y_wins, ties):
    return AnnotatorCounts(np.arange(2), np.array([7]), np.array([0]), np.array([0]), np.array([1]),
                           np.array([x_wins], float), np.array([y_wins], float), np.array([ties], float))


@pytest.mark.parametrize("strategy, expected", [("flip", (2.0, 6.0, 4.0)), ("equal", (0.0, 0.0, 12.0))])
def test_deterministic_perturbations(strategy, expected):
    counts = perturb(one_annotator(6, 2, 4), np.array([0]), strategy, np.random.default_rng(0))
    assert (counts.x_wins[0], counts.y_wins[0], counts.ties[0]) == expected


@pytest.mark.parametrize("strategy", ["random", "mixed"])
def test_random_perturbations_keep_the_votes_and_move_decisive_ones(strategy):
    counts = perturb(one_annotator(1000, 0, 0), np.array([0]), strategy, np.random.default_rng(0))
    # each of x's 1000 wins becomes a tie or a win for y, half and half
    assert counts.x_wins[0] == 0 and counts.y_wins[0] + counts.ties[0] == 1000
    assert 400 < counts.ties[0] < 600


def test_online_elo_is_less_consistent_than_m_elo_under_shuffles(log_stats):
    rng = np.random.default_rng(0)
    rows = [{"battle_id": str(i), "model_a": f"m{a}", "model_b": f"m{(a + d) % 6}", "winner": w}
            for i, (a, d, w) in enumerate(zip(rng.integers(0, 6, 300), rng.integers(1, 6, 300),
                                               rng.choice(["model_a", "model_b", "tie"], 300)))]
    stats, _ = log_stats(rows, {"sequence"})
    result = shuffle_stability(stats.extra["sequence"], shuffles=8, seed=1, k=32.0)
    assert result["m-elo"] == 1.0
    assert result["elo"] < 1.0


@pytest.mark.parametrize("strategy", ["random", "mixed"])
def test_detection_of_random_and_mixed_annotators(strategy):
    counts, _ = simulate_votes(15, 30, 200, seed=4)
    result = perturbation_experiment(counts, strategy=strategy, ratio=0.2, seed=5)
    assert len(result["perturbed"]) == 6
    assert result["f1"][0.005] >= 0.8
