"""m-Elo: Bradley-Terry maximum likelihood, Davidson ties, existence, bootstrap intervals."""

import re

import choix
import numpy as np
import pytest
import scipy.sparse as sp

from pipeline.methods.bradley_terry.core import Cells, elo_tolerance, fit
from pipeline.methods.bradley_terry.m_elo import ROUND_TOL, bootstrap_intervals, chord_is_cheaper, round_costs, round_rows
from pipeline.methods.bradley_terry.m_elo import m_elo as m_elo_method
from pipeline.methods.convergence import ConvergenceError, NoEstimate
from pipeline.stats.counts import PairwiseCounts
from pipeline.stats.game_pairs import PerGameCounts

NONE = PerGameCounts(None)


def m_elo(pairs, per_game, **options):
    """The method on counts whose ids are in name order."""
    return m_elo_method(pairs, np.arange(pairs.n), per_game, **options)


def counts(wins, ties=None, sparse=False, agents=None):
    wins = np.asarray(wins, dtype=np.float64)
    ties = np.zeros_like(wins) if ties is None else np.asarray(ties, dtype=np.float64)
    agents = np.arange(len(wins)) if agents is None else agents
    if sparse:
        return PairwiseCounts(agents, sp.csr_array(wins), sp.csr_array(ties))
    return PairwiseCounts(agents, wins, ties)


def random_counts(n=12, battles=3000, seed=0):
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 1, n)
    a = rng.integers(0, n, battles)
    b = (a + rng.integers(1, n, battles)) % n
    a_won = rng.random(battles) < 1 / (1 + np.exp(strength[b] - strength[a]))
    winner, loser = np.where(a_won, a, b), np.where(a_won, b, a)
    wins = np.zeros((n, n))
    np.add.at(wins, (winner, loser), 1.0)
    return wins, list(zip(winner.tolist(), loser.tolist()))


def test_two_agents_three_wins_to_one():
    # the MLE matches the observed odds: 3 to 1 is 400 * log10(3) = 190.85 Elo points, centred on 1000
    ratings = m_elo(counts([[0, 3], [1, 0]]), NONE, bootstrap=0)
    gap = 400 * np.log10(3)
    assert ratings.score == pytest.approx([1000 + gap / 2, 1000 - gap / 2], abs=1e-9)
    assert ratings.win_probability(np.array([0]), np.array([1])) == pytest.approx([0.75])


def test_a_tie_is_half_a_win_by_default():
    # one win and two ties for A: 2 effective wins to 1, odds 2
    ratings = m_elo(counts([[0, 1], [0, 0]], [[0, 2], [2, 0]]), NONE, bootstrap=0)
    assert ratings.score[0] - ratings.score[1] == pytest.approx(400 * np.log10(2), abs=1e-9)


def test_davidson_recovers_the_observed_tie_rate():
    # two agents: the model is saturated, so P(x) : P(y) : P(tie) = 3 : 1 : 2, i.e.
    # exp(d) = 3 and nu = ties / sqrt(x_wins * y_wins) = 2 / sqrt(3)
    ratings = m_elo(counts([[0, 3], [1, 0]], [[0, 2], [2, 0]]), NONE, ties="davidson", bootstrap=0)
    assert ratings.score[0] - ratings.score[1] == pytest.approx(400 * np.log10(3), abs=1e-8)
    assert ratings.info["davidson_nu"] == pytest.approx(2 / np.sqrt(3), abs=1e-9)


def test_agrees_with_choix_on_random_data_without_ties():
    wins, data = random_counts()
    ours = fit(Cells.from_counts(counts(wins)), tol=1e-12).beta
    reference = choix.ilsr_pairwise(len(wins), data, alpha=0.0, tol=1e-13, max_iter=10_000)
    assert np.abs(ours - (reference - reference.mean())).max() < 1e-8


def test_the_prior_is_choix_alpha_times_two():
    wins, data = random_counts(n=6, battles=300, seed=1)
    ours = fit(Cells.from_counts(counts(wins)), prior=0.2, tol=1e-12).beta
    reference = choix.opt_pairwise(len(wins), data, alpha=0.1, tol=1e-12)
    assert np.abs(ours - reference).max() < 1e-6


@pytest.mark.parametrize("wins, problem", [
    # C never wins, A never loses
    ([[0, 1, 0], [0, 0, 1], [0, 0, 0]], "agents that never win or never lose: A, C (the comparison graph has 1 connected"),
    # {A, B} and {C, D} never meet
    ([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]], "2 connected piece(s) and 2 strongly connected piece(s); "
                                                               "agents of different pieces were never compared (the smallest piece: A, B)"),
])
def test_reports_when_the_mle_does_not_exist(wins, problem):
    names = ["A", "", "", "", "", "", "", "", "", "", "B", "", "", "", "", "", "", "", "", "", "C", "", "", "", "", "", "", "", "", "", "D"]
    with pytest.raises(NoEstimate) as refused:
        m_elo(counts(wins, agents=np.arange(len(wins)) * 10), NONE, bootstrap=0)
    assert problem in refused.value.named(names) and "\n" not in str(refused.value)
    assert refused.value.named(names).endswith("; use m-elo:prior=auto to choose a prior by cross-validation")
    assert np.all(np.isfinite(m_elo(counts(wins), NONE, prior=0.01, bootstrap=0).score))


def test_sparse_counts_give_the_dense_answer(monkeypatch):
    wins, _ = random_counts(n=30, battles=2000, seed=2)
    dense = fit(Cells.from_counts(counts(wins)))
    monkeypatch.setattr("pipeline.methods.bradley_terry.core.DENSE_BYTES", 0)  # force the sparse CG path
    sparse = fit(Cells.from_counts(counts(wins, sparse=True)))
    assert np.abs(dense.beta - sparse.beta).max() < 1e-9


def test_relabelling_permutes_and_scaling_weights_changes_nothing():
    wins, _ = random_counts(n=8, battles=500, seed=3)
    base = m_elo(counts(wins), NONE, bootstrap=0).score
    perm = np.random.default_rng(0).permutation(8)
    assert m_elo(counts(wins[np.ix_(perm, perm)]), NONE, bootstrap=0).score == pytest.approx(base[perm], abs=1e-9)
    assert m_elo(counts(3 * wins), NONE, bootstrap=0).score == pytest.approx(base, abs=1e-9)


def test_runs_out_of_iterations_loudly_naming_agents_and_numbers():
    wins, _ = random_counts(n=8, battles=500, seed=3)
    with pytest.raises(ConvergenceError) as failed:
        m_elo(counts(wins, agents=np.arange(8) * 2), NONE, bootstrap=0, max_iter=1)
    message = failed.value.named([f"agent-{i}" for i in range(16)])
    assert re.fullmatch(r"m-elo: Newton's method did not converge in 1 iterations \(largest step [0-9.e+-]+ > tol=1e-07\); "
                        r"agents with the largest steps: agent-\d+, agent-\d+, agent-\d+", message), message


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("ties", ["half", "davidson"])
def test_multiplying_every_weight_by_1e11_or_1e_7_gives_the_same_ratings(monkeypatch, sparse, ties):
    if sparse:
        monkeypatch.setattr("pipeline.methods.bradley_terry.core.DENSE_BYTES", 0)  # the conjugate-gradient path
    wins, _ = random_counts(n=40, battles=600, seed=1)
    draw = np.triu(np.random.default_rng(1).random((40, 40)) < 0.2, 1) * 1.0
    scores = []
    for factor in (1.0, 1e11, 1e-7):
        rated = m_elo(counts(wins * factor, (draw + draw.T) * factor, sparse=sparse), NONE, bootstrap=0, ties=ties)
        assert rated.info["stopped"] == "converged"
        scores.append(rated.score)
    assert np.abs(scores[1] - scores[0]).max() < 1e-6 and np.abs(scores[2] - scores[0]).max() < 1e-6


def test_a_tolerance_below_the_precision_floor_stops_at_the_floor_not_in_error():
    wins, _ = random_counts(n=30, battles=2000, seed=2)
    reachable = fit(Cells.from_counts(counts(wins)))
    floor = fit(Cells.from_counts(counts(wins)), tol=1e-30)
    assert reachable.stopped == "converged" and floor.stopped == "precision floor" and floor.last_step < 1e-12
    assert np.abs(floor.beta - reachable.beta).max() < 1e-12  # the default already has every meaningful digit


def test_the_same_counts_under_other_ids_give_the_same_bytes():
    """Agents numbered differently by the store, same names: the canonical order (agent_keys) fixes every sum and draw."""
    wins, _ = random_counts(n=9, battles=700, seed=8)
    ties = np.triu(np.ones((9, 9)), 1) * (np.arange(81).reshape(9, 9) % 4 == 0)
    ties = ties + ties.T
    canonical = m_elo_method(counts(wins, ties), np.arange(9), NONE, bootstrap=100, seed=2)
    perm = np.random.default_rng(0).permutation(9)  # local agent i is canonical agent perm[i]
    shuffled = m_elo_method(counts(wins[np.ix_(perm, perm)], ties[np.ix_(perm, perm)]), perm, NONE, bootstrap=100, seed=2)
    assert shuffled.score.tobytes() == canonical.score[perm].tobytes()
    for key in ("ci_low", "ci_high", "rank_ci"):
        assert shuffled.extras[key].tobytes() == canonical.extras[key][perm].tobytes()


def test_bootstrap_intervals_and_ranks_that_respect_them():
    # A is far ahead; B and C are indistinguishable (30 wins each against the other)
    wins = [[0, 90, 90], [10, 0, 30], [10, 30, 0]]
    ratings = m_elo(counts(wins), NONE, bootstrap=200, seed=5)
    low, high = ratings.extras["ci_low"], ratings.extras["ci_high"]
    assert np.all(low < ratings.score) and np.all(ratings.score < high)
    assert ratings.extras["rank_ci"].tolist() == [1, 2, 2]  # nobody's lower bound is above B's or C's upper bound but A's
    again = m_elo(counts(wins), NONE, bootstrap=200, seed=5)
    assert again.extras["ci_low"].tobytes() == low.tobytes()
    assert ratings.info["bootstrap_dropped"] == 0


@pytest.mark.parametrize("sparse", [False, True])
def test_bootstrap_does_not_depend_on_the_workers(dask_client, monkeypatch, sparse):
    if sparse:  # rounds fitted together by vectorised Newton, in the Dask workers' processes as well
        monkeypatch.setattr("pipeline.methods.bradley_terry.m_elo.chord_is_cheaper", lambda cells: False)
    wins, _ = random_counts(n=6, battles=400, seed=4)
    on_cluster = m_elo(counts(wins), NONE, bootstrap=120, seed=9)
    import dask

    with dask.config.set(scheduler="sync"):
        local = m_elo(counts(wins), NONE, bootstrap=120, seed=9)
    assert on_cluster.extras["ci_low"].tobytes() == local.extras["ci_low"].tobytes()


@pytest.mark.parametrize("n, battles, chord, tried", [
    (12, 3000, True, True),  # a small pool, its lightest agent in 475 battles: Newton's fixed cost a round dominates
    (40, 800, False, False),  # the lightest agent in 30 battles: the chord would not converge
    (100, 30000, False, True),  # the chord converges (lightest agent ~500 battles) but costs more
])
def test_the_chord_and_newton_paths_agree_on_either_side_of_the_switch(monkeypatch, n, battles, chord, tried):
    """Near the switch the chord converges slowest and the round-by-round differences to Newton are
    largest; both paths must give the same intervals to far below the rounding of a rating."""
    cells = Cells.from_counts(counts(random_counts(n=n, battles=battles, seed=11)[0]))
    assert chord_is_cheaper(cells) is chord and bool(np.isfinite(round_costs(cells)[0])) is tried
    monkeypatch.setattr("pipeline.methods.bradley_terry.m_elo.ROUND_TOL", 1e-7)  # the paths compared at the full-data fit's tolerance
    options = {"davidson": False, "prior": 0.01, "tol": 1e-7, "max_iter": 100}
    full = fit(cells, prior=0.01)
    chosen, chosen_info = bootstrap_intervals(cells, full, options, 100, 4, 400.0, 1000.0)
    monkeypatch.setattr("pipeline.methods.bradley_terry.m_elo.chord_is_cheaper", lambda cells: not chord)
    other, other_info = bootstrap_intervals(cells, full, options, 100, 4, 400.0, 1000.0)
    assert chosen_info == other_info
    for key in ("ci_low", "ci_high"):
        assert np.abs(chosen[key] - other[key]).max() < 1e-6  # Elo points


@pytest.mark.parametrize("sparse", [False, True])  # the chord (a complete pool), or compiled Newton round by round
def test_rounds_stopped_at_round_tol_are_within_the_stated_accuracy_of_exact_rounds(monkeypatch, sparse):
    """Rounds stop at steps of ROUND_TOL: their intervals sit within 1e-5 natural units of rounds solved
    to the full-data fit's tolerance, and the rounds take the looser of the two tolerances."""
    if sparse:
        monkeypatch.setattr("pipeline.methods.bradley_terry.m_elo.chord_is_cheaper", lambda cells: False)
    cells = Cells.from_counts(counts(random_counts(n=30, battles=1500, seed=5)[0]))
    options = {"davidson": False, "prior": 0.01, "tol": 1e-7, "max_iter": 100}
    full = fit(cells, prior=0.01)
    loose, loose_info = bootstrap_intervals(cells, full, options, 100, 6, 400.0, 1000.0)
    monkeypatch.setattr("pipeline.methods.bradley_terry.m_elo.ROUND_TOL", 1e-7)
    exact, exact_info = bootstrap_intervals(cells, full, options, 100, 6, 400.0, 1000.0)
    assert loose_info == exact_info and loose_info["bootstrap_unconverged"] == 0
    for key in ("ci_low", "ci_high"):
        assert np.abs(loose[key] - exact[key]).max() < elo_tolerance(1e-5, 400.0)


def test_the_rounds_take_the_looser_of_round_tol_and_the_fits_tol(monkeypatch):
    asked = []
    monkeypatch.setattr("pipeline.methods.bradley_terry.m_elo.fan_out", lambda work, job, *a, **k: asked.append(job.options["tol"]) or
                        np.zeros(0, dtype=round_rows(job.cells.n)))
    cells = Cells.from_counts(counts(random_counts(n=5, battles=200, seed=1)[0]))
    for tol in (1e-7, 1e-2):
        with pytest.raises(NoEstimate):  # no rounds came back
            bootstrap_intervals(cells, fit(cells, prior=0.01), {"davidson": False, "prior": 0.01, "tol": tol, "max_iter": 100},
                                10, 0, 400.0, 1000.0)
    assert asked == [ROUND_TOL, 1e-2]


@pytest.mark.parametrize("sparse", [False, True])
def test_agents_tied_by_their_record_share_ranks_and_rank_intervals(monkeypatch, sparse):
    """Six newcomers each beat agent 0 once, six each lost to agent 5 once: every newcomer is absent
    from about a third of the rounds, where the prior would put it at the mean (1000). Absent is not
    measured: those rounds are left out of its intervals (`rounds_measured`), so the winners' lower
    bounds are above the mean and the losers' upper bounds below it, and agents with the same record
    share their rank."""
    if sparse:
        monkeypatch.setattr("pipeline.methods.bradley_terry.m_elo.chord_is_cheaper", lambda cells: False)
    core, newcomers = 6, 6
    n = core + 2 * newcomers
    wins = np.zeros((n, n))
    wins[:core, :core] = random_counts(n=core, battles=3000, seed=2)[0]
    winners, losers = np.arange(core, core + newcomers), np.arange(core + newcomers, n)
    wins[winners, 0] = 1
    wins[5, losers] = 1
    ratings = m_elo(counts(wins), NONE, prior=0.01, bootstrap=300, seed=4)
    low, high, measured = ratings.extras["ci_low"], ratings.extras["ci_high"], ratings.extras["rounds_measured"]
    assert low[winners].min() > 1000 + 100 and high[losers].max() < 1000 - 100
    assert (measured[:core] == 300).all()
    assert ((150 < measured[core:]) & (measured[core:] < 240)).all()  # 300 (1 - 1/e) = 190 rounds draw a battle
    for group in (winners, losers):
        assert len(set(ratings.rank[group].tolist())) == 1


@pytest.mark.parametrize("wins", [[[0]], [[0, 0], [0, 0]]])
def test_with_a_prior_agents_without_comparisons_sit_at_the_centre_and_no_round_measures_them(wins):
    ratings = m_elo(counts(wins), NONE, prior=0.01, bootstrap=20, seed=1)
    n = len(wins)
    assert ratings.score.tolist() == [1000.0] * n and ratings.rank.tolist() == [1] * n
    assert np.isnan(ratings.extras["ci_low"]).all() and np.isnan(ratings.extras["ci_high"]).all()  # absent is not measured
    assert ratings.extras["rounds_measured"].tolist() == [0] * n
    assert ratings.extras["rank_low"].tolist() == [1] * n and ratings.extras["rank_high"].tolist() == [n] * n
    assert ratings.extras["rank_ci"].tolist() == [1] * n and ratings.info["bootstrap_dropped"] == 0


@pytest.mark.parametrize("prior, wins", [
    (0.0, random_counts(n=10, battles=600, seed=6)[0]),  # some resamples lose a thin edge
    (0.0, [[0, 1, 5], [4, 0, 1], [1, 6, 0]]),  # many resamples have no MLE: dropped in both paths
    (0.3, [[0, 1, 5], [4, 0, 1], [1, 6, 0]]),
])
@pytest.mark.parametrize("sparse", [False, True])  # sparse: all rounds of a chunk by vectorised Newton, not the chord
def test_the_chord_bootstrap_agrees_with_newton_round_by_round(monkeypatch, prior, wins, sparse):
    if sparse:
        monkeypatch.setattr("pipeline.methods.bradley_terry.m_elo.chord_is_cheaper", lambda cells: False)
        monkeypatch.setattr("pipeline.methods.bradley_terry.m_elo.ROUND_BLOCK", 7 * 3)  # blocks of 7 rounds: a chunk in pieces
    cells = Cells.from_counts(counts(wins))
    monkeypatch.setattr("pipeline.methods.bradley_terry.m_elo.ROUND_TOL", 1e-7)  # the paths compared at the full-data fit's tolerance
    options = {"davidson": False, "prior": prior, "tol": 1e-7, "max_iter": 100}
    full = fit(cells, prior=prior)
    chord, chord_info = bootstrap_intervals(cells, full, options, 120, 3, 400.0, 1000.0, algorithm="chord")
    newton, newton_info = bootstrap_intervals(cells, full, options, 120, 3, 400.0, 1000.0, algorithm="newton")
    assert chord_info == newton_info
    for key in ("ci_low", "ci_high"):
        assert np.abs(chord[key] - newton[key]).max() < 1e-6
    with pytest.raises(ValueError, match="chord or newton"):
        bootstrap_intervals(cells, full, options, 10, 3, 400.0, 1000.0, algorithm="lbfgs")


def test_agents_with_the_same_record_share_a_rank():
    # a and b each beat c twice and lose to d once, and drew each other: equal in exact arithmetic.
    from pipeline.methods import run
    from pipeline.stats.in_memory import profile

    rankings = ["a>c", "a>c", "b>c", "b>c", "d>a", "d>b", "a=b", "c>d"]
    stats, names = profile(rankings, statistics={"pairwise", "pairwise_per_game"})  # ballots of two
    ratings = run("m-elo:bootstrap=0", stats)
    by_name = dict(zip((names[i] for i in ratings.agents), ratings.rank.tolist()))
    assert by_name["a"] == by_name["b"]


def weighed_fit_by_hand(rows, half_life_days: float, prior: float) -> dict[str, float]:
    """The maximum of the weighed Bradley-Terry log-likelihood with a Gaussian prior, by scipy's BFGS: each battle
    weighs weight * 0.5 ** (age / half-life) (age in days from the newest), a tie half a win each way; Elo points."""
    from scipy.optimize import minimize
    from scipy.special import expit, log_expit

    agents = sorted({r[0] for r in rows} | {r[1] for r in rows})
    index = {name: i for i, name in enumerate(agents)}
    a, b = (np.array([index[r[k]] for r in rows]) for k in (0, 1))
    score = np.array([{"model_a": 1.0, "tie": 0.5, "model_b": 0.0}[r[2]] for r in rows])
    newest = max(r[4] for r in rows)
    age = np.array([(newest - r[4]) / np.timedelta64(1, "D") for r in rows])
    w = np.array([r[3] for r in rows]) * 0.5 ** (age / half_life_days)

    def loss(beta):
        d = beta[a] - beta[b]
        value = -(w * (score * log_expit(d) + (1 - score) * log_expit(-d))).sum() + prior / 2 * beta @ beta
        residual = w * (score - expit(d))
        return value, -(np.bincount(a, residual, len(agents)) - np.bincount(b, residual, len(agents))) + prior * beta

    beta = minimize(loss, np.zeros(len(agents)), jac=True, method="BFGS", options={"gtol": 1e-12, "maxiter": 10_000}).x
    return dict(zip(agents, 1000 + 400 / np.log(10) * (beta - beta.mean())))


def rated_from_store(store, spec: str, half_life_days: float) -> dict[str, float]:
    from pipeline.methods import Spec, run
    from pipeline.stats import reduce_store

    stats = reduce_store(store, "battles", Spec.parse(spec).statistics, half_life_days=half_life_days)
    ratings = run(spec, stats)
    names = store.dictionary("agents").names
    return {names[agent]: float(score) for agent, score in zip(ratings.agents, ratings.score)}


@pytest.mark.parametrize(("half_life", "prior"), [(12.0, 0.3), (4.0, 0.0)])
def test_half_life_is_the_exact_weighed_fit(tmp_path, half_life, prior):
    # Planted in the reduction: the age from the oldest record, or the weight squared: 48 to 450 Elo points off.
    from tests.stats.test_recency import dated_battles, stored

    rows = dated_battles(np.random.default_rng(11), battles=300)
    got = rated_from_store(stored(tmp_path, rows), f"m-elo:half_life_days={half_life},prior={prior},bootstrap=0", half_life)
    want = weighed_fit_by_hand(rows, half_life, prior)
    assert got.keys() == want.keys()
    assert max(abs(got[k] - want[k]) for k in want) < 0.01  # Elo points: the fits' tolerances and the weights' 2^-24 grid


def test_an_infinite_half_life_is_the_unweighed_fit(tmp_path):
    from tests.stats.test_recency import dated_battles, stored

    store = stored(tmp_path, dated_battles(np.random.default_rng(12), battles=200))
    long = rated_from_store(store, "m-elo:half_life_days=1e9,prior=0.1,bootstrap=0", 1e9)
    plain = rated_from_store(store, "m-elo:prior=0.1,bootstrap=0", np.inf)
    assert max(abs(long[k] - plain[k]) for k in plain) < 1e-3


def test_counts_weighed_by_another_half_life_are_refused(tmp_path):
    # Without the check, m-elo:half_life_days=D rated unweighed counts (a direct call, a new path) and said nothing.
    from pipeline.methods import run
    from pipeline.stats import reduce_store
    from tests.stats.test_recency import dated_battles, stored

    store = stored(tmp_path, dated_battles(np.random.default_rng(13), battles=50))
    plain = reduce_store(store, "battles", {"pairwise"})
    with pytest.raises(ValueError, match="half_life_days=5 reads counts weighed by that half-life, and these are weighed by inf"):
        run("m-elo:half_life_days=5,bootstrap=0", plain)
    weighed = reduce_store(store, "battles", {"pairwise"}, half_life_days=5.0)
    with pytest.raises(ValueError, match="half_life_days=inf reads counts weighed by that half-life, and these are weighed by 5"):
        run("borda", weighed)
