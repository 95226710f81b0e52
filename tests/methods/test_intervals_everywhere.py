"""Intervals for every method that takes `bootstrap=R`, on every kind it rates, and coverage that an interval of
zero width, or one constant wide interval, cannot pass.

The logs are the contract's (`tests.conftest.contract_rows`); R is small, so these check what the intervals
are (present, ordered, not all zero-wide: the records really are redrawn, the tasks of a score table too: with
its tasks never redrawn, nash-averaging, deviation, alpha-rank, affinity-ne and uniform fail on `scores`),
not how wide. Coverage is measured on synthetic logs with known truth, for m-Elo's own bootstrap and the
registry's (Copeland), each against a band of widths derived from that truth."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.methods import REGISTRY, run
from pipeline.methods.bradley_terry.core import LN10
from pipeline.methods.convergence import RatingError
from pipeline.methods.registry import BOOTSTRAP
from pipeline.stats.in_memory import statistics_of_records
from tests.methods.test_contract import CASES
from tests.methods.test_uncertainty import battles

ROUNDS = 12
INTERVALS = ("ci_low", "ci_high", "rank_low", "rank_high", "tier", "rounds_measured")
NO_RESAMPLER = "bootstrap is not available"  # documented refusals: annotators and reviews have no resampler


def bootstrapped(name: str) -> bool:
    method = REGISTRY[name]
    return BOOTSTRAP in method.parameters or BOOTSTRAP in method.generic_parameters


@pytest.mark.parametrize("name, kind", [c for c in CASES if bootstrapped(c[0])])
def test_every_method_that_takes_bootstrap_gives_intervals_on_every_kind_it_rates(name, kind, contract_inputs):
    stats, _ = contract_inputs(kind)
    try:
        plain = run(f"{name}:bootstrap=0", stats)
    except RatingError:
        pytest.skip(f"{name} does not rate the {kind} fixture at all (test_contract says why)")
    try:
        ratings = run(f"{name}:bootstrap={ROUNDS}", stats)
    except ValueError as error:
        assert NO_RESAMPLER in str(error), error
        return
    assert np.array_equal(ratings.score, plain.score, equal_nan=True)
    extras = ratings.extras
    assert set(INTERVALS) <= set(extras), sorted(extras)
    low, high = extras["ci_low"], extras["ci_high"]
    assert np.all(low[np.isfinite(low)] <= high[np.isfinite(low)])
    assert np.all(extras["rank_low"] <= extras["rank_high"])
    assert np.all((1 <= extras["rank_low"]) & (extras["rank_high"] <= len(ratings.agents)))
    assert np.all(extras["rounds_measured"] <= ROUNDS - ratings.info.get("bootstrap_dropped", 0))
    # the records are redrawn: some agent's rank moves in some round. Not asked of the reviews, whose six models are
    # so far apart that m-Elo's ranks stay put over 100 rounds, and whose Condorcet winner wins every lottery
    if kind != "reviews":
        assert (extras["rank_high"] > extras["rank_low"]).any(), f"{name} on {kind}: every rank interval is zero-wide"


def coverage(intervals: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple[float, float]:
    """Share of (low, truth, high) covered, and the mean width, over replicates."""
    covered = np.concatenate([(low <= truth) & (truth <= high) for low, truth, high in intervals])
    return float(covered.mean()), float(np.mean(np.concatenate([high - low for low, _, high in intervals])))


STRENGTH = np.array([1.2, 0.6, 0.2, -0.2, -0.6, -1.2])  # natural units
NAMES = ["a", "b", "c", "d", "e", "f"]
BATTLES = 300


def replicates(spec: str, count: int = 6):
    for replicate in range(count):
        rows = battles(np.random.default_rng(300 + replicate), STRENGTH, BATTLES, NAMES)
        stats, got = statistics_of_records(rows, "battles", ["pairwise", "positions"])
        yield run(spec, stats), [NAMES.index(got[a]) for a in stats.agents]


def test_m_elo_score_intervals_cover_the_true_skills_at_the_width_the_truth_implies():
    # Fisher information at the truth: each agent meets each other about BATTLES / 15 times (5% ties aside);
    # the 95% width of its centred rating in Elo points is about 2 * 1.96 * scale / ln 10 / sqrt(information)
    k, pairs = len(STRENGTH), len(STRENGTH) * (len(STRENGTH) - 1) / 2
    p = 1 / (1 + np.exp(STRENGTH[None, :] - STRENGTH[:, None]))
    information = (BATTLES / pairs) * (p * (1 - p)).sum(axis=1)  # the diagonal adds 0.25 * 0 only
    expected_width = float(np.mean(2 * 1.96 * 400 / LN10 / np.sqrt(information) * np.sqrt((k - 1) / k)))
    intervals = []
    for ratings, truth_index in replicates("m-elo:bootstrap=100"):
        truth = 1000 + 400 / LN10 * (STRENGTH[truth_index] - STRENGTH.mean())
        intervals.append((ratings.extras["ci_low"], truth, ratings.extras["ci_high"]))
    covered, width = coverage(intervals)
    assert covered >= 0.85, covered
    assert 0.6 * expected_width <= width <= 1.6 * expected_width, (width, expected_width)


def test_copeland_rank_intervals_cover_the_true_ranks_and_are_no_wider_than_the_data_allows():
    # Truth: rank i + 1 for strength index i. Neighbours 0.4 apart meet ~20 times: their order is uncertain,
    # agents 3+ steps apart almost never swap; so an honest interval spans 1 to 3 ranks (never all k, never 0).
    intervals = []
    for ratings, truth_index in replicates("copeland:bootstrap=100"):
        truth = np.array(truth_index) + 1
        intervals.append((ratings.extras["rank_low"], truth, ratings.extras["rank_high"]))
    covered, width = coverage(intervals)
    assert covered >= 0.85, covered
    assert 0.3 <= width <= 2.5, width
