"""Kemeny-Young: the MIP against enumeration, uniqueness, the Condorcet decomposition."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import scipy.sparse as sp

from pipeline import methods
from pipeline.methods.convergence import RatingError
from pipeline.methods.numerics import highs
from pipeline.methods.voting import kemeny as kemeny_module
from pipeline.methods.voting.kemeny import ENUMERATE_MAX, components
from pipeline.stats.counts import PairwiseCounts, Statistics
from pipeline.stats.in_memory import profile, statistics_of_records
from tests.conftest import SAMPLES
from tests.voting_profiles import mixed_profiles, random_wins, strict_ballots


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


def tied_margins(rng: np.random.Generator, m: int) -> np.ndarray:
    """Margins of one to four partial or weak ballots over m agents: most pairs unranked or split evenly (margin 0)."""
    wins = random_wins(rng, str(rng.choice(["partial", "weak", "weighted"])), m, int(rng.integers(1, 5)))
    return wins - wins.T


@pytest.mark.parametrize("bounds", [True, False])
def test_canonical_order_equals_enumeration_on_profiles_with_many_zero_margins(monkeypatch, bounds):
    # m <= 6 (enumerating 7 or 8 agents takes a tenth of a second to a second). Without the LP bounds every candidate left goes to a MIP on R - a.
    # Planted, each failed here: candidates in reverse key order; a + (o - a) accepted two units short of the optimum
    # (one cannot happen: the values of orders share a parity); with bounds=False, a MIP's order accepted below the
    # value asked, or two agents' order whatever their value.
    rng = np.random.default_rng(33)
    ruled_out_by_mip = []
    optimum_at_least = kemeny_module._optimum_at_least

    def spied(*args):
        order = optimum_at_least(*args)
        ruled_out_by_mip.append(order is None)
        return order

    monkeypatch.setattr(kemeny_module, "_optimum_at_least", spied)
    if not bounds:
        solve = kemeny_module._Relaxation.solve
        monkeypatch.setattr(kemeny_module._Relaxation, "solve", lambda units, agents, deadline, at_least=None: solve(units, agents, deadline))
        monkeypatch.setattr(kemeny_module._Relaxation, "cannot_top", lambda self, agents, value: np.zeros(len(agents), bool))
        # and HiGHS returning its optimum past the objective bound asked (as it did on LLMFAO): the value decides
        unbounded = kemeny_module._solve
        monkeypatch.setattr(kemeny_module, "_solve", lambda *a, bound=None: unbounded(*a))
    several = 0
    profiles = 80 if bounds else 40
    for _ in range(profiles):
        m = int(rng.integers(3, 7))
        margins, keys = tied_margins(rng, m), rng.permutation(m)
        mip, unique = kemeny_module._mip(margins, keys)
        enumerated, enumerated_unique = kemeny_module._enumerate(margins, keys)
        assert mip.tolist() == enumerated.tolist() and unique == enumerated_unique
        several += not unique
    assert several >= profiles // 3 and (bounds or any(ruled_out_by_mip))  # without bounds, MIPs rule candidates out


def canonical_by_a_mip_per_position(margins: np.ndarray, keys: np.ndarray) -> list[int]:
    """The former canonical choice, kept here as an independent reference: position by position, one MIP over
    the optimal orders (cost <= best) with the places above fixed, binaries z_a (a sits at this position: above
    every agent left, z_a <= x(a above b)), sum z = 1, maximising the preference of the agents by key."""
    units = kemeny_module._integer_objective(margins)
    cost, pairs, _, rows = kemeny_module._model(units)
    m, n, t = len(keys), len(cost), rows.shape[0]
    var = np.full((m, m), -1, dtype=np.int64)
    var[pairs[:, 0], pairs[:, 1]] = np.arange(n)
    optimum = highs.solve("reference order", cost, rows, np.zeros(t), np.ones(t), np.zeros(n), np.ones(n),
                          integer=np.ones(n, bool), options={"mip_rel_gap": 0.0, "mip_abs_gap": 0.5})
    best = float(cost @ np.rint(optimum.x))
    fixed: dict[int, int] = {}
    order: list[int] = []
    preference = (m - np.argsort(np.argsort(keys, kind="stable"), kind="stable")).astype(np.float64)
    for _ in range(m - 1):
        left = [a for a in range(m) if a not in order]
        z = {a: n + i for i, a in enumerate(left)}
        pairs_left = [(a, b) for a in left for b in left if a != b]
        k = len(pairs_left)
        entries = [(i, int(var[min(a, b), max(a, b)]), 1.0 if a < b else -1.0) for i, (a, b) in enumerate(pairs_left)]
        entries += [(i, z[a], -1.0) for i, (a, _) in enumerate(pairs_left)]
        r, c, v = zip(*entries)
        above = sp.csc_array((v, (r, c)), shape=(k, n + len(left)))
        one = np.zeros(n + len(left))
        one[list(z.values())] = 1.0
        matrix = sp.vstack([sp.hstack([rows, sp.csc_array((t, len(left)))]), above,
                            sp.csc_array(one[None, :]), sp.csc_array(np.r_[cost, np.zeros(len(left))][None, :])], format="csc")
        col_lower, col_upper = np.zeros(n + len(left)), np.ones(n + len(left))
        for index, value in fixed.items():
            col_lower[index] = col_upper[index] = value
        x = highs.solve("reference canonical order", np.r_[np.zeros(n), -preference[left]], matrix,
                        np.r_[np.zeros(t), [0.0 if a < b else -1.0 for a, b in pairs_left], 1.0, -np.inf],
                        np.r_[np.ones(t), np.full(k, np.inf), 1.0, best + 0.5], col_lower, col_upper,
                        integer=np.ones(n + len(left), bool), options={"mip_rel_gap": 0.0, "mip_abs_gap": 0.5}).x
        top = next(a for a in left if np.rint(x[z[a]]) == 1)
        order.append(top)
        for b in left:
            if b != top:
                fixed[int(var[min(top, b), max(top, b)])] = 1 if top < b else 0
    return order + [a for a in range(m) if a not in order]


def test_canonical_order_equals_a_mip_per_position_beyond_enumeration():
    # 10 to 14 agents with many zero margins, past enumeration: the same order as the former MIP per position.
    # Planted, each failed here: candidates in reverse key order; the multipliers' or the LP's bound 2 units too strict.
    rng = np.random.default_rng(59)
    several = 0
    for _ in range(6):
        m = int(rng.integers(10, 15))
        margins, keys = tied_margins(rng, m), rng.permutation(m)
        order, unique = kemeny_module._mip(margins, keys)
        assert order.tolist() == canonical_by_a_mip_per_position(margins, keys)
        several += not unique
    assert several >= 5


def test_canonical_order_on_llmfao_models_equals_a_mip_per_position():
    # Real data, bounded: the battles among the first 22 LLMFAO models by name (238 of 462 ordered pairs with margin
    # 0, the optimum not unique); the full 59 took the former MIPs past their 60 s time_limit.
    # Planted, each failed here: candidates in reverse key order; the multipliers' bound 2 units too strict.
    battles = pl.read_csv(SAMPLES / "llmfao" / "crowd_battles.csv", infer_schema_length=0)
    first = sorted(set(battles["model_a"]) | set(battles["model_b"]))[:22]
    records = battles.filter(pl.col("model_a").is_in(first) & pl.col("model_b").is_in(first)).to_dicts()
    stats = statistics_of_records(records, "battles", {"pairwise"})[0]
    margins = stats.pairwise.margins
    order, unique = kemeny_module._mip(margins, stats.agent_keys)
    assert not unique and order.tolist() == canonical_by_a_mip_per_position(margins, stats.agent_keys)
