"""am-Elo: annotator abilities, the paper's normalisation, the stable arena."""

import numpy as np
import pytest
from scipy.linalg import null_space
from scipy.optimize import minimize

from pipeline.backtest.stability import perturbation_experiment, simulate_votes
from pipeline.methods.bradley_terry.am_elo import am_elo as am_elo_method
from pipeline.methods.bradley_terry.am_elo import fit_am_elo
from pipeline.methods.convergence import NoEstimate
from pipeline.stats.annotators import AnnotatorCounts
from tests.conftest import SAMPLES


def am_elo(counts, **options):
    """The method on counts whose ids are in name order."""
    return am_elo_method(counts, np.arange(len(counts.agents)), **options)


def test_abilities_sum_to_one_and_a_contrarian_is_flagged():
    counts, _ = simulate_votes(6, 10, 150, seed=0)
    # annotator 3 votes against every result: the Flip perturbation, by hand
    flip = counts.judge == 3
    x_wins, y_wins = counts.x_wins.copy(), counts.y_wins.copy()
    x_wins[flip], y_wins[flip] = counts.y_wins[flip], counts.x_wins[flip]
    noisy = counts.replace(x_wins, y_wins, counts.ties)
    first = fit_am_elo(noisy)
    assert first.ability.sum() == pytest.approx(1.0)
    assert np.flatnonzero(first.ability <= 0).tolist() == [3]
    ratings = am_elo(noisy)
    table = ratings.tables["annotators"].to_pydict()
    assert table["flagged"] == [k == 3 for k in range(10)]
    assert table["ability_refit"][3] is None and ratings.info["annotators_used"] == 9
    assert ratings.info["annotators_flagged"] == 1 and ratings.info["annotators_flagged_at"] == "ability <= 0.0"
    refit = fit_am_elo(noisy.select(np.array([0, 1, 2, 4, 5, 6, 7, 8, 9])))
    assert ratings.score - ratings.score.mean() == pytest.approx(400 / np.log(10) * refit.rating, abs=1e-6)


def test_twenty_percent_flipping_annotators_are_found_and_do_not_move_the_ranking():
    counts, _ = simulate_votes(20, 50, 200, seed=1)
    result = perturbation_experiment(counts, strategy="flip", ratio=0.2, seed=2)
    assert result["f1"][0.0] >= 0.9
    assert result["consistency_am_elo"] > result["consistency_m_elo"]


def test_thin_annotators_are_left_out():
    counts, _ = simulate_votes(5, 4, 30, seed=3)
    thin = counts.select(np.array([0, 1, 2]))  # keep three annotators of 30 votes
    with pytest.raises(NoEstimate):
        ratings = am_elo(thin, min_records=31)
    ratings = am_elo(thin, min_records=30)
    assert ratings.info["annotators_too_few_records"] == 0


def test_unbounded_abilities_are_reported_without_a_prior():
    # annotator 0 votes 0 > 1 > 2 three times a pair, annotator 1 the reverse once: with sum(theta) = 1 the
    # likelihood grows without bound as theta_0 -> +inf and theta_1 -> -inf
    counts = AnnotatorCounts(np.arange(3), np.arange(2), np.array([0, 0, 0, 1, 1, 1]), np.array([0, 0, 1, 0, 0, 1]),
                             np.array([1, 2, 2, 1, 2, 2]), np.array([3.0, 3, 3, 0, 0, 0]), np.array([0.0, 0, 0, 1, 1, 1]),
                             np.zeros(6))
    with pytest.raises(NoEstimate, match="without bound"):
        am_elo(counts, prior=0.1, ability_prior=0.0)
    assert np.all(np.isfinite(am_elo(counts, prior=0.1).score))
    # 4 votes each, one annotator agreeing with everything: bounded on the plane sum(theta) = 1 (the others disagree)
    few, _ = simulate_votes(4, 3, 4, tie_rate=0.0, seed=5)
    fit = fit_am_elo(few, prior=0.1, ability_prior=0.0)
    assert fit.stopped == "converged" and np.all(np.abs(fit.ability * 3) < 10)


def test_runs_on_the_llmfao_crowd_and_publishes_the_annotator_table(tmp_path):
    import json

    import pyarrow.parquet as pq

    from pipeline.board import Board, run_board
    from pipeline.store import Store

    board = Board("crowd", "battles", (str(SAMPLES / "llmfao" / "crowd_battles.csv"),), ("am-elo",))
    out, store = tmp_path / "out", Store(tmp_path / "store")
    ratings = run_board(board, store, out).ratings[0]
    assert len(ratings.agents) == 59 and np.all(np.isfinite(ratings.score))  # data-samples/llmfao/PROVENANCE.md: 59 models
    table = pq.read_table(out / "am-elo.annotators.parquet")
    assert table.column_names == ["judge", "judge_id", "records", "ability", "flagged", "ability_refit"]
    judges = store.dictionary("judges").names
    assert table.num_rows == 124 and sorted(table.column("judge").to_pylist()) == sorted(judges)  # PROVENANCE.md: 124 crowd workers
    # the name column is the judges dictionary's entry for the store id beside it
    assert all(judges[i] == name for i, name in zip(table.column("judge_id").to_pylist(), table.column("judge").to_pylist()))
    assert sum(a for a in table.column("ability").to_pylist() if a is not None) == pytest.approx(1.0)
    assert sum(table.column("flagged").to_pylist()) == ratings.info["annotators_flagged"]
    assert (out / "am-elo.annotators.md").read_text().startswith("# crowd: am-elo.annotators\n")
    assert "ability_refit" not in (out / "leaderboard.md").read_text()  # the table is not in the leaderboard's info
    assert "am-elo.annotators.parquet" in json.loads((out / "run.json").read_text())["outputs"]


def test_running_out_of_rounds_is_one_line_with_the_numbers_and_the_agents():
    from pipeline.methods.convergence import ConvergenceError

    counts, _ = simulate_votes(6, 5, 60, seed=7)
    with pytest.raises(ConvergenceError) as failed:
        am_elo(counts, max_iter=1)
    message = failed.value.named([f"model-{i}" for i in range(6)])
    assert message.startswith("am-elo did not converge in 1 Newton iterations (largest step ") and "tol=1e-08" in message
    assert "the largest abilities M*theta: " in message and "ratings still moving most: model-" in message
    assert "\n" not in message
    converged = am_elo(counts)
    assert converged.info["stopped"] == "converged"


def test_a_board_beyond_the_dense_bound_is_refused_in_one_line(monkeypatch):
    from pipeline.methods.bradley_terry import core as bradley_terry
    from pipeline.methods.convergence import RatingError

    counts, _ = simulate_votes(6, 5, 60, seed=7)
    monkeypatch.setattr(bradley_terry, "DENSE_BYTES", 8 * 5 * 5)
    with pytest.raises(RatingError, match=r"^am-elo: 6 rated agents need a dense 6 x 6 Newton system .*rate this board with m-elo"):
        am_elo(counts)


def test_annotators_are_fitted_in_name_order():
    """Renumbering the annotators (other judge ids, same names) changes no bit."""
    counts, _ = simulate_votes(6, 5, 60, seed=7)
    order = np.array([3, 0, 4, 1, 2])
    renumbered = counts.select(order)  # annotator k of `renumbered` is annotator order[k], with its name
    assert am_elo(renumbered).score.tobytes() == am_elo(counts).score.tobytes()


def oracle(counts, prior=0.0, ability_prior=1.0):
    """scipy's exact trust-region method, then three plain Newton steps, on am-Elo's penalised negative
    log-likelihood written here from the counts' own cells, in well-scaled coordinates (R/M and M theta) of
    the plane sum(R) = 0, sum(theta) = 1; the Hessian is central differences of the gradient."""
    rated = np.unique(np.r_[counts.x, counts.y])
    n, m = len(rated), len(counts.judges)
    x, y = np.searchsorted(rated, counts.x), np.searchsorted(rated, counts.y)
    wx, wy, k = counts.x_wins + counts.ties / 2, counts.y_wins + counts.ties / 2, counts.judge
    basis_r, basis_theta = null_space(np.ones((1, n))), null_space(np.ones((1, m)))

    def point(z):
        return m * (basis_r @ z[: n - 1]), (1 + basis_theta @ z[n - 1:]) / m

    def loss(z):
        r, theta = point(z)
        d = r[x] - r[y]
        t = theta[k] * d
        value = np.sum(wx * np.logaddexp(0, -t) + wy * np.logaddexp(0, t)) + prior / m**2 / 2 * r @ r \
            + ability_prior / 2 * np.sum((m * theta - 1) ** 2)
        slope = (wx + wy) / (1 + np.exp(-t)) - wx  # d value / d t
        g_r = np.bincount(x, slope * theta[k], minlength=n) - np.bincount(y, slope * theta[k], minlength=n)
        g_theta = np.bincount(k, slope * d, minlength=m) + ability_prior * m * (m * theta - 1)
        return value, np.r_[m * basis_r.T @ (g_r + prior / m**2 * r), basis_theta.T @ g_theta / m]

    def hessian(z, h=1e-5):
        columns = np.array([(loss(z + h * e)[1] - loss(z - h * e)[1]) / (2 * h) for e in np.eye(len(z))])
        return (columns + columns.T) / 2

    z = minimize(loss, np.zeros(n + m - 2), jac=True, hess=hessian, method="trust-exact", options={"gtol": 1e-9}).x
    for _ in range(3):  # trust-exact stops where its predicted gain is below rounding, short of 1e-8
        z = z - np.linalg.solve(hessian(z), loss(z)[1])
    r, theta = point(z)
    return rated, r / m, theta


def assert_matches_oracle(counts, agent_keys=None, **options):
    fit = fit_am_elo(counts, agent_keys, **options)
    rated, rating, theta = oracle(counts, **options)
    m = len(counts.judges)
    assert fit.stopped == "converged" and fit.agents.tolist() == rated.tolist()
    assert np.abs(fit.rating - rating).max() <= 1e-8 and np.abs(fit.ability - theta).max() * m <= 1e-8
    return fit


@pytest.mark.parametrize(("seed", "shape", "options"), [
    (0, (6, 10, 150), {}), (7, (6, 5, 60), {"prior": 0.5}), (3, (20, 30, 100), {"ability_prior": 0.3}),
    (11, (12, 8, 40), {"ability_prior": 0.0, "prior": 0.1})])
def test_the_joint_newton_fit_is_the_optimum_an_independent_optimiser_finds(seed, shape, options):
    counts, _ = simulate_votes(*shape, seed=seed)
    fit = assert_matches_oracle(counts, **options)
    assert fit.iterations <= 10  # quadratic convergence from the m-Elo start


@pytest.mark.slow
@pytest.mark.parametrize("options", [{}, {"prior": 1.0, "ability_prior": 0.5}])
def test_the_llmfao_crowd_fit_is_the_optimum_an_independent_optimiser_finds(llmfao_annotators, options):
    counts, agent_keys = llmfao_annotators
    assert_matches_oracle(counts, agent_keys, **options)


@pytest.fixture(scope="module")
def llmfao_annotators(tmp_path_factory):
    from pipeline.stats import reduce_store
    from pipeline.store import Store

    store = Store(tmp_path_factory.mktemp("llmfao") / "store")
    store.ingest([SAMPLES / "llmfao" / "crowd_battles.csv"], "battles")
    statistics = reduce_store(store, "battles", {"annotators"})
    return statistics.extra["annotators"], statistics.agent_keys


def test_no_step_increases_the_objective():
    from unittest import mock

    from pipeline.methods.bradley_terry import am_elo as module

    counts, _ = simulate_votes(20, 30, 100, seed=3)
    flip = counts.judge < 12  # 40% contrarians: a start far from the optimum, where the objective is not convex
    noisy = counts.replace(np.where(flip, counts.y_wins, counts.x_wins), np.where(flip, counts.x_wins, counts.y_wins), counts.ties)
    with mock.patch.object(module, "derivatives", wraps=module.derivatives) as spy:  # a spy: the real function runs
        fit = module.fit_am_elo(noisy)
    objective = [module.penalised_loss(*call.args) for call in spy.call_args_list]  # (cells, r, theta, priors) per iteration
    assert spy.call_count == fit.iterations >= 3
    assert all(b <= a for a, b in zip(objective, objective[1:])), objective


def test_without_priors_the_ability_sum_is_the_only_gauge():
    """No priors: the likelihood is invariant under (R c, theta / c); the fit is the MLE with sum(theta) = 1,
    so scaling every weight changes nothing."""
    counts, _ = simulate_votes(8, 6, 200, seed=4)
    fit = fit_am_elo(counts, ability_prior=0.0)
    heavy = fit_am_elo(counts.replace(counts.x_wins * 1e6, counts.y_wins * 1e6, counts.ties * 1e6), ability_prior=0.0)
    assert fit.ability.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.abs(heavy.rating - fit.rating).max() < 1e-9 and np.abs(heavy.ability - fit.ability).max() < 1e-9


def test_weights_2_to_the_54_apart_fit_to_the_exact_ratings():
    # P(y beats x) was 1 - P(x beats y): below an ulp the heavy pair's residual was rounding noise and the
    # line search failed at its first step. One annotator: am-Elo is Bradley-Terry, whose fit of a cycle is known.
    from tests.methods.bradley_terry.test_core import cycle_differences

    weights = [2.0**30, 2.0**-24, 1.0]  # agent 0 beats 1, 1 beats 2, 2 beats 0
    counts = AnnotatorCounts(np.arange(3), np.arange(1), np.zeros(3, dtype=np.int64), np.array([0, 1, 0]), np.array([1, 2, 2]),
                             np.array(weights[:2] + [0.0]), np.array([0.0, 0.0, weights[2]]), np.zeros(3))
    fit = fit_am_elo(counts)
    assert fit.stopped == "converged"
    np.testing.assert_allclose(fit.rating - np.roll(fit.rating, -1), cycle_differences(weights), rtol=0, atol=1e-6)
