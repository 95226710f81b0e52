"""Duplicate ids by 128-bit hashes in sorted runs: a batch sorted once gives the same answers and
the same runs as one searched and stored unsorted."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from pipeline.logs import identity
from pipeline.logs.identity import NOT_FOUND, Run, SeenIds, drop_seen, merge, sort_order, where
from pipeline.logs.triage import ReadResult, empty_quarantine


def test_sort_order_is_none_for_sorted_values_and_stable_otherwise():
    assert sort_order(np.array([1, 1, 2, 5], np.uint64)) is None
    assert sort_order(np.array([], np.uint64)) is None
    values = np.array([3, 1, 3, 2, 1], np.uint64)
    assert sort_order(values).tolist() == np.argsort(values, kind="stable").tolist() == [1, 4, 3, 0, 2]


def test_a_run_built_and_searched_from_sorted_needles_equals_the_unsorted_one():
    rng = np.random.default_rng(3)
    high = rng.integers(0, 50, 2_000).astype(np.uint64)  # many equal high hashes: the step past the first
    low = rng.integers(0, 2**63, 2_000).astype(np.uint64)
    at = where(2, np.arange(2_000))
    order = np.argsort(high, kind="stable")
    unsorted, presorted = Run.of(high, low, at), Run.of(high[order], low[order], at[order])
    assert np.array_equal(unsorted.data, presorted.data)
    needles_high = np.r_[high[::7], rng.integers(0, 50, 300).astype(np.uint64)]
    needles_low = np.r_[low[::7], rng.integers(0, 2**63, 300).astype(np.uint64)]
    found = unsorted.find(needles_high, needles_low)
    by_sort = np.argsort(needles_high, kind="stable")
    assert np.array_equal(unsorted.find(needles_high[by_sort], needles_low[by_sort]), found[by_sort])
    assert np.array_equal(found[: len(high[::7])], at[::7])  # every stored id found where it was
    assert (found[len(high[::7]):] == NOT_FOUND).all()


def test_drop_seen_quarantines_ids_of_earlier_batches_naming_their_line():
    seen = SeenIds()

    def batch(ids: list[str], first_line: int) -> ReadResult:
        table = pa.table({"battle_id": ids})
        return ReadResult("battles", "f.csv", table, empty_quarantine(), len(ids),
                          np.arange(first_line, first_line + len(ids), dtype=np.int64))

    first = drop_seen(batch(["b3", "b1", "b2"], 2), ("battle_id",), seen, 0, str, False)
    second = drop_seen(batch(["b4", "b1", "b5", "b3"], 5), ("battle_id",), seen, 0, str, False)
    assert first.rows_accepted == 3
    assert second.table.column("battle_id").to_pylist() == ["b4", "b5"] and second.lines.tolist() == [5, 7]
    assert [(q["line"], q["reason"]) for q in second.quarantined.to_pylist()] == [
        (6, "duplicate battle_id (first at line 3)"), (8, "duplicate battle_id (first at line 2)")]
    third = drop_seen(batch(["b6"], 9), ("battle_id",), seen, 0, str, False)
    assert third.rows_accepted == 1 and sum(len(run) for run in seen.runs) == 6


def test_merged_runs_are_the_stable_sort_of_their_concatenation(tmp_path):
    rng = np.random.default_rng(4)
    runs = [Run.of(rng.integers(0, 40, n).astype(np.uint64), rng.integers(0, 2**63, n).astype(np.uint64), where(i, np.arange(n)))
            for i, n in enumerate((300, 1, 0, 250))]
    for older, newer in [(runs[0], runs[3]), (runs[3], runs[0]), (runs[1], runs[0]), (runs[2], runs[3]), (runs[0], runs[2])]:
        data = np.concatenate([older.data, newer.data], axis=1)
        expected = data[:, np.argsort(data[0], kind="stable")]
        assert np.array_equal(merge(older, newer).data, expected)
        mapped = np.lib.format.open_memmap(tmp_path / "run.npy", mode="w+", dtype=np.uint64, shape=data.shape)
        merge(older, newer, mapped)  # straight into a file, as a spilled run is
        assert np.array_equal(np.load(tmp_path / "run.npy", mmap_mode="r"), expected)


def test_the_filter_never_rules_out_an_id_it_holds_and_passes_about_one_percent_of_new_ones():
    rng = np.random.default_rng(5)
    held, new = rng.integers(0, 2**64, 200_000, np.uint64), rng.integers(0, 2**64, 200_000, np.uint64)
    id_filter = identity.IdFilter(len(held))
    id_filter.add(Run.of(held, held, where(0, np.arange(len(held)))))
    assert id_filter.may_hold(held).all()
    passed = id_filter.may_hold(new).mean()
    assert 0.002 < passed < 0.03, passed  # 10 bits per id: a split block filter's ~1%, never 0 (it is not exact)
    assert id_filter.nbytes * 8 / id_filter.capacity >= identity.FILTER_BITS_PER_ID


def test_find_with_the_filter_equals_the_search_of_the_runs_as_ids_arrive_and_the_filter_grows(monkeypatch):
    monkeypatch.setattr(identity, "MIN_FILTER_IDS", 64)  # the filter fills and is rebuilt several times
    rng = np.random.default_rng(6)
    seen, capacities = SeenIds(), set()
    pool_high = rng.integers(0, 2**64, 3_000, np.uint64)
    pool_high[1::50] = pool_high[::50][: len(pool_high[1::50])]  # equal high hashes, different low ones
    pool_low = rng.integers(0, 2**64, 3_000, np.uint64)
    stored: dict[tuple[int, int], int] = {}
    for batch in range(12):
        take = rng.choice(len(pool_high), 400, replace=False)
        high, low = pool_high[take], pool_low[take]
        found = seen.find(high, low)
        assert np.array_equal(found, seen.search(high, low))
        expected = [stored.get((h, lo), int(NOT_FOUND)) for h, lo in zip(high.tolist(), low.tolist())]
        assert found.tolist() == expected
        new = found == NOT_FOUND
        at = where(batch, np.flatnonzero(new))
        seen.add(high[new], low[new], at)
        stored.update(zip(zip(high[new].tolist(), low[new].tolist()), at.tolist()))
        if seen.id_filter is not None:  # built on the first lookup with runs to search
            capacities.add(seen.id_filter.capacity)
            assert seen.id_filter.ids == len(stored) <= seen.id_filter.capacity
    assert len(capacities) > 2  # rebuilt as it grew
