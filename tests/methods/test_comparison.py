"""The rank comparison beside council Borda: the mismatch rule (rank differs by more than two places)."""

from __future__ import annotations

import numpy as np

from pipeline.methods import Ratings
from pipeline.methods.comparison import compare_ranks, rank_mismatch
from pipeline.stats.in_memory import profile


def test_mismatch_is_more_than_two_places():
    # Differences 3, 2, 0, 3 and an agent the other method did not rate (rank 0): only the 3s are flagged.
    base = np.array([1, 2, 3, 4, 5])
    other = np.array([4, 4, 3, 1, 0])
    assert rank_mismatch(base, other).tolist() == [True, False, False, True, False]


def test_compare_flags_agents_and_names_unavailable_specs():
    # One ballot a>b>c>d>e. A base rating that reverses it ranks e 1, d 2, c 3, b 4, a 5.
    # copeland: a 1, b 2, c 3, d 4, e 5 -> differences 4, 2, 0, 2, 4: a and e flagged, b and d (exactly 2) not.
    # plurality: a 1 (one first place), b..e 0 points -> rank 2 -> differences 4, 2, 1, 0, 1: a flagged.
    stats, names = profile(["a>b>c>d>e"])
    base = Ratings.from_scores(stats.agents, np.arange(5.0))
    got = compare_ranks(base, "base", ["copeland", "plurality", "m-elo-not-here"], stats)
    assert dict(zip(names, got.flagged_by)) == {"a": ["copeland", "plurality"], "b": [], "c": [], "d": [], "e": ["copeland"]}
    table = got.table.to_pydict()
    assert table["copeland"] == [1, 2, 3, 4, 5] and table["plurality"] == [1, 2, 2, 2, 2]
    assert table["max_rank_difference"] == [4, 2, 1, 2, 4]
    assert list(got.unavailable) == ["m-elo-not-here"]


def test_compare_reports_a_method_that_fails():
    # approval:k=0 is refused when parsed: it is reported, and the other specs still run.
    stats, _ = profile(["a>b>c"])
    base = Ratings.from_scores(stats.agents, np.array([3.0, 2.0, 1.0]))
    got = compare_ranks(base, "base", ["approval:k=0", "borda"], stats)
    assert "parameter k=0 must be at least 1" in got.unavailable["approval:k=0"]
    assert "borda" in got.table.column_names and "approval:k=0" not in got.table.column_names


def test_a_method_that_rates_no_agent_leaves_every_rank_empty():
    # Every review abstained: the council rates its models 0, the pairwise methods see no comparison
    # and rate nobody. Their ranks are empty (and flag no one) rather than an IndexError.
    stats, _ = profile([])
    base = Ratings.from_scores(np.array([4, 7]), np.zeros(2))
    got = compare_ranks(base, "base", ["copeland"], stats)
    assert got.table.to_pydict()["copeland"] == [None, None] and got.flagged_by == [[], []]
