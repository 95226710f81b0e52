"""Schulze: strongest paths, partial orders, the plain reference."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline import methods
from pipeline.methods.voting import schulze
from pipeline.methods.voting.schulze import layers, strongest_paths, strongest_paths_plain
from pipeline.stats.in_memory import profile
from tests.voting_profiles import mixed_profiles


def test_fast_equals_plain():
    for ballots in mixed_profiles(0, 30):
        wins = profile(ballots)[0].pairwise.wins
        np.testing.assert_array_equal(strongest_paths(wins), strongest_paths_plain(wins))


def test_cycle_ties_everyone(condorcet_cycle):
    # Rock-paper-scissors: every P(x, y) is 2, so no agent is above another; all share rank 1.
    r = methods.run("schulze", condorcet_cycle[0])
    np.testing.assert_array_equal(r.rank, [1, 1, 1])
    assert r.info["strict_order"] is False


def test_incomparable_agents_tie():
    # a > b and c > d on separate ballots: a is above b, c above d, a and c incomparable.
    r = methods.run("schulze", profile(["a>b", "c>d"])[0])
    np.testing.assert_array_equal(r.rank, [1, 3, 1, 3])
    # Score of {a, c}: mean N over {a, c} x {b, d} = (N(a,b) + N(a,d) + N(c,b) + N(c,d)) / 4 = 2/4.
    np.testing.assert_array_equal(r.score, [0.5, 0.0, 0.5, 0.0])


def test_relabelling_permutes():
    ballots = ["a>b>c>d", "b>d>a>c", "c>a>d>b", "d>b>c>a", "a>d>c>b"]
    swapped = [b.translate(str.maketrans("abcd", "dcba")) for b in ballots]
    r1, r2 = methods.run("schulze", profile(ballots)[0]), methods.run("schulze", profile(swapped)[0])
    np.testing.assert_array_equal(r1.score, r2.score[::-1])


def test_unknown_algorithm(pentathlon):
    with pytest.raises(ValueError, match="algorithm"):
        methods.run("schulze:algorithm=fancy", pentathlon[0])


def test_layers_put_all_unbeaten_agents_first():
    # d is above a and e, b and c only above a: the winners (no one above them) are b, c, d,
    # although d is above more agents; then e, then a.
    above = np.zeros((5, 5), dtype=bool)
    above[[1, 2, 3, 4, 3], [0, 0, 0, 0, 4]] = True
    assert layers(above) == [[1, 2, 3], [4], [0]]


def widest_paths_numpy(wins: np.ndarray) -> np.ndarray:
    """An independent reference: Floyd-Warshall on the values themselves, each step a whole-matrix numpy update."""
    paths = np.where(wins > wins.T, wins, 0.0)
    for k in range(len(paths)):
        paths = np.maximum(paths, np.minimum(paths[:, k:k + 1], paths[k:k + 1, :]))
    np.fill_diagonal(paths, 0.0)
    return paths


@pytest.mark.parametrize("agents, sparse", [(60, False), (60, True), (400, False)])
def test_widest_paths_on_ranks_equal_those_on_values(agents, sparse):
    # Weights decayed by a half-life make nearly every count distinct: 400 agents have about 80,000 distinct links, past
    # the 2^16 ranks of uint16 (so uint32 is used); sparse margins (most pairs never met, as in WTA) skip most rows.
    rng = np.random.default_rng(agents + sparse)
    wins = rng.exponential(size=(agents, agents)) * (rng.uniform(size=(agents, agents)) < (0.05 if sparse else 1.0))
    np.fill_diagonal(wins, 0.0)
    np.testing.assert_array_equal(strongest_paths(wins), widest_paths_numpy(wins))


def test_widest_paths_cut_into_chunks_of_steps_are_the_same(monkeypatch):
    # SIGTERM is looked at between chunks of steps; chunks of one or a few steps must give the same paths (planted: a
    # chunk that stops one step early).
    rng = np.random.default_rng(4)
    wins = rng.integers(0, 9, size=(37, 37)).astype(float)
    whole = strongest_paths(wins)
    for cells in (1, 37 * 37 * 5):
        monkeypatch.setattr(schulze, "STEP_CELLS", cells)
        np.testing.assert_array_equal(strongest_paths(wins), whole)
    np.testing.assert_array_equal(whole, widest_paths_numpy(wins))
