"""Deviation ratings [DevR]: the biased Shapley game of table 2, properties 4-8 on random games."""

import numpy as np
import pytest

from pipeline.games import Game
from pipeline.methods import run
from pipeline.methods.convergence import RatingError
from pipeline.methods.game_theory.deviation import deviation, deviation_ratings
from pipeline.methods.game_theory.nash_averaging import nash_average
from pipeline.stats.game_data import ScoreTable


def random_game(seed: int, shape=(3, 4, 2)) -> Game:
    rng = np.random.default_rng(seed)
    return Game(tuple(rng.integers(-3, 4, size=shape).astype(float) for _ in shape), tuple(f"p{i}" for i in range(len(shape))),
                tuple(tuple(f"s{j}" for j in range(k)) for k in shape))


def ratings(game: Game) -> list[np.ndarray]:
    return deviation_ratings(game)[0]


def test_biased_shapley_table_2(biased_shapley):
    # [DevR] table 2b: every strategy, the Nash mixture N included, is rated -2720/964.
    r = ratings(biased_shapley)
    np.testing.assert_allclose(np.concatenate(r), -2720 / 964, atol=1e-9)


def test_plain_formulation_agrees_with_the_reduced_one():
    for seed in range(3):
        game = random_game(seed)
        fast = ratings(game)
        plain = deviation_ratings(game, symmetries=False, column_generation=False)[0]
        for x, y in zip(fast, plain):
            np.testing.assert_allclose(x, y, atol=1e-9)


def test_equilibrium_attains_the_ratings():
    game = random_game(4)
    r, sigma, _ = deviation_ratings(game)
    assert sigma.min() >= -1e-12 and sigma.sum() == pytest.approx(1.0)
    for gains, rating in zip(game.gains(sigma), r):
        assert np.all(gains <= rating + 1e-7)  # every frozen gain held at (or below) its value
        assert np.all(rating <= 1e-9)  # property 3: ratings are at most 0


@pytest.mark.parametrize("seed", range(4))
def test_clone_invariance(seed):
    # Property 6: copy player 0's strategy 1; ratings unchanged, the copy rated like the original.
    game = random_game(seed)
    cloned = Game(tuple(np.concatenate([g, g[1:2]], axis=0) for g in game.payoffs), game.players,
                  (game.strategies[0] + ("copy",),) + game.strategies[1:])
    before, after = ratings(game), ratings(cloned)
    np.testing.assert_allclose(after[0][:-1], before[0], atol=1e-8)
    assert after[0][-1] == pytest.approx(before[0][1], abs=1e-8)
    for x, y in zip(before[1:], after[1:]):
        np.testing.assert_allclose(x, y, atol=1e-8)


@pytest.mark.parametrize("seed", range(3))
def test_mixture_invariance(seed):
    # Property 7: add player 0's 30/70 mixture of strategies 0 and 2; it is rated the same mixture.
    game = random_game(seed)
    mix = [0.3 * g[0:1] + 0.7 * g[2:3] for g in game.payoffs]
    mixed = Game(tuple(np.concatenate([g, m], axis=0) for g, m in zip(game.payoffs, mix)), game.players,
                 (game.strategies[0] + ("mix",),) + game.strategies[1:])
    before, after = ratings(game), ratings(mixed)
    np.testing.assert_allclose(after[0][:-1], before[0], atol=1e-8)
    assert after[0][-1] == pytest.approx(0.3 * before[0][0] + 0.7 * before[0][2], abs=1e-8)


@pytest.mark.parametrize("seed", range(3))
def test_offset_invariance(seed):
    # Property 5: adding b_p(a_-p) to G_p changes nothing.
    game = random_game(seed)
    rng = np.random.default_rng(100 + seed)
    shifted = [g + np.expand_dims(rng.normal(size=tuple(k for i, k in enumerate(g.shape) if i != p)), p)
               for p, g in enumerate(game.payoffs)]
    for x, y in zip(ratings(game), ratings(Game(tuple(shifted), game.players, game.strategies))):
        np.testing.assert_allclose(x, y, atol=1e-8)


@pytest.mark.parametrize("seed", range(3))
def test_dominance_preservation(seed):
    # Property 4: make player 0's strategy 0 weakly better than strategy 1 everywhere.
    game = random_game(seed)
    g0 = game.payoffs[0].copy()
    g0[0] = np.maximum(g0[0], g0[1])
    r = ratings(Game((g0,) + game.payoffs[1:], game.players, game.strategies))
    assert r[0][0] >= r[0][1] - 1e-9


@pytest.mark.parametrize("seed", range(3))
def test_equals_nash_averaging_minus_the_value_in_zero_sum_games(seed):
    # Property 8: r_CCE = r_NA - v in 2-player zero-sum games.
    a = np.random.default_rng(seed).normal(size=(5, 7))
    p, q, v = nash_average(a)
    r = ratings(Game((a, -a), ("x", "y"), (tuple("abcde"), tuple("ABCDEFG"))))
    np.testing.assert_allclose(r[0], a @ q - v, atol=1e-7)
    np.testing.assert_allclose(r[1], -a.T @ p + v, atol=1e-7)


def test_agent_agent_task_contributions_sum_to_ratings():
    # [DevR] section 5.2: c(a, t) summed over tasks is a's rating. Agent 2 dominates: rated top.
    scores = np.array([[0.9, 0.1, 0.5], [0.2, 0.8, 0.4], [0.95, 0.85, 0.6], [0.1, 0.1, 0.1]])
    table = ScoreTable(np.array([3, 5, 7, 9]), ("t0", "t1", "t2"), scores, np.ones(3, bool), np.ones(3))
    r = deviation(table, game="agent-agent-task")
    total = sum(r.extras[f"c[{t}]"] for t in table.tasks)
    np.testing.assert_allclose(total, r.score, atol=1e-9)
    assert r.rank[2] == 1 and r.agents[2] == 7
    assert r.info["game"] == "agent-agent-task" and r.info["norm"] == "minmax"


def test_registry_runs_on_score_statistics():
    from pipeline.stats.counts import Statistics

    table = ScoreTable(np.array([0, 1]), ("t",), np.array([[1.0], [0.0]]), np.ones(1, bool), np.ones(1))
    stats = Statistics("scores", np.array([0, 1]), np.array([1, 1]), extra={"game_data": table})
    r = run("deviation", stats)
    assert r.rank.tolist() == [1, 2]  # the better agent cannot gain by deviating


def test_a_game_too_large_for_its_constraint_matrix_is_refused_before_it_is_built():
    # LiveBench's 314 models x 28 tasks as agent-agent-task needed 14 GiB of constraints: the kernel killed
    # `vase rate`. A larger game (broadcast payoffs take no memory) must be refused in one line, not allocated.
    shape = (2000, 2000, 20)
    payoff = np.broadcast_to(np.float64(0.0), shape)
    game = Game((payoff,) * 3, ("agent_a", "agent_b", "task"), tuple(tuple(map(str, range(k))) for k in shape))
    with pytest.raises(RatingError, match=r"^deviation: the game \(2,000 x 2,000 x 20 strategies\) needs 321,600,000,000 "
                                          r"constraint entries, above the limit of 134,217,728; rate fewer agents or tasks, "
                                          r"or a 2-player game \(game=agent-task or agent-agent\)$"):
        deviation_ratings(game)
