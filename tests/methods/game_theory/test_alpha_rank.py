"""alpha-rank [Omi19]: OpenSpiel's `egt.alpharank` as the oracle, GTH against a plain solve, limits and sinks."""

from __future__ import annotations

import itertools
from decimal import Decimal, localcontext

import numpy as np
import pytest

from pipeline.games import Game
from pipeline.methods.game_theory.alpha_rank import alpha_rank, chain, log_fixation, stationary
from pipeline.stats.game_data import ScoreTable

alpharank = pytest.importorskip("open_spiel.python.egt.alpharank")
pyspiel = pytest.importorskip("pyspiel")
from open_spiel.python.egt import utils  # noqa: E402


def game_of(tables: list[np.ndarray]) -> Game:
    """OpenSpiel's payoff tables as a Game: one table is a symmetric 2-player game (G_2 = G_1^T)."""
    if len(tables) == 1:
        g = tables[0]
        return Game((g, g.T.copy()), ("row", "col"), (tuple(map(str, range(len(g)))),) * 2)
    return Game(tuple(tables), tuple(f"p{i}" for i in range(len(tables))),
                tuple(tuple(map(str, range(k))) for k in tables[0].shape))


def masses(tables, **options) -> np.ndarray:
    """Our stationary distribution over states (strategies, or profiles in OpenSpiel's order)."""
    defaults = {"alpha": 100.0, "m": 50, "selection": "local", "epsilon": 0.0}
    order, log_pi = stationary(*chain(game_of(tables), **(defaults | options), single=len(tables) == 1))
    return np.where(order == 0, np.exp(log_pi), 0.0)


def plain_gth(order: np.ndarray, log_rate: np.ndarray) -> np.ndarray:
    """Reference: textbook GTH [GTH85] in linear space (valid where no rate underflows)."""
    p = np.where(np.isfinite(log_rate) & (order == 0), np.exp(log_rate), 0.0)
    np.fill_diagonal(p, 0.0)
    n = len(p)
    for k in range(n - 1, 0, -1):
        p[:k, k] /= p[k, :k].sum()
        p[:k, :k] += np.outer(p[:k, k], p[k, :k])
    pi = np.zeros(n)
    pi[0] = 1.0
    for k in range(1, n):
        pi[k] = pi[:k] @ p[:k, k]
    return pi / pi.sum()


def open_spiel_tables(name: str) -> list[np.ndarray]:
    tables = utils.game_payoffs_array(pyspiel.load_matrix_game(name))
    return utils.is_symmetric_matrix_game(tables)[1]


def test_han_et_al_example_with_population_fitness():
    # OpenSpiel's alpharank_test: payoffs of Han et al. 2013, m = 20, alpha = 0.1, fitness against
    # the whole population; the published stationary distribution to 4 decimals.
    r, t, p, s, delta, eps = 1.0, 2.0, 0.0, -1.0, 4.0, 0.25
    g = np.array([[r - eps / 2, r - eps, 0, s + delta - eps, r - eps], [r, r, s, s, s], [0, t, p, p, p],
                  [t - delta, t, p, p, p], [r, t, p, p, p]])
    ours = masses([g], m=20, alpha=0.1, selection="population")
    np.testing.assert_allclose(ours, [0.40966787, 0.07959841, 0.20506998, 0.08505983, 0.2206039], atol=1e-8)
    _, _, theirs, _, _ = alpharank.compute([g], m=20, alpha=0.1, use_local_selection_model=False)
    np.testing.assert_allclose(ours, theirs, atol=1e-8)


@pytest.mark.parametrize("name", ["matrix_rps", "matrix_brps", "matrix_bos", "matrix_pd", "matrix_sh", "matrix_mp",
                                  "matrix_shapleys_game", "matrix_coordination"])
@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_open_spiel_matrix_games(name, alpha):
    # Symmetric games (RPS, biased RPS, prisoner's dilemma, ...) run as one population, the others
    # (battle of the sexes, matching pennies) as two, exactly as OpenSpiel decides. (From alpha = 0.2
    # OpenSpiel's eigen-solve of battle of the sexes, two nearly separate sinks, is off by 1e-7 or
    # raises: see test_high_precision_reference.)
    tables = open_spiel_tables(name)
    _, _, theirs, _, _ = alpharank.compute(tables, m=50, alpha=alpha)
    np.testing.assert_allclose(masses(tables, alpha=alpha), theirs, atol=1e-8)
    _, _, theirs, _, _ = alpharank.compute(tables, use_inf_alpha=True, inf_alpha_eps=0.01)
    np.testing.assert_allclose(masses(tables, alpha=np.inf, epsilon=0.01), theirs, atol=1e-8)


@pytest.mark.parametrize("players", [2, 3])
def test_kuhn_poker_meta_games(players):
    # OpenSpiel's alpharank example: empirical meta-games of Kuhn poker after 3 XFP iterations. The
    # example's alpha = 100 overflows OpenSpiel's fixation formula (nan); alpha = 1 does not. Its
    # tables are float32, and OpenSpiel then computes the fixation probabilities in float32 (rates
    # off by up to 3e-5, masses by 1e-6: see test_high_precision_reference); given the same payoffs
    # as float64 it agrees with ours to 1e-13.
    from open_spiel.python.egt.examples.alpharank_example import get_kuhn_poker_data

    tables = [t.astype(np.float64) for t in get_kuhn_poker_data(players)]
    for alpha in (0.1, 1.0):
        _, _, theirs, _, _ = alpharank.compute(tables, alpha=alpha)
        np.testing.assert_allclose(masses(tables, alpha=alpha), theirs, atol=1e-8)
    assert np.isclose(masses(tables, alpha=1e2).sum(), 1.0)


def test_one_hundred_random_games_against_open_spiel():
    # 50 single-population (general-sum, both selection models) and 50 multi-population games of 2-3
    # players, at alphas where OpenSpiel's dense eigen-solve is accurate (its rates do not underflow).
    rng = np.random.default_rng(2019)
    for trial in range(100):
        alpha, m = float(rng.choice([0.1, 1.0, 2.0])), int(rng.integers(2, 20))
        if trial % 2:
            tables = [rng.random(tuple(rng.integers(2, 6, size=rng.integers(2, 4))))]
            tables += [rng.random(tables[0].shape) for _ in range(tables[0].ndim - 1)]
        else:
            tables = [rng.random((n := int(rng.integers(2, 9)), n))]
        _, _, theirs, _, _ = alpharank.compute(tables, m=m, alpha=alpha)
        np.testing.assert_allclose(masses(tables, alpha=alpha, m=m), theirs, atol=1e-8)
        _, _, theirs, _, _ = alpharank.compute(tables, use_inf_alpha=True, inf_alpha_eps=0.05)
        np.testing.assert_allclose(masses(tables, alpha=np.inf, epsilon=0.05), theirs, atol=1e-8)
        if len(tables) == 1:
            _, _, theirs, _, _ = alpharank.compute(tables, m=m, alpha=alpha, use_local_selection_model=False)
            np.testing.assert_allclose(masses(tables, alpha=alpha, m=m, selection="population"), theirs, atol=1e-8)


def decimal_masses(tables: list[np.ndarray], alpha: float, m: int = 50, digits: int = 50) -> np.ndarray:
    """Independent reference: the chain built from the payoffs and solved by GTH [GTH85], in
    `digits`-digit decimal arithmetic (rho = (1 - e^-u) / (1 - e^-mu) has no cancellation at that
    precision, and GTH only adds positive numbers): exact to far below 1e-15. Local selection;
    one table is a single population, several are one population per player."""
    with localcontext() as context:
        context.prec = digits
        single = len(tables) == 1
        shape = (len(tables[0]),) if single else tables[0].shape
        states = list(itertools.product(*map(range, shape)))
        index = {s: i for i, s in enumerate(states)}
        eta = Decimal(1) / sum(Decimal(k - 1) for k in shape)
        rate = [[Decimal(0)] * len(states) for _ in states]
        for s in states:
            for k, j in ((k, j) for k in range(len(shape)) for j in range(shape[k]) if j != s[k]):
                r = s[:k] + (j,) + s[k + 1:]
                new, old = (tables[0][j, s[0]], tables[0][s[0], j]) if single else (tables[k][r], tables[k][s])
                u = Decimal(alpha) * (Decimal(float(new)) - Decimal(float(old)))
                rho = 1 / Decimal(m) if u == 0 else (1 - (-u).exp()) / (1 - (-m * u).exp())
                rate[index[s]][index[r]] = eta * rho
        for k in range(len(states) - 1, 0, -1):
            leave = sum(rate[k][:k])
            for i in range(k):
                rate[i][k] /= leave
                for j in range(k):
                    rate[i][j] += rate[i][k] * rate[k][j]
        pi = [Decimal(1)]
        for k in range(1, len(states)):
            pi.append(sum(pi[i] * rate[i][k] for i in range(k)))
        return np.array([float(p / sum(pi)) for p in pi])


def test_high_precision_reference():
    # Where OpenSpiel and we disagree by more than 1e-8, a 50-digit computation from the payoffs
    # decides: we agree with it to 1e-14 in both cases, and the fault is in OpenSpiel.
    from open_spiel.python.egt.examples.alpharank_example import get_kuhn_poker_data

    # 3-player Kuhn meta-game as the example gives it (float32 tables): OpenSpiel's rates are
    # computed in float32 (its eigenvector is exact for those rates); ours in float64.
    kuhn = get_kuhn_poker_data(3)
    exact = decimal_masses(kuhn, alpha=0.1)
    np.testing.assert_allclose(masses(kuhn, alpha=0.1), exact, rtol=0, atol=1e-14)
    _, _, theirs, _, _ = alpharank.compute(kuhn, alpha=0.1)
    assert np.abs(theirs - exact).max() > 1e-7
    # Battle of the sexes at alpha = 0.2: two nearly separate sinks; OpenSpiel's dense eigen-solve
    # is off by 1.6e-7 (and at alpha = 0.5 finds two unit eigenvalues and raises).
    bos = open_spiel_tables("matrix_bos")
    for alpha in (0.2, 0.5):
        np.testing.assert_allclose(masses(bos, alpha=alpha), decimal_masses(bos, alpha), rtol=0, atol=1e-14)
    # A symmetric game, one population.
    rps = open_spiel_tables("matrix_brps")
    np.testing.assert_allclose(masses(rps, alpha=0.5), decimal_masses(rps, 0.5), rtol=0, atol=1e-14)


def test_log_space_gth_equals_plain_gth():
    rng = np.random.default_rng(7)
    for _ in range(20):
        game = game_of([rng.random((3, 4)), rng.random((3, 4))])
        order, log_rate = chain(game, alpha=3.0, m=10, selection="local", epsilon=0.0, single=False)
        np.testing.assert_allclose(np.exp(stationary(order, log_rate)[1]), plain_gth(order, log_rate), rtol=1e-12)


def test_fixation_is_exact_where_the_naive_formula_breaks():
    # (1 - e^-u) / (1 - e^-mu): 1/m at u = 0, ~u/(1 - e^-mu) for tiny u, and e^{-(m-1)|u|} scale for
    # large negative u (the naive formula gives inf/inf = nan from u < -709/m).
    assert log_fixation(np.array(0.0), 50) == pytest.approx(np.log(1 / 50))
    assert np.exp(log_fixation(np.array(1e-12), 50)) == pytest.approx(1 / 50 * (1 + 49 * 1e-12 / 2), rel=1e-12)
    assert log_fixation(np.array(-1000.0), 50) == pytest.approx(-49 * 1000.0, rel=1e-12)
    assert log_fixation(np.array(1000.0), 50) == pytest.approx(0.0, abs=1e-300)


def test_large_alpha_keeps_mass_on_the_sink():
    # A dominates B dominates C: at alpha = 1e6 OpenSpiel's chain underflows (it raises); ours puts
    # the mass on A and still orders B above C by their log masses.
    g = np.array([[0.0, 1.0, 1.0], [-1.0, 0.0, 1.0], [-1.0, -1.0, 0.0]])
    r = alpha_rank(game_of([g]), alpha=1e6)  # an nfg game: rows are row:A..C, then col:A..C
    assert r.score.tolist() == [1.0, 0.0, 0.0] * 2 and r.rank.tolist() == [1, 3, 5] * 2
    assert np.all(np.isfinite(r.extras["log_mass"]))
    assert r.info["sink_agents"] == [[0, 3]]


def test_infinite_alpha_limit_is_where_small_epsilon_goes():
    rng = np.random.default_rng(3)
    for _ in range(10):
        tables = [rng.random((3, 3)), rng.random((3, 3))]
        limit = masses(tables, alpha=np.inf)
        np.testing.assert_allclose(masses(tables, alpha=np.inf, epsilon=1e-9), limit, atol=1e-7)
        # OpenSpiel's sweep halves epsilon until pi settles (np.allclose): close to the limit, not at it.
        np.testing.assert_allclose(alpharank.sweep_pi_vs_epsilon(tables), limit, atol=1e-2)


def test_rock_paper_scissors_cycle_is_one_sink_with_equal_masses():
    g = np.array([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])
    r = alpha_rank(game_of([g]), alpha=np.inf)
    np.testing.assert_allclose(r.score, 1 / 3, atol=1e-12)
    assert r.rank.tolist() == [1] * 6
    assert r.info["sink_agents"] == [list(range(6))] and r.info["populations"] == 1


def test_agent_task_game_from_a_score_table():
    # Agent 10 is best on every task: the agent population ends on it; tasks are a second population.
    scores = np.array([[0.9, 0.8, 0.7], [0.5, 0.6, 0.2], [0.1, 0.3, 0.4]])
    table = ScoreTable(np.array([10, 20, 30]), ("t1", "t2", "t3"), scores, np.ones(3, bool), np.ones(3))
    r = alpha_rank(table, alpha=np.inf)
    assert r.agents.tolist() == [10, 20, 30] and r.rank[0] == 1 and r.score[0] == pytest.approx(1.0)
    assert r.info["populations"] == 2 and r.info["sink_agents"] == [[10]]
    assert set(r.info["task_ratings"]) == {"t1", "t2", "t3"} and "sink_task" in r.info
    assert r.extras["eps_order"][0] == 0 and r.extras["eps_order"][1:].min() >= 1


def test_relabelling_agents_permutes_the_result():
    rng = np.random.default_rng(5)
    g = rng.random((5, 5))
    perm = rng.permutation(5)
    base, moved = masses([g], alpha=2.0), masses([g[np.ix_(perm, perm)]], alpha=2.0)
    np.testing.assert_allclose(moved, base[perm], rtol=1e-12)


def test_task_weight_two_counts_like_two_copies():
    # alpha-rank is not clone invariant: weight 2 on t2 equals listing t2 twice.
    scores = np.array([[0.9, 0.2], [0.4, 0.8], [0.5, 0.5]])
    weighted = ScoreTable(np.array([1, 2, 3]), ("t1", "t2"), scores, np.ones(2, bool), np.array([1.0, 2.0]))
    copied = ScoreTable(np.array([1, 2, 3]), ("t1", "t2", "t2#2"), scores[:, [0, 1, 1]], np.ones(3, bool), np.ones(3))
    a, b = alpha_rank(weighted, alpha=5.0), alpha_rank(copied, alpha=5.0)
    np.testing.assert_allclose(a.score, b.score, rtol=1e-12)
    plain = alpha_rank(ScoreTable(np.array([1, 2, 3]), ("t1", "t2"), scores, np.ones(2, bool), np.ones(2)), alpha=5.0)
    assert not np.allclose(plain.score, a.score)


def test_bad_parameters_and_too_large_games_are_refused():
    g = np.zeros((2, 2))
    with pytest.raises(ValueError, match="alpha-rank: parameter alpha=-1.0 must be non-negative"):
        alpha_rank(game_of([g]), alpha=-1.0)
    with pytest.raises(ValueError, match="selection"):
        alpha_rank(game_of([g]), selection="global")
    from pipeline.methods.convergence import RatingError

    big = Game((np.zeros((50, 50)), np.ones((50, 50))), ("a", "b"), (tuple(map(str, range(50))),) * 2)
    with pytest.raises(RatingError, match="2500 profiles"):
        alpha_rank(big)


def test_the_infinite_alpha_chain_is_a_spec_and_nan_is_not():
    # docs/guide.md: `alpha-rank:alpha=inf` is the infinite-α chain; the registry refused every non-finite number.
    from pipeline.methods.registry import Spec, apply

    scores = np.array([[0.9, 0.8, 0.7], [0.5, 0.6, 0.2], [0.1, 0.3, 0.4]])
    table = ScoreTable(np.array([10, 20, 30]), ("t1", "t2", "t3"), scores, np.ones(3, bool), np.ones(3))
    spec = Spec.parse("alpha-rank:alpha=inf")
    assert spec.canonical.startswith("alpha-rank:alpha=inf,") and Spec.parse(spec.canonical) == spec
    assert apply(spec, table).extras["eps_order"].tolist() == alpha_rank(table, alpha=np.inf).extras["eps_order"].tolist()
    refused = {"alpha-rank:alpha=nan": "alpha='nan' is not a valid number", "alpha-rank:alpha=-inf": "alpha=-inf must be non-negative",
               "alpha-rank:epsilon=inf": "epsilon='inf' is not a valid finite number", "m-elo:prior=inf": "prior='inf' is not a valid finite"}
    for text, why in refused.items():
        with pytest.raises(ValueError, match=why):
            Spec.parse(text)


@pytest.mark.parametrize("selection", ["local", "population"])
def test_an_alpha_beyond_what_log_rates_hold_is_refused_in_one_line(selection):
    # alpha=1e308 (the registry's "non-negative" allows it) overflowed (m - 1) alpha gain to -inf: a chain with
    # transitions missing refused as "reducible ... this is a bug", or published -inf log masses, warnings above.
    import warnings

    from pipeline.methods.convergence import RatingError

    g = np.array([[0.0, 1.0, 1.0], [-1.0, 0.0, 0.5], [-1.0, -0.5, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = alpha_rank(game_of([g]), alpha=1e300, selection=selection)  # -(m - 1) alpha gain is about -1e302: held
        assert np.all(np.isfinite(r.extras["log_mass"])) and r.rank[0] == 1 and r.rank[1] > 1
        with pytest.raises(RatingError, match=r"^alpha-rank: alpha=1e\+308 with m=50 and payoffs up to 1 gives log fixation "
                                              r"probabilities beyond 1e\+304.*use alpha=inf") as refused:
            alpha_rank(game_of([g]), alpha=1e308, selection=selection)
    assert "\n" not in str(refused.value)
