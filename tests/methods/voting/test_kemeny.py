"""Kemeny-Young: the MIP against enumeration, uniqueness, the Condorcet decomposition."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline import methods
from pipeline.methods.convergence import RatingError
from pipeline.methods.voting.kemeny import ENUMERATE_MAX, components
from pipeline.methods.voting import kemeny as kemeny_module
from pipeline.stats.counts import PairwiseCounts, Statistics
from pipeline.stats.in_memory import profile
from tests.voting_profiles import mixed_profiles, strict_ballots


def test_mip_equals_enumeration():
    for ballots in mixed_profiles(2, 25, most=6):
        stats = profile(ballots)[0]
        mip, enum = methods.run("kemeny", stats), methods.run("kemeny:algorithm=enumerate", stats)
        assert mip.info["kemeny_value"] == enum.info["kemeny_value"]
        assert mip.info["kemeny_unique"] == enum.info["kemeny_unique"]
        np.testing.assert_array_equal(mip.rank, enum.rank)  # the same canonical order when several are optimal


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


def _relabelled(stats: Statistics, permutation: np.ndarray, keys: np.ndarray | None) -> Statistics:
    """The same ballots with local agent i stored as agent permutation[i] (another store numbering)."""
    inverse = np.argsort(permutation)
    wins = stats.pairwise.wins[np.ix_(inverse, inverse)]
    ties = stats.pairwise.ties[np.ix_(inverse, inverse)]
    n = len(permutation)
    return Statistics("ballots", np.arange(n), np.ones(n, dtype=np.int64),
                      pairwise=PairwiseCounts(np.arange(n), wins, ties), agent_keys=keys)


def test_several_optima_give_the_canonical_order_whatever_the_store_ids():
    # Rock-paper-scissors: a>b>c, b>c>a and c>a>b are all optimal. With keys from the names the
    # answer is a>b>c however the store numbered the agents; with store-id keys it follows the ids.
    stats, names = profile(["a>b>c", "b>c>a", "c>a>b"])
    r = methods.run("kemeny", stats)
    assert r.rank.tolist() == [1, 2, 3] and r.info["kemeny_unique"] is False
    reverse = np.array([2, 1, 0])  # a is stored as 2, b as 1, c as 0
    named = methods.run("kemeny", _relabelled(stats, reverse, keys=reverse))
    assert named.rank[reverse].tolist() == [1, 2, 3]
    by_id = methods.run("kemeny", _relabelled(stats, reverse, keys=None))
    assert by_id.rank[reverse].tolist() == [2, 3, 1]  # c (id 0) first: c>a>b


def test_canonical_order_is_the_smallest_optimal_one_on_random_profiles():
    # Against enumeration (which takes the first optimum in key order) on relabelled profiles.
    rng = np.random.default_rng(12)
    compared = 0
    for ballots in mixed_profiles(4, 30, most=6):
        stats = profile(ballots)[0]
        permutation = rng.permutation(stats.pairwise.n)
        for keys in (None, rng.permutation(stats.pairwise.n)):
            moved = _relabelled(stats, permutation, keys)
            mip, enum = methods.run("kemeny", moved), methods.run("kemeny:algorithm=enumerate", moved)
            np.testing.assert_array_equal(mip.rank, enum.rank)
            compared += not mip.info["kemeny_unique"]
    assert compared >= 10


@pytest.mark.parametrize("wins", [np.zeros((4, 4)), np.zeros((1, 1)), np.ones((3, 3)) - np.eye(3)])
def test_degenerate_data(wins):
    # No comparisons, one agent, or only even splits: every order is optimal, and the canonical
    # one is the key order (here the store order).
    n = len(wins)
    stats = Statistics("ballots", np.arange(n), np.ones(n, dtype=np.int64),
                       pairwise=PairwiseCounts(np.arange(n), wins, np.zeros((n, n))))
    r = methods.run("kemeny", stats)
    assert r.rank.tolist() == list(range(1, n + 1)) and r.info["kemeny_unique"] is (n == 1)


def test_no_agents_is_refused_in_one_line():
    stats = Statistics("ballots", np.arange(0), np.ones(0, dtype=np.int64),
                       pairwise=PairwiseCounts(np.arange(0), np.zeros((0, 0)), np.zeros((0, 0))))
    with pytest.raises(RatingError, match="kemeny: no agents to rate"):
        methods.run("kemeny", stats)


def brute_force_canonical(margins: np.ndarray, keys: np.ndarray) -> tuple[list[int], bool]:
    """Every order of the agents: the best by the sum of margins above, the first among them in key order."""
    import itertools

    best, value, count = None, -np.inf, 0
    for order in itertools.permutations(np.argsort(keys, kind="stable").tolist()):
        v = sum(margins[order[i], order[j]] for i in range(len(order)) for j in range(i + 1, len(order)))
        best, value, count = (order, v, 1) if v > value + 1e-9 else (best, value, count + (abs(v - value) <= 1e-9))
    return list(best), bool(count == 1)


@pytest.mark.parametrize("seed", range(6))
def test_disjoint_elections_are_merged_by_key_as_every_order_would(seed):
    # Agents in elections of their own (every cross margin 0): the canonical optimum interleaves the elections' orders.
    rng = np.random.default_rng(seed)
    names = list("abcdefg")
    rng.shuffle(names)
    groups = [names[:3], names[3:5], names[5:]]
    ballots = [">".join(rng.permutation(g)) for g in groups for _ in range(rng.integers(1, 4))]
    stats, agent_names = profile(ballots)
    r = methods.run("kemeny", stats)
    order, unique = brute_force_canonical(stats.pairwise.margins, stats.agent_keys)
    assert r.info["kemeny_unique"] is unique is False
    assert [agent_names[a] for a in np.asarray(stats.agents)[np.argsort(r.rank)]] == [agent_names[a] for a in order]


def test_fifteen_two_agent_elections_are_fifteen_components_not_one():
    # Each pair is its own election: they were one component of 30 agents (every cross margin 0 >= 0), whose
    # canonical-order MIPs took 34 s; now each pair is a group of two components, ordered by its margin.
    ballots = [f"a{i:02d}>b{i:02d}" for i in range(15)]
    stats, names = profile(ballots)
    r = methods.run("kemeny", stats)
    assert r.info["component_sizes"] == [1] * 30 and r.info["kemeny_unique"] is False
    # Merged by name: the a's lead their pairs and come first by name (every b can wait), then the b's.
    ranked_names = [names[a] for a in np.asarray(stats.agents)[np.argsort(r.rank)]]
    assert ranked_names == [f"a{i:02d}" for i in range(15)] + [f"b{i:02d}" for i in range(15)]


def one_cycle_ridden_component(agents: int):
    rng = np.random.default_rng(0)
    names = [f"x{i}" for i in range(agents)]
    return profile([">".join(rng.permutation(names)) for _ in range(15)])[0]


def test_components_expected_past_the_time_limit_are_refused_before_any_mip(monkeypatch):
    # Planted: no check before the MIPs: HiGHS is called (and livebench's 127 models ran 110 s to fail).
    stats = one_cycle_ridden_component(26)  # expected 2e-6 * 26^4 = 0.91 s
    monkeypatch.setattr(kemeny_module, "_solve", lambda *a, **k: pytest.fail("a MIP was started"))
    with pytest.raises(RatingError, match=r"^kemeny: the largest of its 1 component\(s\) of the majority graph holds 26 agents, "
                                          r"expected 1 s of MIPs, over time_limit=0.5 s; rate with schulze"):
        methods.run("kemeny:time_limit=0.5", stats)


def test_a_mip_past_its_time_limit_is_refused_in_one_line(monkeypatch):
    # 26 agents in one cycle-ridden majority graph: on a quiet machine HiGHS proved 14 agents'
    # order inside 1 ms, so the instance must be one whose model alone takes longer to build;
    # expected to fit (the refusal before the MIPs is the test above), it runs out of time.
    monkeypatch.setattr(kemeny_module, "mip_seconds", lambda m: 0.0)
    stats = one_cycle_ridden_component(26)
    with pytest.raises(RatingError, match=r"^kemeny: the kemeny \S+ MIP was not solved within time_limit \(.*\); rate with "
                                          r"schulze or ranked-pairs, rate fewer agents \(--where\), or set "
                                          r"kemeny:time_limit=<seconds>$"):
        methods.run("kemeny:time_limit=0.001", stats)
