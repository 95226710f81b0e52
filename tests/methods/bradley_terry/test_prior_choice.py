"""`prior=auto` (`pipeline.methods.bradley_terry.prior_choice`) for m-Elo, style control and am-Elo: on long-tailed
logs with known skills the prior chosen by cross-validation rates better and predicts better than a fixed small
one; too little data is refused in one line; the choice does not depend on store ids."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from pipeline.methods import needed_statistics, run
from pipeline.methods.bradley_terry.core import LN10
from pipeline.methods.bradley_terry.prior_choice import GRID, fold_weights
from pipeline.methods.convergence import RatingError
from pipeline.stats import reduce_store
from pipeline.stats.in_memory import statistics_of_records
from pipeline.store import Store

PLAYERS = 150
EFFECT = 1.0  # style: log-odds per unit of Arena's normalised length difference
ABILITY = (1.6, 1.2, 1.0, 0.7, 0.5)  # am-Elo: each judge's relative ability (mean 1: the average annotator)


def long_tail_battles(rng: np.random.Generator, skill: np.ndarray, verbosity: np.ndarray, n: int) -> list[dict]:
    """Battles between players drawn by a Zipf-like activity (a few regulars, many with one or two), each judged by
    one of five judges of known ability and with answer lengths: P(a wins) = expit(ability (s_a - s_b) + EFFECT z),
    z the normalised length difference."""
    activity = 1 / np.arange(1, len(skill) + 1) ** 1.2
    rows = []
    while len(rows) < n:
        a, b = rng.choice(len(skill), 2, p=activity / activity.sum())
        if a != b:
            judge = int(rng.integers(len(ABILITY)))
            len_a, len_b = (round(float(v * rng.lognormal(0, 0.3))) for v in verbosity[[a, b]])
            z = (len_a - len_b) / (len_a + len_b + 1)
            won = rng.random() < 1 / (1 + np.exp(-(ABILITY[judge] * (skill[a] - skill[b]) + EFFECT * z)))
            rows.append({"model_a": f"p{a:03d}", "model_b": f"p{b:03d}", "winner": "model_a" if won else "model_b",
                         "judge": f"j{judge}", "features_a.len": len_a, "features_b.len": len_b})
    return rows


def without_style(rows: list[dict]) -> list[dict]:
    """The same battles with outcomes from skill alone (one judge), for m-Elo."""
    return [dict(r, judge="j2") for r in rows]


@pytest.fixture(scope="module")
def world():
    rng = np.random.default_rng(11)
    skill, verbosity = rng.normal(0, 1, PLAYERS), rng.lognormal(6, 0.5, PLAYERS)
    return skill, long_tail_battles(rng, skill, verbosity, 1500), long_tail_battles(rng, skill, verbosity, 1500)


def natural(ratings, names: list[str]) -> dict[str, float]:
    """Each rated player's rating in natural units (of the average annotator, for am-Elo), by name."""
    scale = float(ratings.info["logistic_scale"])
    return {names[a]: s * LN10 / scale for a, s in zip(ratings.agents.tolist(), ratings.score.tolist())}


def logit_of(ratings, rating: dict[str, float]):
    """The fitted model's log-odds that a battle's model_a wins: ratings, plus the length coefficient (style
    control) or times the judge's relative ability (am-Elo)."""
    if "coefficients" in ratings.tables:
        table = ratings.tables["coefficients"].to_pydict()
        slope = table["coefficient"][0] / table["normaliser"][0]
        return lambda t: rating[t["model_a"]] - rating[t["model_b"]] + slope * (
            (t["features_a.len"] - t["features_b.len"]) / (t["features_a.len"] + t["features_b.len"] + 1))
    if "annotators" in ratings.tables:
        table = ratings.tables["annotators"].to_pydict()
        relative = {f"j{j}": theta * len(table["judge"]) for j, theta in zip(table["judge_id"], table["ability_refit"])}
        return lambda t: relative[t["judge"]] * (rating[t["model_a"]] - rating[t["model_b"]])
    return lambda t: rating[t["model_a"]] - rating[t["model_b"]]


def rating_error_and_log_loss(ratings, names, skill, test) -> tuple[float, float]:
    """The root-mean-square error of the centred ratings against the centred skills, and the log-loss of the
    held-out battles between rated players."""
    rating = natural(ratings, names)
    seen = sorted(rating)
    truth = np.array([skill[int(n[1:])] for n in seen])
    estimate = np.array([rating[n] for n in seen])
    error = float(np.sqrt(np.mean(((estimate - estimate.mean()) - (truth - truth.mean())) ** 2)))
    logit = logit_of(ratings, rating)
    played = [t for t in test if t["model_a"] in rating and t["model_b"] in rating]
    z = np.array([logit(t) for t in played])
    won = np.array([t["winner"] == "model_a" for t in played])
    return error, float(np.mean(np.logaddexp(0.0, np.where(won, -z, z))))


METHODS = {  # spec without its prior, and whether its log has styles and several judges
    "m-elo": ("m-elo:bootstrap=0", False),
    "style control": ("m-elo:covariates=len,bootstrap=0", True),
    "am-elo": ("am-elo:min_records=1", True),
}


@pytest.mark.parametrize("method", sorted(METHODS))
def test_auto_rates_and_predicts_better_than_a_fixed_small_prior(world, method):
    skill, train, test = world
    base, styled = METHODS[method]
    train, test = (train, test) if styled else (without_style(train), without_style(test))
    auto, small = f"{base},prior=auto", f"{base},prior=0.01"
    stats, names = statistics_of_records(train, "battles", needed_statistics([auto, small]))
    chosen = run(auto, stats)
    error, loss = zip(*(rating_error_and_log_loss(r, names, skill, test) for r in (chosen, run(small, stats))))
    assert error[0] < 0.8 * error[1], error
    assert loss[0] < loss[1], loss
    info = chosen.info
    assert info["prior"] in GRID and len(info["prior_curve"]) == len(GRID) and info["prior_chosen_by"].startswith("held-out")
    assert max(v for _, v in info["prior_curve"]) == dict(map(tuple, info["prior_curve"]))[info["prior"]]
    assert info["prior"] > 0.01  # a long tail wants more than a token prior
    with pytest.raises(RatingError, match=rf"do not exist.*use {base.partition(':')[0]}:prior=auto"):  # prior=0: no estimate
        run(base, stats)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_the_choice_does_not_depend_on_store_ids(world, method, tmp_path):
    """Two stores of the same battles, one of which first ingested a ballot naming every other player (a store
    numbers a file's new names in sorted order, so each player gets another id): the same curve, choice and ratings."""
    _, train, _ = world
    spec = f"{METHODS[method][0]},prior=auto"
    battles = tmp_path / "battles.csv"
    pl.DataFrame(train[:400]).write_csv(battles)
    unrelated = tmp_path / "unrelated.csv"
    pl.DataFrame({"ranking": [">".join(f"p{i:03d}" for i in range(PLAYERS - 1, 0, -2))]}).write_csv(unrelated)
    results = []
    for label, first in (("plain", None), ("rotated", unrelated)):
        store = Store(tmp_path / label)
        if first is not None:
            store.ingest([first], "ballots")
        store.ingest([battles], "battles")
        names = store.dictionary("agents").names
        ratings = run(spec, reduce_store(store, "battles", needed_statistics([spec])))
        results.append((names, ratings))
    (names, ratings), (other_names, other) = results
    assert names.index("p001") != other_names.index("p001")
    assert ratings.info["prior_curve"] == other.info["prior_curve"] and ratings.info["prior"] == other.info["prior"]
    score = {names[a]: s for a, s in zip(ratings.agents.tolist(), ratings.score.tolist())}
    assert score == pytest.approx({other_names[a]: s for a, s in zip(other.agents.tolist(), other.score.tolist())}, abs=1e-6)


def test_folds_deal_whole_battles_and_keep_every_weight():
    columns = np.array([[5.0, 0.5, 2.0], [3.0, 1.0, 0.0], [1.0, 0.0, 4.0]])
    dealt = fold_weights(columns, 5, np.random.default_rng(0))
    assert dealt.shape == (5, 3, 3) and np.allclose(dealt.sum(axis=0), columns)
    assert np.allclose(dealt, np.round(dealt * 2) / 2)  # whole battles, the one half-battle kept whole in one fold


@pytest.mark.parametrize("spec", ["m-elo:prior=auto,bootstrap=0", "m-elo:prior=auto,covariates=len,bootstrap=0",
                                  "am-elo:prior=auto"])
def test_auto_on_data_too_small_to_cross_validate_is_one_line(spec):
    rows = [{"model_a": "a", "model_b": "b", "winner": "model_a", "judge": "j", "features_a.len": 3, "features_b.len": 1},
            {"model_a": "b", "model_b": "c", "winner": "model_a", "judge": "j", "features_a.len": 3, "features_b.len": 8}] * 3
    stats, _ = statistics_of_records(rows, "battles", needed_statistics([spec]))
    name = spec.partition(":")[0]
    with pytest.raises(RatingError, match=rf"^{name}: prior=auto needs at least 20 battles .* the data has 6; give the prior") as error:
        run(spec, stats)
    assert "\n" not in str(error.value)


def test_am_elo_scores_an_absent_annotator_as_the_average_one_and_an_absent_model_at_the_prior_centre():
    from scipy.special import log_expit

    from pipeline.backtest.stability import simulate_votes
    from pipeline.methods.bradley_terry.am_elo import CanonicalVotes, fit_am_elo, held_out_votes
    from pipeline.methods.bradley_terry.prior_choice import FOLD_TOL

    counts, _ = simulate_votes(5, 3, 60, seed=7)
    votes = CanonicalVotes.of(counts)
    weights = votes.weights(counts)
    judge = counts.judge[votes.order]
    held = (judge == 2) | (votes.second == 4)  # every vote of annotator 2, every vote on model 4
    train, test = np.where(held, 0.0, weights), np.where(held, weights, 0.0)
    _, score = held_out_votes(counts, None, votes, {"ability_prior": 1.0}, train, test, 1.0, None)
    fitted = fit_am_elo(votes.counts_with(counts, train).select(np.array([0, 1])), prior=1.0, tol=FOLD_TOL)
    assert fitted.agents.tolist() == [0, 1, 2, 3]
    rating = np.r_[fitted.rating, 0.0]  # model 4: the prior's centre
    relative = np.r_[fitted.ability * 2, 1.0]  # annotator 2: the average annotator
    z = relative[judge] * (rating[votes.first] - rating[votes.second])
    expected = np.sum(test[0] * log_expit(z) + test[1] * log_expit(-z) + test[2] / 2 * (log_expit(z) + log_expit(-z)))
    assert score == pytest.approx(expected, rel=1e-9)
