"""Style control: m-elo:covariates against an independent logistic regression, and on a log where
long answers win more than their models' strength says."""

import numpy as np
import polars as pl
import pytest

from pipeline.methods import Spec, needed_statistics, run
from pipeline.methods.convergence import NoEstimate
from pipeline.stats import reduce_store
from pipeline.store import Store

MODELS = [f"model-{i}" for i in range(6)]
STRENGTH = np.linspace(0.0, 1.0, 6)  # model-5 is the strongest
VERBOSITY = np.array([900.0, 700.0, 500.0, 350.0, 250.0, 150.0])  # and the weaker, the longer its answers


def style_rows(seed: int, battles: int, effect: float, ties: float = 0.0) -> list[dict]:
    """Battles where the outcome depends on strength and, with `effect`, on the normalised length difference."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 6, battles)
    b = (a + rng.integers(1, 6, battles)) % 6
    length_a = np.round(VERBOSITY[a] * rng.lognormal(0, 0.3, battles))
    length_b = np.round(VERBOSITY[b] * rng.lognormal(0, 0.3, battles))
    md_a, md_b = rng.integers(0, 8, battles), rng.integers(0, 8, battles)
    z = (length_a - length_b) / (length_a + length_b + 1)
    p = 1 / (1 + np.exp(-(STRENGTH[a] - STRENGTH[b] + effect * z)))
    u = rng.random(battles)
    winner = np.where(u < ties, "tie", np.where(rng.random(battles) < p, "model_a", "model_b"))
    return [{"model_a": MODELS[i], "model_b": MODELS[j], "winner": w, "features_a.len": x, "features_b.len": y,
             "features_a.md": m, "features_b.md": n, "weight": float(k)}
            for i, j, w, x, y, m, n, k in zip(a, b, winner, length_a, length_b, md_a, md_b, rng.choice([1, 2], battles))]


def rate(tmp_path, rows: list[dict], specs: list[str], **options):
    path = tmp_path / f"battles-{len(list(tmp_path.iterdir()))}.csv"
    pl.DataFrame(rows).write_csv(path)
    store = Store(tmp_path / f"store-{path.stem}")
    store.ingest([path], "battles")
    stats = reduce_store(store, "battles", needed_statistics(specs), **options)
    names = store.dictionary().names
    return {spec: run(spec, stats) for spec in specs}, names


def order(ratings, names) -> list[str]:
    return [names[i] for i in ratings.agents[np.argsort(-ratings.score, kind="stable")]]


def logistic_oracle(rows: list[dict], covariates: list[str]) -> tuple[dict[str, float], np.ndarray]:
    """The same model by statsmodels' GLM (binomial, logit link, frequency weights) on a design built here:
    a tie is half a win each way; ratings relative to model-0, then centred."""
    import statsmodels.api as sm

    frame = pl.DataFrame(rows)
    weight = frame["weight"].to_numpy()
    diffs = []
    for c in covariates:
        fa, fb = frame[f"features_a.{c}"].to_numpy().astype(float), frame[f"features_b.{c}"].to_numpy().astype(float)
        d = (fa - fb) / (fa + fb + 1)
        diffs.append(d / np.sqrt(np.sum(weight * d * d) / weight.sum()))
    agents = np.zeros((len(rows), len(MODELS)))
    agents[np.arange(len(rows)), [MODELS.index(m) for m in frame["model_a"]]] += 1
    agents[np.arange(len(rows)), [MODELS.index(m) for m in frame["model_b"]]] -= 1
    x = np.column_stack([agents[:, 1:], *diffs])
    won = (frame["winner"] == "model_a").to_numpy().astype(float) + 0.5 * (frame["winner"] == "tie").to_numpy()
    # a row per outcome: y=1 with the weight of a's share, y=0 with b's
    design = np.vstack([x, x])
    y = np.r_[np.ones(len(rows)), np.zeros(len(rows))]
    w = np.r_[weight * won, weight * (1 - won)]
    keep = w > 0
    result = sm.GLM(y[keep], design[keep], family=sm.families.Binomial(), freq_weights=w[keep]).fit(tol=1e-14, maxiter=100)
    beta = np.r_[0.0, result.params[: len(MODELS) - 1]]
    return dict(zip(covariates, result.params[len(MODELS) - 1:])), beta - beta.mean()


def test_matches_an_independent_logistic_regression(tmp_path):
    rows = style_rows(seed=2, battles=3000, effect=0.8, ties=0.15)
    spec = "m-elo:covariates=len,md,bootstrap=0"
    ratings, names = rate(tmp_path, rows, [spec])
    mine = ratings[spec]
    coefficients, beta = logistic_oracle(rows, ["len", "md"])
    assert mine.info["covariates"] == pytest.approx(coefficients, abs=1e-6)
    natural = (mine.score - 1000.0) * np.log(10) / 400
    by_name = dict(zip((names[i] for i in mine.agents), natural))
    assert np.abs(np.array([by_name[m] for m in MODELS]) - beta).max() < 1e-6
    table = mine.tables["coefficients"].to_pydict()
    assert table["feature"] == ["len", "md"]
    assert table["coefficient"] == [mine.info["covariates"]["len"], mine.info["covariates"]["md"]]


def test_controlled_ratings_recover_the_true_order_and_uncontrolled_do_not(tmp_path):
    rows = style_rows(seed=1, battles=6000, effect=1.2)
    specs = ["m-elo:covariates=len,bootstrap=200", "m-elo:bootstrap=0"]
    ratings, names = rate(tmp_path, rows, specs)
    truth = MODELS[::-1]
    assert order(ratings[specs[0]], names) == truth
    assert order(ratings[specs[1]], names) != truth
    low, high = ratings[specs[0]].info["covariate_intervals"]["len"]
    assert 0 < low < ratings[specs[0]].info["covariates"]["len"] < high
    assert {"ci_low", "ci_high", "rank_low", "rank_high", "tier", "rank_ci"} <= ratings[specs[0]].extras.keys()


def test_no_length_effect_gives_a_coefficient_near_zero_and_the_plain_order(tmp_path):
    rows = style_rows(seed=3, battles=6000, effect=0.0)
    specs = ["m-elo:covariates=len,bootstrap=200", "m-elo:bootstrap=0"]
    ratings, names = rate(tmp_path, rows, specs)
    low, high = ratings[specs[0]].info["covariate_intervals"]["len"]
    assert low < 0 < high


def test_swapping_the_sides_of_battles_changes_nothing(tmp_path):
    rows = style_rows(seed=4, battles=1500, effect=1.0, ties=0.1)
    swap = {"model_a": "model_b", "model_b": "model_a", "tie": "tie"}
    swapped = [dict(r, model_a=r["model_b"], model_b=r["model_a"], winner=swap[r["winner"]],
                    **{"features_a.len": r["features_b.len"], "features_b.len": r["features_a.len"],
                       "features_a.md": r["features_b.md"], "features_b.md": r["features_a.md"]}) if k % 2 else r
               for k, r in enumerate(rows)]
    spec = "m-elo:covariates=len,md,bootstrap=0"
    one, names = rate(tmp_path, rows, [spec])
    two, _ = rate(tmp_path, swapped, [spec])
    assert one[spec].info["covariates"] == pytest.approx(two[spec].info["covariates"], abs=1e-9)
    assert np.abs(one[spec].score - two[spec].score).max() < 1e-6


def test_same_bits_whatever_the_workers_and_partitioning(tmp_path):
    from distributed import Client, LocalCluster

    rows = style_rows(seed=5, battles=800, effect=1.0, ties=0.1)
    spec = "m-elo:covariates=len,md,bootstrap=60"
    results = []
    for workers, target in ((1, 10_000), (2, 100)):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
                Client(cluster) as client:
            path = tmp_path / f"b{workers}.csv"
            pl.DataFrame(rows).write_csv(path)
            store = Store(tmp_path / f"s{workers}")
            store.ingest([path], "battles")
            stats = reduce_store(store, "battles", needed_statistics([spec]), client=client, target_rows=target)
            results.append((stats.extra["battle_features"], run(spec, stats, client=client)))
    (f1, r1), (f2, r2) = results
    for field in ("a", "b", "outcome", "weight", "side_a", "side_b"):
        assert getattr(f1, field).tobytes() == getattr(f2, field).tobytes(), field
    assert r1.score.tobytes() == r2.score.tobytes()
    assert all(r1.extras[k].tobytes() == r2.extras[k].tobytes() for k in r1.extras)
    assert r1.info == r2.info


def test_refuses_missing_and_constant_features(tmp_path):
    rows = style_rows(seed=6, battles=300, effect=0.5)
    with pytest.raises(NoEstimate, match="no feature words"):
        rate(tmp_path, rows, ["m-elo:covariates=words,bootstrap=0"])
    flat = [dict(r, **{"features_b.md": r["features_a.md"]}) for r in rows]
    with pytest.raises(NoEstimate, match="md never differs"):
        rate(tmp_path, flat, ["m-elo:covariates=md,bootstrap=0"])
    without = [{k: v for k, v in r.items() if not k.startswith("features")} for r in rows[:50]]
    path = tmp_path / "plain.csv"
    pl.DataFrame(without).write_csv(path)
    store = Store(tmp_path / "mixed")
    store.ingest([path], "battles")
    pl.DataFrame(rows).write_csv(tmp_path / "styled.csv")
    store.ingest([tmp_path / "styled.csv"], "battles")
    stats = reduce_store(store, "battles", needed_statistics(["m-elo:covariates=len"]))
    with pytest.raises(NoEstimate, match="lack a value of len"):
        run("m-elo:covariates=len,bootstrap=0", stats)


def test_covariates_are_read_only_when_asked():
    assert "battle_features" not in Spec.parse("m-elo").statistics
    assert "battle_features" in Spec.parse("m-elo:covariates=len").statistics
    with pytest.raises(ValueError, match="ties=half"):
        from pipeline.methods.bradley_terry.m_elo import m_elo
        m_elo(None, np.arange(2), None, None, ties="davidson", covariates="len")


def test_covariates_that_separate_wins_from_losses_are_refused(tmp_path):
    """Six battles that length and markdown explain perfectly: no finite estimate, not a huge one."""
    rows = [{"model_a": a, "model_b": b, "winner": w, "features_a.len": la, "features_b.len": lb, "features_a.md": ma,
             "features_b.md": mb, "weight": 1.0}
            for a, b, w, la, lb, ma, mb in [("alpha", "beta", "model_a", 812, 240, 9, 2), ("beta", "gamma", "tie", 301, 296, 0, 1),
                                            ("gamma", "alpha", "model_b", 100, 700, 0, 5), ("beta", "alpha", "model_a", 500, 200, 3, 1),
                                            ("gamma", "beta", "model_a", 330, 300, 2, 2), ("alpha", "gamma", "model_b", 200, 250, 1, 4)]]
    with pytest.raises(NoEstimate, match="runs off to infinity"):
        rate(tmp_path, rows, ["m-elo:covariates=len,md,bootstrap=0"])
    ratings, _ = rate(tmp_path, rows, ["m-elo:covariates=len,md,bootstrap=0,prior=0.01"])
    assert np.isfinite(list(ratings["m-elo:covariates=len,md,bootstrap=0,prior=0.01"].info["covariates"].values())).all()


def test_normalised_differences_stay_exact_near_the_float_maximum():
    from fractions import Fraction

    from pipeline.methods.bradley_terry.style_control import normalised_differences

    a, b = np.array([1.7e308, 3.0, 0.0]), np.array([1.0e308, 5.0, 0.0])
    exact = [float((Fraction(x) - Fraction(y)) / (Fraction(x) + Fraction(y) + 1)) for x, y in zip(a, b)]
    assert np.allclose(normalised_differences(a, b), exact, rtol=1e-15, atol=0)


def test_weights_2_to_the_54_apart_fit_to_the_exact_ratings(tmp_path):
    # P(b beats a) was 1 - P(a beats b): below an ulp the heavy pair's slope was rounding noise and the line
    # search failed. The cycle A > B > C > A (weights 2^30, 2^-24, 1) has equal lengths; C - E - D are even
    # records whose longer answer wins half the time: the coefficient is 0 and the cycle's fit is known.
    from tests.methods.bradley_terry.test_core import cycle_differences

    weights = [2.0**30, 2.0**-24, 1.0]
    even = [("C", "E", "model_a", 1, 1), ("E", "C", "model_a", 1, 1), ("D", "E", "model_a", 2, 1), ("D", "E", "model_a", 1, 2),
            ("E", "D", "model_a", 2, 1), ("E", "D", "model_a", 1, 2)]
    rows = [{"model_a": a, "model_b": b, "winner": w, "features_a.len": la, "features_b.len": lb, "weight": weight}
            for (a, b, w, la, lb), weight in zip([("A", "B", "model_a", 1, 1), ("B", "C", "model_a", 1, 1), ("C", "A", "model_a", 1, 1),
                                                  *even], weights + [1.0] * len(even))]
    spec = "m-elo:covariates=len,bootstrap=0"
    ratings, names = rate(tmp_path, rows, [spec])
    got = dict(zip([names[a] for a in ratings[spec].agents], ratings[spec].score * np.log(10) / 400))
    cycle = np.array([got["A"], got["B"], got["C"]])
    assert ratings[spec].info["stopped"] == "converged" and abs(ratings[spec].info["covariates"]["len"]) < 1e-9
    np.testing.assert_allclose(cycle - np.roll(cycle, -1), cycle_differences(weights), rtol=0, atol=1e-6)
