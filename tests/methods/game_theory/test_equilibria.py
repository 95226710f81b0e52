"""The game methods on degenerate data, the automatic choice of game, and ties at solver accuracy."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.games import Game
from pipeline.methods.game_theory.equilibria import CONSTANT_SUM_RTOL, choose_game, constant_sum
from pipeline.methods.registry import Spec, apply
from pipeline.stats.game_data import PromptCounts, ScoreTable

GAME_METHODS = ["nash-averaging", "deviation", "affinity-cce", "affinity-ne", "uniform"]
ZERO_SUM_ONLY = {"nash-averaging"}


def _rate(spec: str, data) -> object:
    return apply(Spec.parse(spec), data)


def _table(scores: np.ndarray) -> ScoreTable:
    k, t = scores.shape
    return ScoreTable(np.arange(k) * 2 + 5, tuple(f"t{j}" for j in range(t)), scores, np.ones(t, bool), np.ones(t))


def _battles(rows: list[tuple[int, int, int, float, float]], agents: int) -> PromptCounts:
    """(prompt, a, b, wins, ties) rows; prompt -1 for battles without one."""
    prompt, a, b, wins, ties = (np.array(c, dtype=float if i > 2 else np.int64) for i, c in enumerate(zip(*rows)))
    return PromptCounts(np.arange(agents), prompt, a, b, wins, ties)


@pytest.mark.parametrize("spec", GAME_METHODS)
def test_constant_scores_tie_every_agent(spec):
    # Every agent scores the same on every task: minmax maps each task to 0, all payoffs are 0,
    # every strategy is optimal, and every method rates all agents equal, rank 1.
    r = _rate(spec, _table(np.full((4, 3), 0.7)))
    assert r.rank.tolist() == [1, 1, 1, 1]
    np.testing.assert_allclose(r.score, r.score[0], atol=1e-12)


@pytest.mark.parametrize("spec", GAME_METHODS)
def test_one_agent(spec):
    r = _rate(spec, _table(np.array([[0.3, 0.9]])))
    assert r.rank.tolist() == [1] and r.agents.tolist() == [5]


@pytest.mark.parametrize(("spec", "expected"), [("nash-averaging", [2.0, -2.0]), ("uniform", [2.0, -2.0]),
                                                ("deviation", [0.0, 0.0]), ("affinity-cce", [0.0, 0.0]),
                                                ("affinity-ne", [0.0, 0.0])])
def test_a_game_with_one_strategy_each(spec, expected):
    # Each player plays its only strategy: payoffs against it (Nash averaging, uniform), or no
    # gain from deviating (deviation, affinity). A game file rates both players' strategies.
    game = Game((np.array([[2.0]]), np.array([[-2.0]])), ("x", "y"), (("a",), ("b",)))
    r = _rate(spec, game)
    np.testing.assert_allclose(r.score, expected, atol=1e-12)


@pytest.mark.parametrize("spec", [s for s in GAME_METHODS if s not in ZERO_SUM_ONLY])
def test_battles_without_prompts_use_the_agent_agent_game(spec):
    # docs/guide.md: battles without prompts give agent-agent under game=auto. Agents 0 > 1 > 2, and 3
    # met nobody (its margins are 0: a disconnected agent is rated, not refused).
    counts = _battles([(-1, 0, 1, 3.0, 0.0), (-1, 1, 2, 2.0, 1.0), (-1, 2, 1, 0.0, 1.0), (-1, 0, 2, 1.0, 0.0)], 4)
    assert choose_game(counts, "auto", "minmax", {"scores": "agent-agent-task", "battles": "model-model-prompt"}).info[
        "game"] == "agent-agent"
    r = _rate(spec, counts)
    assert r.info["game"] == "agent-agent" and len(r.agents) == 4


@pytest.mark.parametrize("spec", GAME_METHODS)
def test_only_ties(spec):
    counts = _battles([(-1, 0, 1, 0.0, 2.0), (-1, 1, 0, 0.0, 2.0), (-1, 1, 2, 0.0, 1.0), (-1, 2, 1, 0.0, 1.0)], 3)
    r = _rate(spec, counts)
    assert r.rank.tolist() == [1, 1, 1]


def test_explicit_prompt_games_still_need_prompts():
    counts = _battles([(-1, 0, 1, 3.0, 0.0)], 2)
    with pytest.raises(ValueError, match="needs prompts"):
        _rate("deviation:game=model-model-prompt", counts)


def test_one_constant_sum_test_for_every_game_method():
    # Payoffs summing to 1 (win rates) up to rounding are constant-sum; a perturbation a thousand times the
    # tolerance of the payoff range is not, at any payoff scale; a 3-player game never is.
    rng = np.random.default_rng(2)
    for scale in (1e-6, 1.0, 1e6):
        a = rng.uniform(size=(5, 4)) * scale
        win_rates = Game((a, scale - a), ("x", "y"), (tuple("abcde"), tuple("vwxy")))
        assert constant_sum(win_rates)
        off = (scale - a).copy()
        off[2, 1] += 1e3 * CONSTANT_SUM_RTOL * float(np.ptp(a))
        assert not constant_sum(Game((a, off), ("x", "y"), (tuple("abcde"), tuple("vwxy"))))
    three = Game((np.zeros((2, 2, 2)),) * 3, ("x", "y", "z"), (("a", "b"),) * 3)
    assert not constant_sum(three)
