"""Partition files written batch by batch in bounded memory: one file per partition, rows kept."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.store import partitions
from pipeline.store.partitions import MICROS_PER_DAY, PartitionWriter


def test_many_days_in_small_buffers_give_one_file_per_day_and_every_row(tmp_path, monkeypatch):
    monkeypatch.setattr(partitions, "BUFFER_ROWS", 500)  # flushes all the time, as 2e6 rows are to 1e8
    rng = np.random.default_rng(0)
    n, days = 40_000, min(400, partitions.MAX_OPEN - 1)  # more days than the 256 files the writer once kept open
    micros = 1_700_000_000_000_000 + rng.integers(0, days * MICROS_PER_DAY, n)
    table = pa.table({"row": np.arange(n), "timestamp": pa.array(micros).cast(pa.timestamp("us", "UTC"))})
    table = pa.concat_tables([table, pa.table({"row": [n], "timestamp": pa.array([None], pa.timestamp("us", "UTC"))})])
    writer = PartitionWriter(tmp_path, "battles", "abc", dated=True)
    for start in range(0, table.num_rows, 700):
        writer.add(table.slice(start, 700))
    written = writer.finish()
    names = [w.path for w in written]
    assert len(names) == len(set(names)) == len(np.unique(micros // MICROS_PER_DAY)) + 1  # no partition split in two
    assert names[0] == "battles/source=abc/part.parquet"  # the undated rows, by source
    rows = []
    for w in written:
        part = pq.read_table(w.temporary)
        assert part.num_rows == w.rows
        rows.extend(part.column("row").to_pylist())
        day = w.path.split("/")[1]
        if day.startswith("date="):
            days_of = np.unique(part.column("timestamp").cast(pa.int64()).to_numpy() // MICROS_PER_DAY)
            assert [str(np.datetime64(int(d), "D")) for d in days_of] == [day[5:]]
            assert part.column("row").to_pylist() == sorted(part.column("row").to_pylist())  # file order kept
    assert sorted(rows) == list(range(n + 1))


def test_past_max_open_a_partition_continues_in_a_second_file_and_keeps_every_row(tmp_path, monkeypatch):
    monkeypatch.setattr(partitions, "BUFFER_ROWS", 200)
    monkeypatch.setattr(partitions, "MAX_OPEN", 8)  # a flush of 20 days closes files it opened itself
    days = 20
    micros = 19_000 * MICROS_PER_DAY + np.arange(2_000) * 7 % days * MICROS_PER_DAY
    table = pa.table({"row": np.arange(2_000), "timestamp": pa.array(micros).cast(pa.timestamp("us", "UTC"))})
    writer = PartitionWriter(tmp_path, "battles", "abc", dated=True)
    for start in range(0, table.num_rows, 250):
        writer.add(table.slice(start, 250))
    written = writer.finish()
    assert len({w.path.split("/")[1] for w in written}) == days and any(w.path.endswith("-1.parquet") for w in written)
    rows = [pq.read_table(w.temporary).column("row").to_pylist() for w in written]
    assert [len(r) for r in rows] == [w.rows for w in written]
    assert sorted(sum(rows, [])) == list(range(2_000))


def test_discard_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.setattr(partitions, "ROW_GROUP_ROWS", 1)  # written at once
    writer = PartitionWriter(tmp_path, "battles", "abc", dated=False)
    writer.add(pa.table({"row": [1, 2]}))
    assert [p for p in tmp_path.rglob("*") if p.is_file()]
    writer.discard()
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


def test_a_write_failing_on_a_flush_thread_is_raised_and_discard_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.setattr(partitions, "BUFFER_ROWS", 100)
    write = partitions.write_row_group

    def full_on_the_third_day(writer, buffered):
        days = pa.concat_tables(buffered).column("timestamp").cast(pa.int64()).to_numpy() // MICROS_PER_DAY
        if days[0] == 19_002:
            raise OSError(28, "No space left on device")
        write(writer, buffered)

    monkeypatch.setattr(partitions, "write_row_group", full_on_the_third_day)
    micros = 19_000 * MICROS_PER_DAY + np.arange(300) % 6 * MICROS_PER_DAY  # six days in each batch
    table = pa.table({"row": np.arange(300), "timestamp": pa.array(micros).cast(pa.timestamp("us", "UTC"))})
    writer = PartitionWriter(tmp_path, "battles", "abc", dated=True)
    with pytest.raises(OSError, match="No space left"):
        for start in range(0, 300, 150):
            writer.add(table.slice(start, 150))
        writer.finish()
    writer.discard()
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


def test_key_order_is_the_stable_order_of_the_keys():
    rng = np.random.default_rng(1)
    near = rng.integers(19_000, 19_400, 5_000)
    near[::17] = partitions.UNDATED
    far = np.r_[near[:100], 19_000 + 70_000, -5]  # more than 65,536 days apart: the general sort
    for keys in (near, far, np.full(3, partitions.UNDATED)):
        assert np.array_equal(partitions.key_order(keys), np.argsort(keys, kind="stable"))


def test_files_are_the_same_bytes_each_time_on_any_threads_and_ids_have_no_dictionary(tmp_path, monkeypatch):
    monkeypatch.setattr(partitions, "BUFFER_ROWS", 3_000)
    rng = np.random.default_rng(2)
    n = 20_000
    micros = 1_700_000_000_000_000 + rng.integers(0, 30 * MICROS_PER_DAY, n)
    table = pa.table({"battle_id": [f"b{i}" for i in range(n)], "model_a": rng.integers(0, 5, n).astype(np.int32),
                      "timestamp": pa.array(micros).cast(pa.timestamp("us", "UTC"))})
    contents = []
    for attempt, threads in ((1, 1), (2, partitions.FLUSH_THREADS)):  # a flush's files written one by one, or side by side
        monkeypatch.setattr(partitions, "FLUSH_THREADS", threads)
        writer = PartitionWriter(tmp_path / str(attempt), "battles", "abc", dated=True, distinct=("battle_id",))
        for start in range(0, n, 1_500):
            writer.add(table.slice(start, 1_500))
        contents.append({w.path: w.temporary.read_bytes() for w in writer.finish()})
    assert contents[0] == contents[1] and len(contents[0]) == len(np.unique(micros // MICROS_PER_DAY))
    some = next(iter((tmp_path / "1").rglob("*.parquet*")))
    columns = pq.ParquetFile(some).metadata.row_group(0)
    assert not columns.column(0).has_dictionary_page and columns.column(1).has_dictionary_page


def test_reordered_is_take_and_keeps_columns_of_nulls_as_they_are():
    rng = np.random.default_rng(3)
    n = 1_000
    table = pa.table({"id": [f"b{i}" for i in range(n)], "model": rng.integers(0, 9, n).astype(np.int32),
                      "judge": pa.nulls(n, pa.int32()), "some": pa.array([None] * (n - 1) + [1.5]),
                      "features": pa.nulls(n, pa.list_(pa.struct([("name", pa.string())])))})
    order = rng.permutation(n)
    got = partitions.reordered(table, order)
    assert got.equals(table.take(order)) and got.schema == table.schema
    kept = [got.column(name).chunk(0).buffers()[-1].address == table.column(name).chunk(0).buffers()[-1].address
            for name in table.column_names]
    assert kept == [False, False, True, False, True]  # only the columns of nulls not copied


def test_day_keys_are_utc_day_numbers_and_null_is_undated():
    micros = [0, None, -1, MICROS_PER_DAY, 19_000 * MICROS_PER_DAY + 5]
    keys = partitions.day_keys(pa.array(micros, pa.timestamp("us", "UTC")))
    assert keys.dtype == np.int64 and keys.tolist() == [0, partitions.UNDATED, -1, 1, 19_000]


@pytest.mark.parametrize("keys", [
    [3, partitions.UNDATED, -2, 0, -2, partitions.UNDATED, 1],  # days before 1970 beside undated rows
    [-10_000, 60_000, partitions.UNDATED, -5_000],  # 70,000 days apart: no 16-bit offsets (they would wrap)
    [65_534, 0, partitions.UNDATED, 65_534],  # the widest span of 16-bit offsets
    [65_535, 0, partitions.UNDATED, 65_535],  # one day wider
])
def test_key_order_sorts_days_before_1970_and_spans_at_the_16_bit_bound(keys):
    keys = np.array(keys, np.int64)
    assert partitions.key_order(keys).tolist() == np.argsort(keys, kind="stable").tolist()


def test_a_flush_writes_row_groups_of_at_most_row_group_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(partitions, "ROW_GROUP_ROWS", 10)
    writer = PartitionWriter(tmp_path, "battles", "abc", dated=False)
    writer.add(pa.table({"row": np.arange(25)}))
    [written] = writer.finish()
    metadata = pq.ParquetFile(written.temporary).metadata
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [10, 10, 5]


def test_a_partition_file_that_cannot_be_created_is_raised_and_discard_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(partitions, "ROW_GROUP_ROWS", 1)  # written at once

    def day(n):
        return pa.table({"row": [n], "timestamp": pa.array([n * MICROS_PER_DAY], pa.timestamp("us", "UTC"))})

    writer = PartitionWriter(tmp_path, "battles", "abc", dated=True)
    writer.add(day(0))  # one file written

    def full(temporary):
        raise OSError(28, "No space left on device", str(temporary))

    monkeypatch.setattr(writer, "_open_file", full)
    with pytest.raises(OSError, match="No space left"):
        writer.add(day(1))  # a second partition, whose file is named but never created
    writer.discard()
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


def test_quarantined_rows_stream_to_one_file_under_a_temporary_name(tmp_path):
    writer = partitions.QuarantineWriter(tmp_path, "battles", "abc", tag="-t")
    assert writer.path == "quarantine/battles/abc-t.parquet"
    assert writer.temporary.parent == tmp_path / "quarantine" / "battles" and writer.temporary.name.startswith(".abc-t.parquet.tmp-")
    writer.add(pa.table({"line": pa.array([], pa.int64())}))  # nothing quarantined yet: no file
    assert not writer.temporary.exists()
    writer.add(pa.table({"line": [3, 5]}))
    writer.add(pa.table({"line": [8]}))
    assert writer.finish() == partitions.Written("quarantine/battles/abc-t.parquet", writer.temporary, 3)
    assert pq.read_table(writer.temporary).column("line").to_pylist() == [3, 5, 8]
    assert pq.ParquetFile(writer.temporary).metadata.row_group(0).column(0).compression == "ZSTD"
    writer.discard()
    assert not writer.temporary.exists()
    untouched = partitions.QuarantineWriter(tmp_path, "battles", "def")
    assert untouched.path == "quarantine/battles/def.parquet"
    assert untouched.finish() is None  # no row, no file
    untouched.discard()  # nothing to close or remove


def test_quarantined_rows_of_a_second_file_of_the_kind_are_written_in_row_groups(tmp_path, monkeypatch):
    monkeypatch.setattr(partitions, "ROW_GROUP_ROWS", 2)
    for short in ("abc", "def"):  # the second finds the kind's folder made
        writer = partitions.QuarantineWriter(tmp_path, "battles", short)
        writer.add(pa.table({"line": [3, 5, 8]}))
        metadata = pq.ParquetFile(writer.finish().temporary).metadata
        assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [2, 1]


def test_rows_of_a_day_added_over_several_batches_go_to_that_days_one_file(tmp_path, monkeypatch):
    monkeypatch.setattr(partitions, "ROW_GROUP_ROWS", 3)  # a day is flushed once it has 3 rows buffered
    batches = [[0, 0], [0, 1, 2], [0, 0, 0], [2], [None, 1]]  # each row's day; None: no timestamp
    day_of = [day for batch in batches for day in batch]
    writer = PartitionWriter(tmp_path, "battles", "abc", dated=True)
    row = 0
    for batch in batches:
        micros = [None if day is None else day * MICROS_PER_DAY + 7 for day in batch]
        writer.add(pa.table({"row": np.arange(row, row + len(batch)), "timestamp": pa.array(micros, pa.timestamp("us", "UTC"))}))
        row += len(batch)
    written = writer.finish()
    # day 0 was flushed twice and is empty at the finish; the others are flushed by it
    assert [w.path for w in written] == ["battles/source=abc/part.parquet", "battles/date=1970-01-01/abc.parquet",
                                         "battles/date=1970-01-02/abc.parquet", "battles/date=1970-01-03/abc.parquet"]
    for w, day in zip(written, [None, 0, 1, 2]):
        rows = pq.read_table(w.temporary).column("row").to_pylist()
        assert rows == [i for i, d in enumerate(day_of) if d == day] and w.rows == len(rows), (w.path, rows)
        assert pq.ParquetFile(w.temporary).metadata.row_group(0).column(0).compression == "ZSTD"
