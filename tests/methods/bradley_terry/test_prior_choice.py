"""`m-elo:prior=auto` (`pipeline.methods.bradley_terry.prior_choice`): on long-tailed logs with known skills the
prior chosen by cross-validation rates better and predicts better than a fixed small one."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.methods import needed_statistics, run
from pipeline.methods.bradley_terry.core import LN10, Cells
from pipeline.methods.bradley_terry.prior_choice import GRID, fold_weights
from pipeline.methods.convergence import RatingError
from pipeline.stats.in_memory import statistics_of_records

PLAYERS = 150


def long_tail_battles(rng: np.random.Generator, skill: np.ndarray, n: int) -> list[dict]:
    """Battles between players drawn by a Zipf-like activity (a few regulars, many with one or two), Bradley-Terry outcomes."""
    activity = 1 / np.arange(1, len(skill) + 1) ** 1.2
    rows = []
    while len(rows) < n:
        a, b = rng.choice(len(skill), 2, p=activity / activity.sum())
        if a != b:
            won = rng.random() < 1 / (1 + np.exp(skill[b] - skill[a]))
            rows.append({"model_a": f"p{a:03d}", "model_b": f"p{b:03d}", "winner": "model_a" if won else "model_b"})
    return rows


@pytest.fixture(scope="module")
def world():
    rng = np.random.default_rng(11)
    skill = rng.normal(0, 1, PLAYERS)
    return skill, long_tail_battles(rng, skill, 1500), long_tail_battles(rng, skill, 1500)


def natural(ratings, names: list[str]) -> dict[str, float]:
    """Each rated player's rating in natural units, by name."""
    scale = float(ratings.info["logistic_scale"])
    return {names[a]: s * LN10 / scale for a, s in zip(ratings.agents.tolist(), ratings.score.tolist())}


def test_auto_rates_and_predicts_better_than_a_fixed_small_prior(world):
    skill, train, test = world
    specs = ("m-elo:prior=auto,bootstrap=0", "m-elo:prior=0.01,bootstrap=0", "m-elo:bootstrap=0")
    stats, names = statistics_of_records(train, "battles", needed_statistics(specs))
    error, loss = {}, {}
    for spec in specs[:2]:
        r = run(spec, stats)
        rating = natural(r, names)
        seen = sorted(rating)
        truth = np.array([skill[int(n[1:])] for n in seen])
        estimate = np.array([rating[n] for n in seen])
        error[spec] = float(np.sqrt(np.mean(((estimate - estimate.mean()) - (truth - truth.mean())) ** 2)))
        pairs = [(rating[t["model_a"]], rating[t["model_b"]], t["winner"] == "model_a") for t in test
                 if t["model_a"] in rating and t["model_b"] in rating]
        p = np.array([1 / (1 + np.exp(b - a)) for a, b, _ in pairs])
        won = np.array([w for _, _, w in pairs])
        loss[spec] = float(-np.mean(np.where(won, np.log(p), np.log1p(-p))))
    auto, small = specs[:2]
    assert error[auto] < 0.8 * error[small], error
    assert loss[auto] < loss[small], loss
    chosen = run(auto, stats).info
    assert chosen["prior"] in GRID and len(chosen["prior_curve"]) == len(GRID)
    assert max(v for _, v in chosen["prior_curve"]) == dict(map(tuple, chosen["prior_curve"]))[chosen["prior"]]
    with pytest.raises(RatingError, match=r"do not exist.*use m-elo:prior=auto"):  # prior=0: no estimate on a long tail
        run(specs[2], stats)


def test_folds_deal_whole_battles_and_keep_every_weight():
    cells = Cells(3, np.array([0, 0, 1]), np.array([1, 2, 2]), np.array([5.0, 0.5, 2.0]), np.array([3.0, 1.0, 0.0]),
                  np.array([1.0, 0.0, 4.0]))
    dealt = fold_weights(cells, 5, np.random.default_rng(0))
    assert np.allclose(dealt.sum(axis=0), np.stack([cells.x_wins, cells.y_wins, cells.ties]))
    assert np.allclose(dealt, np.round(dealt * 2) / 2)  # whole battles, the one half-battle kept whole in one fold


def test_auto_on_data_too_small_to_cross_validate_is_one_line():
    rows = [{"model_a": "a", "model_b": "b", "winner": "model_a"}, {"model_a": "b", "model_b": "c", "winner": "model_a"}] * 3
    stats, _ = statistics_of_records(rows, "battles", needed_statistics(["m-elo:prior=auto"]))
    with pytest.raises(RatingError, match=r"^m-elo: prior=auto needs at least 20 battles .* the data has 6; give the prior") as error:
        run("m-elo:prior=auto,bootstrap=0", stats)
    assert "\n" not in str(error.value)
