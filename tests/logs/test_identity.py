"""Duplicate ids by 128-bit hashes in sorted runs: a batch sorted once gives the same answers and
the same runs as one searched and stored unsorted."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from pipeline.logs import identity, read_batches
from pipeline.logs.identity import NOT_FOUND, Run, SeenIds, distinct_ids, drop_seen, line_of, merge, sort_order, where
from pipeline.logs.triage import ReadResult, empty_quarantine


def test_sort_order_is_none_for_sorted_values_and_stable_otherwise():
    assert sort_order(np.array([1, 1, 2, 5], np.uint64)) is None
    assert sort_order(np.array([], np.uint64)) is None
    values = np.array([3, 1, 3, 2, 1], np.uint64)
    assert sort_order(values).tolist() == np.argsort(values, kind="stable").tolist() == [1, 4, 3, 0, 2]


@pytest.fixture(params=["numpy", "compiled"])
def passes(request, monkeypatch) -> str:
    """The index's sorts, merges and searches in numpy (fewer than `SMALL_BATCH` ids, a file of a
    million rows) or compiled, with the filter (a store of more), as a big store runs them."""
    if request.param == "compiled":
        monkeypatch.setattr(identity, "SMALL_BATCH", 0)
    return request.param


def test_a_run_built_and_searched_from_sorted_needles_equals_the_unsorted_one(passes):
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


def test_drop_seen_quarantines_ids_of_earlier_batches_naming_their_line(passes):
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


def test_merged_runs_are_the_stable_sort_of_their_concatenation(tmp_path, passes):
    rng = np.random.default_rng(4)
    runs = [Run.of(rng.integers(0, 40, n).astype(np.uint64), rng.integers(0, 2**63, n).astype(np.uint64), where(i, np.arange(n)))
            for i, n in enumerate((300, 1, 0, 250))]
    for older, newer in [(runs[0], runs[3]), (runs[3], runs[0]), (runs[1], runs[0]), (runs[2], runs[3]), (runs[0], runs[2])]:
        data = np.concatenate([older.data, newer.data], axis=1)
        expected = data[:, np.argsort(data[0], kind="stable")]
        merged = merge(older, newer).data
        assert np.array_equal(merged, expected) and merged.flags.c_contiguous  # a run file's bytes are its C order
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


def test_find_with_the_filter_equals_the_search_of_the_runs_as_ids_arrive_and_the_filter_grows(monkeypatch, passes):
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
    assert len(capacities) > 2 if passes == "compiled" else not capacities  # rebuilt as it grew; none for few ids


def by_row_hashes(table: pa.Table, columns: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The oracle of `distinct_ids`: every row's id hashed, the distinct pairs of hashes found by a
    sort, each at its first row (the entries ordered by their hashes)."""
    high, low = identity.key_hashes(identity.key_text(table, columns))
    first, entry = np.unique(np.stack([high, low]), axis=1, return_index=True, return_inverse=True)[1:]
    return high[first], low[first], first, entry.ravel()


def assert_same_entries(table: pa.Table, columns: tuple[str, ...]) -> None:
    """`distinct_ids` gives the oracle's entries (in another order): the same hashes at the same
    first rows, and every row in the entry of its own hashes."""
    high, low, first, entry = distinct_ids(table, columns)
    want_high, want_low, want_first, want_entry = by_row_hashes(table, columns)
    order = np.lexsort((low, high))
    assert [a[order].tolist() for a in (high, low, first)] == [want_high.tolist(), want_low.tolist(), want_first.tolist()]
    position = np.empty(len(order), np.int64)
    position[order] = np.arange(len(order))
    assert position[entry].tolist() == want_entry.tolist()


def games_result(folder: Path, text: str, name: str = "games.csv") -> ReadResult:
    """The games of a CSV text as ingest reads them (ids in NFC, stripped, as a dictionary)."""
    path = folder / name
    path.write_text(text, encoding="utf-8")
    [result] = read_batches(path, "games")
    return result


LOOK_ALIKES = ("game_id,player,place\n" "g1,a,1\n" " g1 ,b,2\n" "G1,a,1\n" "G1,b,2\n" "g\u00e9,a,1\n" "ge\u0301,b,2\n"
               + "".join(f"filler{n},a,1\nfiller{n},b,2\n" for n in range(40)) + "g1,c,3\n" "ab,a,1\n" "ba,a,1\n" "ab,b,2\n"
               "ba,b,2\n")


@pytest.mark.parametrize("table", [
    pytest.param(lambda folder: games_result(folder, LOOK_ALIKES).table, id="triage-dictionary"),
    pytest.param(lambda folder: pa.table({"game_id": ["g2", "g1", "g2", *(f"f{n}" for n in range(50)), "g1", "g2"]}), id="plain"),
    pytest.param(lambda folder: pa.table({"game_id": pa.DictionaryArray.from_arrays(pa.array([0, 2, 1, 4, 0, 2], pa.int8()),
                                                                             ["a", "b", "a", "unused", "c"])}),
                 id="a-dictionary-repeating-a-text"),
    pytest.param(lambda folder: pa.table({"game_id": pa.chunked_array([pa.array(["x", "y"]).dictionary_encode(),
                                                                pa.array(["y", "z", "x"]).dictionary_encode()])}),
                 id="chunks-of-other-dictionaries"),
    pytest.param(lambda folder: pa.table({"game_id": ["a", None, "b", None, "a"]}), id="missing-ids"),
    pytest.param(lambda folder: pa.table({"game_id": pa.array(["a", None, "a"]).dictionary_encode()}),
                 id="missing-dictionary-ids"),
    pytest.param(lambda folder: pa.table({"game_id": pa.array([7, 3, 7, 3], pa.int64()).dictionary_encode()}), id="numbers"),
    pytest.param(lambda folder: pa.table({"a": ["x", "x", "y", "x"], "b": ["1", "2", "1", "1"]}), id="two-columns"),
    pytest.param(lambda folder: pa.table({"game_id": pa.array([], pa.string()).dictionary_encode()}), id="empty"),
    pytest.param(lambda folder: pa.table({"game_id": pa.array(["solo"] * 3).dictionary_encode()}), id="one-game"),
])
def test_distinct_ids_are_the_distinct_hashes_of_the_rows_at_their_first_rows(tmp_path, table):
    table = table(tmp_path)
    assert_same_entries(table, ("a", "b") if "a" in table.column_names else ("game_id",))


def test_ids_sharing_a_high_hash_are_grouped_by_both_hashes(tmp_path, monkeypatch):
    """A high hash shared by two texts (a 2^-64 chance per pair, forced here) leaves them apart,
    as their low hashes differ; a text repeated in a dictionary is one id."""
    hashes = identity.key_hashes
    monkeypatch.setattr(identity, "key_hashes", lambda keys: (hashes(keys)[0] % np.uint64(3), hashes(keys)[1]))
    table = games_result(tmp_path, LOOK_ALIKES).table
    assert_same_entries(table, ("game_id",))
    assert len(distinct_ids(table, ("game_id",))[0]) == 45  # g1, G1, g\u00e9, 40 fillers, ab, ba
    repeated = pa.table({"game_id": pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 1]), ["a", "b", "a"])})
    assert_same_entries(repeated, ("game_id",))
    entry = distinct_ids(repeated, ("game_id",))[3]
    assert entry[0] == entry[2] != entry[1] == entry[3]


def test_games_are_duplicates_whole_naming_the_file_and_line_of_their_first_row(tmp_path):
    """Look-alike ids as triage cleans them (padding stripped, NFD read as NFC, case kept), a game
    whose rows lie far apart, a game of an earlier file: the runs hold each game once, at its first
    line, whatever the order of its rows."""
    seen, name_of = SeenIds(), ["first.csv", "second.csv"].__getitem__
    first = drop_seen(games_result(tmp_path, LOOK_ALIKES, "first.csv"), ("game_id",), seen, 0, name_of, True)
    assert first.rows_accepted == 91 and first.quarantined.num_rows == 0  # (the reader counts the header: g1 at line 2)
    stored = {line_of(w) for w in seen.runs[0].data[2].tolist()} if len(seen.runs) == 1 else None
    assert stored == {2, 4, 6, *range(8, 88, 2), 89, 90}
    second_text = ("game_id,player,place\n" "new,a,1\n" "G1,a,1\n" "g1\t,c,1\n" "G1,c,2\n" "new,b,2\n" "g1 ,d,2\n"
                   "GE\u0301,a,1\n" "GE\u0301,b,2\n")
    second = drop_seen(games_result(tmp_path, second_text, "second.csv"), ("game_id",), seen, 1, name_of, True)
    assert second.table.column("game_id").to_pylist() == ["new", "new", "G\u00c9", "G\u00c9"]
    assert second.lines.tolist() == [2, 6, 8, 9]
    assert [(q["line"], q["field"], q["reason"]) for q in second.quarantined.to_pylist()] == [
        (3, "game_id", "duplicate game_id (first in first.csv, line 4)"),
        (4, "game_id", "duplicate game_id (first in first.csv, line 2)"),
        (5, "game_id", "duplicate game_id (first in first.csv, line 4)"),
        (7, "game_id", "duplicate game_id (first in first.csv, line 2)")]
    assert sum(len(run) for run in seen.runs) == 45 + 2


def test_the_runs_hold_the_distinct_games_as_the_rows_hashes_give_them(tmp_path):
    """The same run, byte for byte, as the one made of the distinct pairs of every row's hashes,
    on 20,000 rows drawn among 3,000 game ids (a game's rows scattered over the file)."""
    rng = np.random.default_rng(7)
    ids = rng.integers(0, 3_000, 20_000)
    rows = "".join(f"game-{i},p{n},{1 + n % 5}\n" for n, i in enumerate(ids))
    result = games_result(tmp_path, "game_id,player,place\n" + rows)
    seen = SeenIds()
    drop_seen(result, ("game_id",), seen, 3, str, True)
    high, low, first, _ = by_row_hashes(result.table, ("game_id",))
    expected = Run.of(high, low, where(3, result.lines[first]))
    assert len(seen.runs) == 1 and np.array_equal(seen.runs[0].data, expected.data)


def test_an_empty_file_of_games_changes_nothing(tmp_path):
    seen = SeenIds()
    empty = games_result(tmp_path, "game_id,player,place\n")
    assert drop_seen(empty, ("game_id",), seen, 0, str, True) is empty and not seen.runs


def test_ids_of_content_count_identical_records_across_the_batches_of_a_file():
    import pyarrow as pa

    from pipeline.logs.identity import ContentIds
    from pipeline.logs.triage import ReadResult, empty_quarantine

    def batch(winners: list[str]) -> ReadResult:
        table = pa.table({"battle_id": ["x"] * len(winners), "model_a": ["a"] * len(winners), "winner": winners})
        return ReadResult("battles", "f.csv", table, empty_quarantine(), len(winners), keyed=False)

    contents = ContentIds()
    first = contents.assign(batch(["model_a", "tie", "model_a"]), ("battle_id",)).table.column("battle_id").to_pylist()
    second = contents.assign(batch(["tie", "model_a"]), ("battle_id",)).table.column("battle_id").to_pylist()
    a, tie = first[0], first[1]
    assert a.startswith("content:") and first == [a, tie, a + "#2"] and second == [tie + "#2", a + "#3"]


@pytest.mark.parametrize("n", [identity.SMALL_BATCH - 1, identity.SMALL_BATCH])
def test_id_order_is_the_stable_argsort_on_both_sides_of_the_small_batch(n):
    # numpy sorts a small batch (no numba import for a small file), numba's pass a larger one:
    # either way the order is the stable sort's, ties (repeated ids) in row order.
    keys = np.random.default_rng(n).integers(0, n // 3, n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    assert np.array_equal(identity.id_order(keys), np.argsort(keys, kind="stable"))


HOSTILE_TEXTS = ["", "plain", 'quo"te', "back\\slash", "\x00nul", "\x1f\x7f\x1b[31m", "line\nbreak\r\t", "é\u0301",
                 "\u2028\u2029", "🦀 emoji", "עברית", "\ud7ff\ue000\uffff", "{\"json\":[1]}", None]
HOSTILE_FLOATS = [0.0, -0.0, 1.0, 0.1, 1e308, 5e-324, float("nan"), float("inf"), -float("inf"), None]
HOSTILE_INTS = [0, -1, 2**63 - 1, -(2**63), 2**53 + 1, None]


def hostile_table(rng: np.random.Generator, rows: int) -> pa.Table:
    """Records of every column type a kind stores (text, dictionary, float, integer, timestamp,
    a list of structs), drawn from hostile values; every other record repeats another."""
    def pick(values: list, n: int) -> list:
        return [values[i] for i in rng.integers(0, len(values), n)]

    texts = pick(HOSTILE_TEXTS, rows)
    features = [None if rng.random() < 0.3 else [{"name": t, "a": x, "b": 1.5}
                for t, x in zip(pick(HOSTILE_TEXTS[:-1], 2), pick(HOSTILE_FLOATS, 2))] for _ in range(rows)]
    table = pa.table({
        "battle_id": pa.array(["placeholder"] * rows),
        "model_a": pa.array(pick(HOSTILE_TEXTS, rows)).dictionary_encode(),
        "prompt": pa.array(texts),
        "weight": pa.array(pick(HOSTILE_FLOATS, rows), pa.float64()),
        "count": pa.array(pick(HOSTILE_INTS, rows), pa.int64()),
        "timestamp": pa.array(pick([0, -1, 1_700_000_000_123_456, None], rows), pa.timestamp("us", tz="UTC")),
        "features": pa.array(features, pa.list_(pa.struct([("name", pa.string()), ("a", pa.float64()), ("b", pa.float64())]))),
    })
    return table.take(np.where(np.arange(rows) % 2, rng.integers(0, rows, rows), np.arange(rows)))


def per_row_content_ids(tables: list[pa.Table]) -> list[str]:
    """The ids of content as the first `ContentIds.assign` made them, one Python string, hash and id
    per row: what every store written since holds."""
    seen: Counter[bytes] = Counter()
    ids = []
    for table in tables:
        fields = [name for name in table.schema.names if name != "battle_id"]
        for text in pl.from_arrow(table.select(fields)).select(pl.struct(pl.all()).struct.json_encode()).to_series().to_list():
            digest = hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
            seen[digest[:8]] += 1
            ids.append(f"content:{digest.hex()}" + (f"#{seen[digest[:8]]}" if seen[digest[:8]] > 1 else ""))
    return ids


@pytest.mark.parametrize("seed", range(3))
def test_ids_of_content_are_the_per_row_paths_on_hostile_records(seed):
    # Batches of a file as a reader hands them on: several chunks, a slice not at its buffer's start.
    rng = np.random.default_rng(seed)
    whole = hostile_table(rng, 600)
    batches = [pa.concat_tables([whole.slice(0, 150), whole.slice(150, 100)]), whole.slice(250, 349), whole.slice(599)]
    contents = identity.ContentIds()
    ids = []
    for table in batches:
        result = ReadResult("battles", "f.csv", table, empty_quarantine(), table.num_rows, keyed=False)
        assigned = contents.assign(result, ("battle_id",)).table
        assert assigned.schema == table.schema
        ids += assigned.column("battle_id").to_pylist()
    assert ids == per_row_content_ids(batches)
    assert any("#" in i for i in ids) and len(set(ids)) == len(ids)  # repeats counted, and told apart


def test_content_digests_hash_each_text_of_a_sliced_chunked_series():
    texts = [t for t in HOSTILE_TEXTS if t is not None] * 3
    series = pl.concat([pl.from_arrow(pa.array(texts).slice(5)), pl.Series(["tail"])], rechunk=False)
    expected = b"".join(hashlib.blake2b(t.encode("utf-8"), digest_size=16).digest() for t in texts[5:] + ["tail"])
    assert identity.content_digests(series.to_arrow()) == expected


def test_distinct_texts_are_exact_even_when_distinct_texts_share_a_hash():
    texts = pl.Series(["a", "b", "a", "c", "b", "a"])
    first, codes = identity.distinct_texts(texts, np.array([7, 8, 7, 9, 8, 7], np.uint64))
    assert texts.gather(first).to_list() == ["a", "b", "c"] and codes.tolist() == [0, 1, 0, 2, 1, 0]
    first, codes = identity.distinct_texts(texts, np.array([7, 7, 7, 9, 7, 7], np.uint64))  # "a" and "b" collide
    assert (texts.gather(first[codes]) == texts).all()


def test_ids_of_content_count_a_record_repeated_over_many_batches_as_the_per_row_path():
    # The counts of earlier batches are updated batch after batch (a record in every batch), and the
    # keys first seen in a batch are merged into them in order.
    rng = np.random.default_rng(7)
    whole = hostile_table(rng, 200)
    batches = [pa.concat_tables([whole.slice(start, 37), whole.slice(0, 5)]) for start in range(0, 200, 37)]
    contents = identity.ContentIds()
    ids = [i for table in batches for i in contents.assign(
        ReadResult("battles", "f.csv", table, empty_quarantine(), table.num_rows, keyed=False), ("battle_id",)).table.column("battle_id").to_pylist()]
    assert ids == per_row_content_ids(batches)
    assert max(int(i.partition("#")[2] or 1) for i in ids) > len(batches)  # a record in every batch, and more
