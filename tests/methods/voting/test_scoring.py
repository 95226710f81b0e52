"""Plurality, approval and Borda: the paper's pentathlon, OpenSpiel, ties and short ballots."""

from __future__ import annotations

import numpy as np
import pytest
from open_spiel.python.voting import approval as os_approval
from open_spiel.python.voting import borda as os_borda
from open_spiel.python.voting import plurality as os_plurality

from pipeline.methods import run
from pipeline.stats.in_memory import profile
from tests.methods.oracle import openspiel_scores, random_strict_profile


@pytest.mark.parametrize(("spec", "scores", "ranks"), [
    # [VasE] appendix C.2.1-C.2.3, agents (A, B, C).
    ("plurality", [2, 1, 2], [1, 3, 1]),        # A tops ABC and ACB, C tops CAB twice, B tops BCA
    ("approval:k=2", [4, 2, 4], [1, 3, 1]),     # A: 1+1+2, B: 1+1, C: 1+2+1
    ("borda", [6, 3, 6], [1, 3, 1]),            # A: 2+2+2*1, B: 1+2, C: 1+2*2+1
])
def test_pentathlon(pentathlon, spec, scores, ranks):
    stats, names = pentathlon
    ratings = run(spec, stats)
    assert names == ["A", "B", "C"]
    assert ratings.score.tolist() == scores and ratings.rank.tolist() == ranks


@pytest.mark.parametrize(("spec", "rule"), [
    ("plurality", os_plurality.PluralityVoting()),
    ("approval:k=1", os_approval.ApprovalVoting(k=1)),
    ("approval:k=3", os_approval.ApprovalVoting(k=3)),
    ("borda", os_borda.BordaVoting()),
])
def test_equals_openspiel_on_random_profiles(spec, rule):
    rng = np.random.default_rng(2024)
    for _ in range(60):
        m, n = int(rng.integers(2, 7)), int(rng.integers(1, 12))
        rankings = random_strict_profile(rng, m, n)
        stats, names = profile(rankings)
        present = [names[i] for i in stats.agents]
        np.testing.assert_array_equal(run(spec, stats).score, openspiel_scores(rule, rankings, present))


def test_ties_share_positions():
    # "a=b>c": a and b share places 0 and 1: half a plurality point each, Borda (2+1)/2 = 1.5.
    stats, _ = profile(["a=b>c"])
    assert run("plurality", stats).score.tolist() == [0.5, 0.5, 0.0]
    assert run("borda", stats).score.tolist() == [1.5, 1.5, 0.0]
    assert run("approval:k=1", stats).score.tolist() == [0.5, 0.5, 0.0]


def test_short_ballots_and_normalised_borda():
    # A ballot of length 2 gives Borda points 1, 0; one of length 3 gives 2, 1, 0; normalised, both top out at 1.
    # a: 1 + 0, b: 0 + 2, c: 1 ; normalised a: 1/1 + 0/2, b: 0/1 + 2/2, c: 1/2.
    stats, _ = profile(["a>b", "b>c>a"])
    assert run("borda", stats).score.tolist() == [1.0, 2.0, 1.0]
    assert run("borda:normalise=true", stats).score.tolist() == [1.0, 1.0, 0.5]


def test_weights_scale_scores_and_leave_ranks():
    rankings = ["a>b>c", "c>a>b", "b>c>a", "a>c>b"]
    plain, _ = profile(rankings)
    heavy, _ = profile(rankings, weights=[2.5] * 4)
    for spec in ("plurality", "approval:k=2", "borda"):
        np.testing.assert_array_equal(run(spec, heavy).score, 2.5 * run(spec, plain).score)
        np.testing.assert_array_equal(run(spec, heavy).rank, run(spec, plain).rank)


def test_approval_rejects_k_below_one(pentathlon):
    with pytest.raises(ValueError, match="approval: parameter k=0 must be at least 1"):
        run("approval:k=0", pentathlon[0])
