"""Kemeny-Young: the MIP against enumeration, uniqueness, the Condorcet decomposition."""

from __future__ import annotations

import numpy as np
import pytest
from tests.voting_profiles import mixed_profiles, strict_ballots

from pipeline import methods
from pipeline.methods.kemeny import ENUMERATE_MAX, components
from pipeline.stats.in_memory import profile


def test_mip_equals_enumeration():
    for ballots in mixed_profiles(2, 25, most=6):
        stats = profile(ballots)[0]
        mip, enum = methods.run("kemeny", stats), methods.run("kemeny:algorithm=enumerate", stats)
        assert mip.info["kemeny_value"] == enum.info["kemeny_value"]
        assert mip.info["kemeny_unique"] == enum.info["kemeny_unique"]
        if enum.info["kemeny_unique"]:
            np.testing.assert_array_equal(mip.rank, enum.rank)


def test_cycle_is_not_unique(condorcet_cycle):
    # Rock-paper-scissors: the three rotations a>b>c, b>c>a, c>a>b all have value 2 + 2 + 1 = 5.
    r = methods.run("kemeny", condorcet_cycle[0])
    assert r.info["kemeny_value"] == 5 and r.info["kemeny_unique"] is False
    assert r.info["component_sizes"] == [3]


def test_decomposition():
    # d loses every pair: {a, b, c} is one component above {d}; order inside by the cycle.
    stats, _ = profile(["a>b>c>d", "b>c>a>d", "c>a>b>d", "a>b>c>d"])
    assert [c.tolist() for c in components(stats.pairwise.margins)] == [[0, 1, 2], [3]]
    r = methods.run("kemeny", stats)
    assert r.info["kemeny_unique"] is True  # a>b>c now has value 3 + 3 + 2 more than the rotations
    np.testing.assert_array_equal(r.rank, [1, 2, 3, 4])


def test_larger_mip_beats_every_swap():
    # m = 12 is beyond enumeration; a proven optimum cannot be improved by any adjacent swap.
    rng = np.random.default_rng(3)
    stats = profile(strict_ballots(rng, 12, 15))[0]
    r = methods.run("kemeny", stats)
    order = np.argsort(r.rank)
    wins = stats.pairwise.wins
    assert all(wins[order[i], order[i + 1]] >= wins[order[i + 1], order[i]] for i in range(11))
    # The ten rotations of a..j form a single component of ten agents, too many to enumerate.
    letters = "abcdefghij"[: ENUMERATE_MAX + 1]
    rotations = profile([">".join(letters[i:] + letters[:i]) for i in range(len(letters))])[0]
    with pytest.raises(ValueError, match="enumeration"):
        methods.run("kemeny:algorithm=enumerate", rotations)
