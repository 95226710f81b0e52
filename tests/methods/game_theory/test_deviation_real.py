"""Deviation ratings on the international football results (issue 33): the agent-agent game of the
first matches, read as battles the way `vase rate` reads them, against an LP written independently."""

import numpy as np
import pytest
from scipy.optimize import linprog

from benchmarks.datasets import ROOT, football_battles
from pipeline.games import build
from pipeline.methods import run
from pipeline.methods.game_theory.deviation import constraint_matrix, deviation_ratings
from pipeline.stats.in_memory import statistics_of_records

pytestmark = pytest.mark.skipif(not (ROOT / "international_football").exists(), reason="the shared data sets are absent")


def football_game(matches: int):
    stats, _ = statistics_of_records(football_battles(matches).to_dicts(), "battles", {"game_data"})
    return stats, build(stats.extra["game_data"], "agent-agent")


def strictest_cce_by_linprog(game, dual_tol=1e-9):
    """[DevR] algorithm 1 with scipy's linprog on the dense constraint matrix, without symmetries or
    column generation: minimise the largest free gain eps, frozen gains held at their values; freeze
    the free rows with nonzero duals (the tight rows when no dual is). Variables: sigma, then eps."""
    a = constraint_matrix(game)
    rows, joints = a.shape
    frozen, values = np.zeros(rows, bool), np.zeros(rows)
    while not frozen.all():
        result = linprog(np.r_[np.zeros(joints), 1.0], A_ub=np.hstack([a, -(~frozen)[:, None].astype(float)]),
                         b_ub=np.where(frozen, values, 0.0), A_eq=np.r_[np.ones(joints), 0.0][None, :], b_eq=[1.0],
                         bounds=[(0, None)] * joints + [(None, None)], method="highs")
        assert result.status == 0, result.message
        eps = result.x[-1]
        active = ~frozen & (np.abs(result.ineqlin.marginals) > dual_tol)
        if not active.any():
            active = ~frozen & (a @ result.x[:-1] >= eps - 1e-9)
        frozen[active], values[active] = True, eps
    return values


def test_deviation_matches_an_independent_lp_on_the_first_football_matches():
    _, game = football_game(800)
    assert game.shape == (59, 59)
    ours = np.concatenate(deviation_ratings(game)[0])
    np.testing.assert_allclose(ours, strictest_cce_by_linprog(game), atol=1e-6)


@pytest.mark.slow
def test_a_coarse_correlated_equilibrium_is_found_on_157_football_teams():
    # The first 5,000 matches (157 teams): HiGHS's solutions broke the frozen rows by 3e-8, the bounds
    # tightened with each LP and the 60th was "infeasible"; a CCE always exists.
    stats, game = football_game(5000)
    assert game.shape == (157, 157)
    assert np.all(run("deviation:game=agent-agent", stats).score <= 1e-9)  # a CCE: no strategy gains by deviating
    # The equilibrium the method reports holds every gain at (or, within the LP's tolerance, below) its rating.
    (rating, _), sigma, _ = deviation_ratings(game)
    gains = game.payoffs[0] @ sigma.sum(axis=0) - np.sum(game.payoffs[0] * sigma)
    assert np.all(gains <= rating + 1e-6)
