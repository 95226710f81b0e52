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
    units = to_units(np.full(600, MAX_WEIGHT))  # 600 * 2^30 weight > 2^39
    assert 600 * MAX_WEIGHT > MAX_TOTAL
    with pytest.raises(WeightOverflow, match="exceeds"):
        sum_units(np.zeros(600, np.int64), units, 1)
    half = sum_units(np.zeros(300, np.int64), units[:300], 1)  # 300 * 2^30 is within the bound
    assert half[0] == 300 * 2**54
    with pytest.raises(WeightOverflow):
        add_units(add_units(half, half), half)
    assert sum_units(np.zeros(2, np.int64), None, 1)[0] == 2 * UNIT
    # The bound is exact: 511 records of the largest weight still sum (just under 2^63 units), 512 do not.
    assert sum_units(np.zeros(511, np.int64), units[:511], 1)[0] == 511 * 2**54
    with pytest.raises(WeightOverflow):
        sum_units(np.zeros(512, np.int64), units[:512], 1)


def test_ingest_quarantines_weights_beyond_the_bound(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text("model_a,model_b,winner,weight\na,b,tie,1e12\na,b,tie,1e308\na,b,tie,1073741824\na,b,tie,0.5\n")
    [report] = Store(tmp_path / "store").ingest([path], "battles")
    assert (report.rows_accepted, report.rows_quarantined) == (2, 2)
