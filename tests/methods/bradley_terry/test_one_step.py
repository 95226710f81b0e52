"""m-Elo's one-step bootstrap (`refit=onestep`) against the exact bootstrap on the same draws."""


import numpy as np
import polars as pl
import pytest

from benchmarks.bench_m_elo_sparse import share_within_a_tenth
from benchmarks.datasets import ROOT as DATASETS
from pipeline.methods.bradley_terry.core import Cells, elo_points, fit
from pipeline.methods.bradley_terry.m_elo import bootstrap_intervals
from pipeline.methods.bradley_terry.m_elo import m_elo as m_elo_method
from pipeline.methods.registry import Spec
from pipeline.stats.counts import PairwiseCounts

PRIOR, ROUNDS, SEED = 0.01, 200, 3
OPTIONS = {"davidson": False, "prior": PRIOR, "tol": 1e-6, "max_iter": 100}
WTA = DATASETS / "wta_matches"
ARENA_HARD = DATASETS / "arena_hard_auto"


def long_tail(players: int, matches: int, seed: int) -> tuple[Cells, np.ndarray]:
    """Bradley-Terry matches among players whose activity is log-normal (median ~6 matches, a few with
    hundreds; stronger players play more), and the true skills."""
    rng = np.random.default_rng(seed)
    skill = rng.normal(0.0, 1.0, players)
    activity = np.exp(2.0 * (0.6 * skill + 0.8 * rng.normal(0.0, 1.0, players)))
    a = rng.choice(players, matches, p=activity / activity.sum())
    b = rng.choice(players, matches, p=activity / activity.sum())
    a, b = a[a != b], b[a != b]
    a_won = rng.random(len(a)) < 1 / (1 + np.exp(skill[b] - skill[a]))
    winner, loser = np.where(a_won, a, b), np.where(a_won, b, a)
    columns = np.column_stack([winner < loser, winner > loser, np.zeros(len(a))]).astype(float)
    return Cells.summed(players, np.minimum(a, b), np.maximum(a, b), columns), skill


def wta_slice(since: str) -> Cells:
    """The WTA matches since a date, players numbered in id order."""
    matches = pl.read_parquet(WTA / "wta_matches_2000_2024.parquet", columns=["tourney_date", "winner_id", "loser_id"])
    matches = matches.filter(pl.col("tourney_date") >= pl.lit(since).str.to_date())
    ids = np.unique(np.r_[matches["winner_id"].to_numpy(), matches["loser_id"].to_numpy()])
    winner, loser = np.searchsorted(ids, matches["winner_id"].to_numpy()), np.searchsorted(ids, matches["loser_id"].to_numpy())
    columns = np.column_stack([winner < loser, winner > loser, np.zeros(len(winner))]).astype(float)
    return Cells.summed(len(ids), np.minimum(winner, loser), np.maximum(winner, loser), columns)


def arena_hard() -> Cells:
    """Arena-hard's judged battles (ties half a win each way), models numbered in name order."""
    battles = pl.read_csv(ARENA_HARD / "arena_hard_battles_20240907.csv")
    names = np.unique(np.r_[battles["model_a"].to_numpy(), battles["model_b"].to_numpy()])
    a, b = np.searchsorted(names, battles["model_a"].to_numpy()), np.searchsorted(names, battles["model_b"].to_numpy())
    winner = battles["winner"].to_numpy()
    a_won, b_won, tie = winner == "model_a", winner == "model_b", winner == "tie"
    a_first = a < b
    columns = np.column_stack([np.where(a_first, a_won, b_won), np.where(a_first, b_won, a_won), tie]).astype(float)
    return Cells.summed(len(names), np.minimum(a, b), np.maximum(a, b), columns)


def both(cells: Cells) -> tuple[dict, dict]:
    """The exact and the one-step bootstrap's columns, from the same draws."""
    full = fit(cells, prior=PRIOR)
    exact, _ = bootstrap_intervals(cells, full, OPTIONS, ROUNDS, SEED, 400.0, 1000.0)
    one_step, _ = bootstrap_intervals(cells, full, OPTIONS, ROUNDS, SEED, 400.0, 1000.0, algorithm="onestep")
    return exact, one_step


def test_one_step_endpoints_are_within_a_tenth_of_the_exact_width_on_a_long_tail():
    exact, one_step = both(long_tail(400, 5000, seed=1)[0])
    assert share_within_a_tenth(exact, one_step) >= 0.99
    measured = np.isfinite(exact["ci_low"])  # players drawn into no match have no interval
    assert measured.sum() > 200
    assert np.all(one_step["ci_high"][measured] > one_step["ci_low"][measured])  # a step not taken: every round at the full fit


@pytest.mark.skipif(not WTA.is_dir(), reason="the WTA data set is not on this machine")
def test_one_step_endpoints_are_within_a_tenth_of_the_exact_width_on_wta():
    cells = wta_slice("2021-01-01")  # four seasons: a bounded slice, still long-tailed
    assert cells.n > 500
    exact, one_step = both(cells)
    assert share_within_a_tenth(exact, one_step) >= 0.99


@pytest.mark.skipif(not ARENA_HARD.is_dir(), reason="the Arena-hard data set is not on this machine")
def test_one_step_endpoints_are_within_a_tenth_of_the_exact_width_on_arena_hard():
    cells = arena_hard()  # 2,136 judged battles among 5 LLMs, ties among them: the dense end, where one step is near exact
    assert cells.n == 5 and cells.ties.sum() > 0
    exact, one_step = both(cells)
    assert share_within_a_tenth(exact, one_step) >= 0.99


def test_one_step_coverage_of_the_true_skills_is_within_two_points_of_the_exact_bootstrap():
    covered = {"exact": [], "onestep": []}
    for seed in (2, 4):
        cells, skill = long_tail(300, 4000, seed)
        truth = elo_points(skill, 400.0, 1000.0)
        for name, columns in zip(covered, both(cells)):
            measured = np.isfinite(columns["ci_low"])
            covered[name].extend((columns["ci_low"] <= truth)[measured] & (truth <= columns["ci_high"])[measured])
    exact, one_step = np.mean(covered["exact"]), np.mean(covered["onestep"])
    # the intervals mean something (agreement between empty intervals would pass); below 95%: a player in a
    # handful of matches is pulled towards the mean by the prior and by the others' skills in the centring
    assert exact > 0.5
    assert abs(one_step - exact) <= 0.02


def test_refit_is_checked_and_needs_half_ties():
    with pytest.raises(ValueError, match="refit"):
        Spec.parse("m-elo:refit=twostep")
    pairs = PairwiseCounts(np.arange(2), np.array([[0.0, 3.0], [2.0, 0.0]]), np.array([[0.0, 1.0], [1.0, 0.0]]))
    for options in ({"ties": "davidson"}, {"covariates": "len"}):  # refused before any fit
        with pytest.raises(ValueError, match="refit=onestep needs ties=half and no covariates"):
            m_elo_method(pairs, np.arange(2), refit="onestep", bootstrap=10, **options)
