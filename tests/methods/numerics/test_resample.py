"""Poisson redraws by guide-table inversion: the right distribution, reproducible, and the fallback."""

import warnings

import numpy as np
import pytest
from scipy.stats import poisson

from pipeline.methods.numerics import resample
from pipeline.methods.numerics.resample import (PoissonTable, interval_columns, nan_percentiles, poisson_draws, rank_upper_bounds,
                                                 ranks_by_round, tiers)
from pipeline.methods.ratings import competition_ranks


@pytest.mark.parametrize("weight", [0.0, 0.5, 3.0, 7.25, 400.0])
def test_draws_follow_the_poisson_law(weight):
    draws = poisson_draws(np.array([weight, weight]), 40_000, np.random.default_rng(0)).ravel()
    values, seen = np.unique(draws, return_counts=True)
    expected = poisson.pmf(values, weight) * len(draws)
    frequent = expected > 50  # a chi-square-style check on the frequent values: within 5 standard deviations
    assert np.all(np.abs(seen[frequent] - expected[frequent]) < 5 * np.sqrt(expected[frequent]))
    assert draws.mean() == pytest.approx(weight, abs=5 * np.sqrt(max(weight, 1e-9) / len(draws)) + 1e-12)


def test_same_seed_same_draws_and_the_fallback_is_poisson_too(monkeypatch):
    weights = np.array([1.0, 2.0, 30.0, 0.0])
    first = poisson_draws(weights, 100, np.random.default_rng(5))
    assert first.tobytes() == poisson_draws(weights, 100, np.random.default_rng(5)).tobytes()
    assert first.shape == (100, 4) and np.all(first[:, 3] == 0)
    monkeypatch.setattr(resample, "TABLE_MAX", 1)
    fallback = poisson_draws(weights, 100, np.random.default_rng(5))
    assert fallback.tobytes() == np.random.default_rng(5).poisson(weights, size=(100, 4)).astype(np.float64).tobytes()


@pytest.mark.parametrize("table_max", [resample.TABLE_MAX, 1])  # the guide tables, and the fallback to Generator.poisson
def test_rounds_drawn_in_blocks_into_a_buffer_are_the_rounds_drawn_at_once(monkeypatch, table_max):
    monkeypatch.setattr(resample, "TABLE_MAX", table_max)
    weights = np.random.default_rng(2).integers(0, 5, 500) * 1.5
    table = PoissonTable.of(weights)
    at_once = table.draws(23, np.random.default_rng(7))
    rng, buffer, blocks = np.random.default_rng(7), np.full((5, 500), np.nan), []
    for lo in range(0, 23, 5):
        drawn = table.draws(min(5, 23 - lo), rng, buffer[: min(5, 23 - lo)])
        assert np.shares_memory(drawn, buffer)  # into the buffer, not a new array
        blocks.append(drawn.copy())
    assert np.concatenate(blocks).tobytes() == at_once.tobytes()
    assert buffer[: 23 % 5].tobytes() == at_once[20:].tobytes()


def test_no_weights_draw_rows_of_nothing_and_leave_the_stream_as_it_was():
    rng = np.random.default_rng(3)
    assert poisson_draws(np.array([]), 4, rng).shape == (4, 0)
    assert rng.random() == np.random.default_rng(3).random()


def test_each_draw_inverts_the_cdf_at_its_own_uniform_also_among_cells_of_weight_zero():
    """Every cell consumes one uniform, weight 0 or not, and its draw is the Poisson quantile of that
    uniform: skipping the look-ups of weight-0 cells changes no draw of the others."""
    rng = np.random.default_rng(1)
    weights = rng.integers(0, 4, 3_000) * rng.choice([1.0, 0.5, 7.25], 3_000)  # about a quarter of weight 0
    draws = poisson_draws(weights, 20, np.random.default_rng(9))
    u = np.random.default_rng(9).random((20, len(weights)))
    below = poisson.cdf(draws - 1, weights)
    assert np.all(draws[:, weights == 0] == 0)
    assert np.all((below <= u) & (u < poisson.cdf(draws, weights)))


def numpy_guide_table_draws(weights: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """The guide-table inversion written over arrays in numpy (as it was before it was compiled): the oracle
    the compiled search must equal bit for bit."""
    distinct, group = np.unique(weights, return_inverse=True)
    reach = 10 * np.sqrt(distinct) + 20
    low = np.floor(np.maximum(distinct - reach, 0.0))
    width = int(np.ceil((distinct + reach - low).max(initial=0.0))) + 1
    cdf = poisson.cdf(low[:, None] + np.arange(width), distinct[:, None])
    cdf[:, -1] = 2.0
    guide = np.concatenate([np.searchsorted(row, np.arange(width) / width, side="right") for row in cdf]) + np.repeat(
        np.arange(len(distinct)) * width, width)
    cdf = cdf.ravel()
    u = rng.random((size, len(weights)))
    pos = guide[group * width + (u * width).astype(np.int64)]
    while (pending := cdf[pos] <= u).any():
        pos[pending] += 1
    return np.where(weights > 0, low[group] + pos - group * width, 0.0)


@pytest.mark.parametrize("weights", [
    np.zeros(7),
    np.array([0.0, 1e-300, 5e-324, 1e-12, 0.5, 1.0]),  # tiny weights: every draw 0 but the rare one
    np.array([1e6, 3.0, 0.0, 2.5e5]),  # huge: a table of 20,041 entries per distinct weight
    np.r_[np.arange(1, 600) * 0.25, 0.0],  # many distinct values, just under TABLE_MAX entries
    np.random.default_rng(2).integers(0, 6, 5_000) * np.random.default_rng(3).choice([1.0, 0.5, 7.25, 40.0], 5_000),
])
def test_the_compiled_search_draws_what_the_numpy_search_drew(weights):
    for size in (1, 3, 40):
        compiled = poisson_draws(weights, size, np.random.default_rng(size))
        assert compiled.shape == (size, len(weights)) and compiled.dtype == np.float64
        assert compiled.tobytes() == numpy_guide_table_draws(weights, size, np.random.default_rng(size)).tobytes()


def test_tables_of_exactly_table_max_entries_are_built_one_more_falls_back(monkeypatch):
    weights = np.array([1.0, 3.0, 3.0])
    reach = 10 * np.sqrt([1.0, 3.0]) + 20  # the module's reach: the widest table, of weight 3, starts at 0
    entries = 2 * (int(np.ceil(3.0 + reach[1])) + 1)
    monkeypatch.setattr(resample, "TABLE_MAX", entries)
    assert PoissonTable.of(weights).tables is not None
    monkeypatch.setattr(resample, "TABLE_MAX", entries - 1)
    assert PoissonTable.of(weights).tables is None


def test_weights_past_the_table_fall_back_to_the_generator():
    weights = np.r_[np.arange(1, 60) * 1e6, 0.0]  # 59 tables of ~150,000 entries: over TABLE_MAX
    draws = poisson_draws(weights, 5, np.random.default_rng(8))
    assert draws.tobytes() == np.random.default_rng(8).poisson(weights, size=(5, len(weights))).astype(np.float64).tobytes()


def test_rank_upper_bounds_count_the_intervals_wholly_above():
    rng = np.random.default_rng(3)
    low = np.round(rng.normal(0, 5, 300))  # ties between bounds, and a bound equal to another's
    high = low + np.round(rng.uniform(0, 8, 300))
    low[[4, 9]], high[[9, 17]] = np.nan, np.nan
    low[20], high[21] = -np.inf, np.inf
    brute = 1 + (low[None, :] > high[:, None]).sum(axis=1)  # the definition, agents x agents
    assert rank_upper_bounds(low, high).tolist() == brute.tolist() and rank_upper_bounds(low, high).dtype == np.int64
    assert rank_upper_bounds(np.array([]), np.array([])).tolist() == []


def test_bounds_and_round_scores_within_the_tolerance_count_as_equal():
    rng = np.random.default_rng(5)
    low = 1000 + rng.choice([-3e-9, 0.0, 2e-9, 0.5, 2.0], 200)  # equal up to a solver's last digits, or apart
    high = low + rng.choice([0.0, 1e-9, 1.0], 200)
    brute = 1 + (low[None, :] > high[:, None] + 1e-3).sum(axis=1)
    assert rank_upper_bounds(low, high, 1e-3).tolist() == brute.tolist()
    assert rank_upper_bounds(low, high).tolist() == (1 + (low[None, :] > high[:, None]).sum(axis=1)).tolist()
    scores = 1000 + rng.choice([-3e-9, 0.0, 2e-9, 0.5, 2.0], (4, 50))
    ranks = ranks_by_round(scores, 1e-3)
    assert ranks.tolist() == (1 + (scores[:, None, :] > scores[:, :, None] + 1e-3).sum(axis=2)).tolist()
    for round_scores, round_ranks in zip(scores, ranks):  # the near-equal scores of a round share its rank
        assert len(np.unique(round_ranks[round_scores < 1000.1])) == 1
    scores[0, 7] = np.nan  # a round with a score missing goes to competition_ranks, at the same tolerance
    assert ranks_by_round(scores, 1e-3)[0].tolist() == competition_ranks(scores[0], tolerance=1e-3).astype(float).tolist()


def test_interval_columns_take_the_same_percentiles_with_and_without_missing_rounds():
    rng = np.random.default_rng(4)
    scores = np.round(rng.normal(1000, 50, (203, 40)), 3)
    ranks = ranks_by_round(scores)
    rank = competition_ranks(scores.mean(axis=0))
    missing = scores.copy()
    missing[0, 0] = np.nan  # an agent absent from one round
    finite = interval_columns(scores, ranks, rank)  # no NaN: numpy's percentile over all agents at once
    agent_by_agent = np.nanpercentile(missing, (2.5, 97.5), axis=0)
    with_missing = interval_columns(missing, ranks, rank)
    for low_or_high, column in enumerate(("ci_low", "ci_high")):
        assert finite[column].tobytes() == np.nanpercentile(scores, (2.5, 97.5), axis=0)[low_or_high].tobytes()
        assert with_missing[column].tobytes() == agent_by_agent[low_or_high].tobytes()
    assert np.isnan(interval_columns(np.full((3, 2), np.nan), np.full((3, 2), 1.0), np.array([1, 1]))["ci_low"]).all()


def test_rank_intervals_are_the_lower_and_higher_percentiles_of_the_rounds_ranks():
    rng = np.random.default_rng(11)
    scores = rng.normal(np.linspace(0, 1, 30), 0.5, (57, 30))  # 57 rounds: 2.5% and 97.5% fall between two rounds
    ranks = ranks_by_round(scores)
    columns = interval_columns(scores, ranks, competition_ranks(scores.mean(axis=0)))
    assert columns["rank_low"].tolist() == np.percentile(ranks, 2.5, axis=0, method="lower").astype(int).tolist()
    assert columns["rank_high"].tolist() == np.percentile(ranks, 97.5, axis=0, method="higher").astype(int).tolist()
    assert columns["rank_low"].dtype == columns["rank_high"].dtype == columns["tier"].dtype == np.int64
    assert not np.array_equal(columns["rank_high"], np.percentile(ranks, 97.5, axis=0).astype(int))  # the higher, not cut down


def test_ranks_by_round_are_each_rounds_competition_ranks():
    scores = np.array([[3.0, 1.0, 3.0, 2.0], [np.nan] * 4, [0.0, 0.0, 0.0, 5.0]])
    ranks = ranks_by_round(scores)
    assert ranks[0].tolist() == [1, 4, 1, 3] and ranks[2].tolist() == [2, 2, 2, 1]
    assert np.isnan(ranks[1]).all()


def test_ranks_by_round_equal_competition_ranks_with_ties_infinities_signed_zeros_and_missing_scores():
    rng = np.random.default_rng(12)
    scores = np.round(rng.normal(0, 3, (60, 500)))  # many ties
    scores[1, :7] = [np.inf, -np.inf, np.inf, -0.0, 0.0, -0.0, 5e-324]
    scores[2, 3] = np.nan  # one score missing: competition_ranks decides where it goes
    scores[3] = np.nan
    ranks = ranks_by_round(scores)
    for r in (0, 1, 2, 4, 59):
        with np.errstate(invalid="ignore"):  # the oracle's differences of equal infinities
            assert ranks[r].tolist() == competition_ranks(scores[r]).astype(float).tolist()
    assert np.isnan(ranks[3]).all() and ranks.dtype == np.float64
    assert ranks_by_round(np.empty((2, 0))).shape == (2, 0)


@pytest.mark.parametrize("method", ["linear", "lower", "higher"])
def test_nan_percentiles_are_numpys_nanpercentile(method):
    # Rounds that did not measure an agent are NaN; columns measured by different numbers of rounds,
    # one by none, and repeated values (ranks) must give numpy's own answer bit for bit.
    rng = np.random.default_rng(5)
    values = rng.normal(size=(40, 300))
    values[:, :100] = rng.integers(1, 9, size=(40, 100))
    values[rng.random(values.shape) < 0.3] = np.nan
    values[:, 7] = np.nan
    values[1:, 8] = np.nan  # one number only
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = np.nanpercentile(values, [2.5, 97.5], axis=0, method=method)
    np.testing.assert_array_equal(nan_percentiles(values, [2.5, 97.5], method), expected)


def test_tiers():
    rank = np.array([1, 2, 3, 4, 5])
    low, high = np.array([1, 1, 2, 4, 4]), np.array([2, 3, 4, 5, 5])
    # the leader (1..2) takes agent 2 (1..3) and agent 3 (2..4, its low bound on the leader's high one); agent 4 leads the next tier
    assert tiers(rank, low, high).tolist() == [1, 1, 1, 2, 2]
    # agents listed out of rank order, three tiers: agent 1 (1..2) takes agent 3; agent 0 (3..4) takes agent 4 (3..5),
    # which stays in tier 2 though it overlaps the next leader, agent 2 (5..5), who takes agent 5
    rank, low, high = np.array([3, 1, 5, 2, 4, 6]), np.array([3, 1, 5, 1, 3, 5]), np.array([4, 2, 5, 3, 5, 6])
    found = tiers(rank, low, high)
    assert found.tolist() == [2, 1, 3, 1, 2, 3] and found.dtype == np.int64


def brute_within(values: np.ndarray, mask: np.ndarray, better) -> np.ndarray:
    """The definition of a count within two groups: an agent of `mask` is 1 + the agents of `mask` that `better`
    says beat it, any other `mask.sum()` + 1 + the others that beat it."""
    return np.array([(0 if mask[i] else mask.sum()) + 1 + sum(better(j, i) for j in np.flatnonzero(mask == mask[i]))
                     for i in range(len(mask))])


def test_ranks_within_count_each_group_apart_and_keep_absent_agents_absent():
    rng = np.random.default_rng(6)
    ranks = rng.integers(1, 6, (4, 9)).astype(np.float64)  # ties, within a group and across the groups
    ranks[1, [0, 5]] = np.nan  # absent from a round: better than no one, and stays absent
    mask = np.array([True, False, True, True, False, False, True, False, True])
    within = resample.ranks_within(ranks, mask)
    for r, row in enumerate(ranks):
        expected = brute_within(row, mask, lambda j, i, row=row: row[j] < row[i]).astype(np.float64)
        expected[np.isnan(row)] = np.nan
        np.testing.assert_array_equal(within[r], expected)
    one_row = resample.ranks_within(ranks[0].astype(np.int64), mask)  # one row keeps its shape and type
    assert one_row.dtype == np.int64 and one_row.tolist() == within[0].tolist()


def test_upper_bounds_and_score_intervals_within_count_each_group_apart():
    rng = np.random.default_rng(8)
    scores = rng.normal(np.linspace(0, 3, 12), 0.4, (200, 12))  # rounds x agents, some intervals apart, some not
    mask = rng.random(12) < 0.6
    mask[[0, 11]] = True, False
    rank = competition_ranks(scores.mean(axis=0))
    columns = resample.score_interval_columns(scores, ranks_by_round(scores), rank, 0.05, mask)
    low, high = columns["ci_low"], columns["ci_high"]
    expected = brute_within(low, mask, lambda j, i: low[j] > high[i] + 0.05)
    assert columns["rank_ci"].tolist() == expected.tolist()
    assert resample.upper_bounds_within(low, high, mask).tolist() == brute_within(low, mask, lambda j, i: low[j] > high[i]).tolist()
    for name, column in interval_columns(scores, ranks_by_round(scores), rank, mask).items():  # counted among the established too
        assert columns[name].tolist() == column.tolist(), name
    assert columns.keys() - {"rank_ci"} == {"ci_low", "ci_high", "rank_low", "rank_high", "tier", "rounds_measured"}
    everyone = resample.score_interval_columns(scores, ranks_by_round(scores), rank, 0.05)
    assert everyone["rank_ci"].tolist() == (1 + (low[None, :] > high[:, None] + 0.05).sum(axis=1)).tolist()


def test_upper_bounds_within_apply_the_tolerance_in_both_groups():
    # established 0..2, others 3..5; agent 1's lower bound is 0.02 above agent 0's upper one, agent 4's 0.03 above agent 3's
    low, high = np.array([10, 11.02, 20, 0, 1.03, 3]), np.array([11, 12, 21, 1, 2, 4])
    mask = np.array([True, True, True, False, False, False])
    within = resample.upper_bounds_within(low, high, mask, 0.05)
    assert within.tolist() == [2, 2, 1, 5, 5, 4] and within.dtype == np.int64
    assert resample.upper_bounds_within(low, high, mask).tolist() == [3, 2, 1, 6, 5, 4]


def test_interval_columns_rank_and_tier_the_established_apart_and_widen_an_agent_no_round_measured():
    rng = np.random.default_rng(2)  # a seed whose rounds tell the percentiles apart (checked below)
    scores = rng.normal(np.linspace(3, 0, 12), 1.5, (21, 12))  # agent 0 best ... agent 11 worst; 2.5% falls between rounds
    scores[:, 11] = np.nan  # measured by no round
    ranks = ranks_by_round(np.where(np.isnan(scores), -np.inf, scores))
    ranks[:, 11] = np.nan
    rank = np.arange(1.0, 13.0)
    mask = np.ones(12, dtype=bool)
    mask[[1, 5, 10, 11]] = False
    columns = interval_columns(scores, ranks, rank, mask)
    counted = resample.ranks_within(ranks, mask)[:, :11]
    assert columns["rank_low"][:11].tolist() == np.percentile(counted, 2.5, axis=0, method="lower").tolist()
    assert columns["rank_high"][:11].tolist() == np.percentile(counted, 97.5, axis=0, method="higher").tolist()
    # the data tell the lower and higher percentiles from the interpolated one cut to an integer
    assert not np.array_equal(columns["rank_high"][:11], np.percentile(counted, 97.5, axis=0).astype(int))
    assert not np.array_equal(columns["rank_low"][:11], np.percentile(counted, 2.5, axis=0).astype(int))
    assert (columns["rank_low"][11], columns["rank_high"][11]) == (1, 12)  # the widest: no round measured it
    assert columns["rounds_measured"].tolist() == [21] * 11 + [0]
    assert np.isnan(columns["ci_low"][11]) and np.isfinite(columns["ci_low"][:11]).all()
    assert (columns["tier"][~mask] == 0).all() and (columns["tier"][mask] >= 1).all()
    assert columns["tier"][mask].tolist() == resample.tiers(resample.ranks_within(rank, mask)[mask], columns["rank_low"][mask],
                                                           columns["rank_high"][mask]).tolist()
    assert columns["rank_high"][mask].max() <= mask.sum() < columns["rank_low"][[1, 5, 10]].min()  # the measured others after them


def test_nan_percentiles_interpolate_halfway_as_numpy_does():
    """With 21 numbers the 2.5th and 97.5th percentiles fall halfway between two (index 0.5 and 19.5), where
    numpy interpolates from the upper neighbour (b - (b - a) / 2), not the lower: the same bits need the same side."""
    values = np.random.default_rng(7).normal(1000.0, 300.0, size=(21, 2_000))
    values[:, 1_000:] = np.nan
    values[:21, 1_000:] = np.random.default_rng(8).normal(size=(21, 1_000)) * 1e-3  # the same count, other scales
    expected = np.percentile(values, [2.5, 97.5], axis=0)
    assert nan_percentiles(values, [2.5, 97.5]).tobytes() == expected.tobytes()
    ordered = np.sort(values, axis=0)
    from_below = ordered[0] + (ordered[1] - ordered[0]) * 0.5
    assert not np.array_equal(expected[0], from_below)  # the interpolation's side shows in the bits
