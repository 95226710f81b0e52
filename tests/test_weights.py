"""The weight grid: exact integer sums within the documented bound, refused beyond it."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.store import Store
from pipeline.weights import MAX_TOTAL, MAX_WEIGHT, UNIT, WeightOverflow, add_units, quantize, sum_units, to_units


def test_sums_are_exact_where_float64_bincount_is_not():
    weights = quantize(np.array([6e8, 0.3, 0.3]))
    units = to_units(weights)
    keys = np.zeros(3, np.int64)
    exact = sum(int(u) for u in units)
    assert sum_units(keys, units, 1)[0] == exact
    assert int(np.bincount(keys, weights=units.astype(np.float64))[0]) != exact  # what a float64 bincount gives
    # One file or two: the same integer.
    assert add_units(sum_units(keys[:1], units[:1], 1), sum_units(keys[1:], units[1:], 1))[0] == exact


def test_totals_past_the_bound_are_refused_not_wrapped():
    units = to_units(np.full(3, MAX_WEIGHT))  # 2^62 units each: two sum to 2^63, one more than int64 holds
    assert 3 * MAX_WEIGHT > MAX_TOTAL
    with pytest.raises(WeightOverflow, match="exceeds"):
        sum_units(np.zeros(3, np.int64), units, 1)
    one = sum_units(np.zeros(1, np.int64), units[:1], 1)
    assert one[0] == 2**62
    with pytest.raises(WeightOverflow):
        add_units(one, one)
    assert sum_units(np.zeros(2, np.int64), None, 1)[0] == 2 * UNIT
    # The bound is exact: 511 records of weight 2^30 still sum (just under 2^63 units), 512 do not.
    medium = to_units(np.full(512, 2.0**30))
    assert sum_units(np.zeros(511, np.int64), medium[:511], 1)[0] == 511 * 2**54
    with pytest.raises(WeightOverflow):
        sum_units(np.zeros(512, np.int64), medium, 1)


def test_weights_scaled_by_1e11_sum_exactly():
    rng = np.random.default_rng(3)
    units = to_units(quantize(1e11 * rng.random(20)))  # units near 2^60; totals within 2^39 weight per key
    keys = rng.integers(0, 5, 20)
    exact = [sum(int(u) for u, k in zip(units, keys) if k == key) for key in range(5)]
    assert sum_units(keys, units, 5).tolist() == exact


def test_ingest_quarantines_weights_beyond_the_bound(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text("model_a,model_b,winner,weight\na,b,tie,1e12\na,b,tie,1e308\na,b,tie,2e11\na,b,tie,0.5\n")
    [report] = Store(tmp_path / "store").ingest([path], "battles")
    assert (report.rows_accepted, report.rows_quarantined) == (2, 2)


@pytest.mark.parametrize("dense", [True, False])
def test_the_reduction_counts_big_weights_exactly_and_refuses_a_wrapping_total(tmp_path, dense):
    from pipeline.stats.reduce import reduce_store

    # 6e8 + 0.3 + 0.3 on one pair within one file: a float64 bincount of the units loses the 0.6.
    path = tmp_path / "big.csv"
    path.write_text("model_a,model_b,winner,weight\na,b,model_a,6e8\na,b,model_a,0.3\na,b,model_a,0.3\nb,a,tie,1\n")
    store = Store(tmp_path / "store")
    store.ingest([path], "battles")
    wins = reduce_store(store, "battles", {"pairwise"}, dense=dense).pairwise.wins
    exact = sum(int(u) for u in to_units(quantize(np.array([6e8, 0.3, 0.3])))) / UNIT
    assert (wins.toarray() if hasattr(wins, "toarray") else wins)[0, 1] == exact
    # Two files of records at the bound on the same pair: the merged total passes 2^63 units. The
    # battles have ids: without them, the two identical records would be one battle stored once.
    for name in ("x", "y"):
        (tmp_path / f"{name}.csv").write_text(f"battle_id,model_a,model_b,winner,weight\n{name}1,a,b,model_a,{MAX_WEIGHT:.0f}\n"
                                              f"{name}2,{name},a,tie,1\n")
    reports = store.ingest([tmp_path / "x.csv", tmp_path / "y.csv"], "battles")
    assert [r.rows_accepted for r in reports] == [2, 2]
    with pytest.raises(WeightOverflow):
        reduce_store(store, "battles", {"pairwise"}, dense=dense)
