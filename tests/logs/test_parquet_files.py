"""Parquet text stored as small dictionaries: read as dictionaries, checked and cleaned once per
distinct value, with the same accepted rows, quarantine and lines as the same values stored plain."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

from pipeline.logs import read_log
from pipeline.logs import parquet_files
from pipeline.logs.parquet_files import OUT_OF_RANGE, label_columns, read_batches, usable
from pipeline.logs.records import INVALID, LINE, NESTED, UnreadableFile

# Names that need stripping, a whitespace-only name, a model against itself once stripped, upper-case
# and padded winners, an unknown and a null winner, one name in two Unicode spellings (NFC: one
# name), a name holding a zero-width space, and names used only by rejected rows.
MODEL_A = ["  m1 ", "m1", "   ", "m2", "caf\u00e9", "m3", "only-rejected", "m1", "m\u200b4", "m2"] * 30
MODEL_B = ["m2", " m1", "m3", "m3", "cafe\u0301", "m1", "m2", "m3", "m1", "m1"] * 30
WINNER = ["MODEL_A", "model_b", "tie", " Tie (BothBad) ", "tie", "Model_B", "left", None, "model_b", "tie"] * 30


def table() -> pa.Table:
    rows = len(MODEL_A)
    return pa.table({"battle_id": [f"b{i}" for i in range(rows)], "model_a": MODEL_A, "model_b": MODEL_B, "winner": WINNER,
                     "timestamp": [f"2024-01-{1 + i % 28:02d}T10:00:00Z" for i in range(rows)]})


def read(path: Path) -> tuple[list[dict], list[tuple]]:
    result = read_log(path, "battles")
    quarantined = sorted((q["line"], q["field"], q["reason"]) for q in result.quarantined.to_pylist())
    return result.table.to_pylist(), quarantined


@pytest.fixture
def files(tmp_path):
    data = table()
    dictionary, plain, csv = tmp_path / "dictionary.parquet", tmp_path / "plain.parquet", tmp_path / "battles.csv"
    pq.write_table(data, dictionary, row_group_size=100)  # batches of 100 rows, each its own dictionary
    pq.write_table(data, plain, row_group_size=100, use_dictionary=False)
    pa_csv.write_csv(data, csv)
    return dictionary, plain, csv


def test_columns_of_few_values_are_read_as_dictionaries_and_ids_are_not(files):
    dictionary, plain, _ = files
    assert label_columns(pq.read_metadata(dictionary)) == ["model_a", "model_b", "winner"]
    assert label_columns(pq.read_metadata(plain)) == []
    batch = next(read_batches(dictionary)).frame
    assert str(batch.schema["model_a"]) == "Categorical" and str(batch.schema["battle_id"]) == "String"


def test_dictionary_columns_give_the_rows_and_quarantine_of_plain_ones(files):
    dictionary, plain, csv = files
    rows, quarantined = read(dictionary)
    assert read(plain) == (rows, quarantined)
    csv_rows, csv_quarantined = read(csv)  # CSV lines count the header
    assert csv_rows == rows and csv_quarantined == [(line + 1, field, reason) for line, field, reason in quarantined]
    assert {r["model_a"] for r in rows} == {"m1", "m2", "m3"} and {r["model_b"] for r in rows} == {"m1", "m2", "m3"}
    assert {r["winner"] for r in rows} == {"model_a", "model_b", "tie", "tie (bothbad)"}
    reasons = {(line % 10, field, reason.split(" (")[0].split(",")[0]) for line, field, reason in quarantined}
    assert reasons == {(2, "model_b", "a model against itself"), (3, "model_a", "missing model_a"),
                       (5, "model_b", "a model against itself"),  # one name in NFC
                       (7, "winner", "unknown winner value"), (8, "winner", "missing winner"),
                       (9, "model_a", "model_a contains a control or format character")}


def test_a_dictionary_with_unused_and_blank_values_and_one_of_numbers(tmp_path):
    names = pa.array(["zed", "  amy", "\t", "never-used", "bea"])  # (Parquet holds no null in a dictionary)
    a = pa.DictionaryArray.from_arrays(pa.array([0, 1, 4, None, 1], pa.int32()), names)
    b = pa.DictionaryArray.from_arrays(pa.array([4, 4, 0, 0, 2], pa.int32()), names)
    numbers = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0, 1, 0], pa.int32()), pa.array([7, 8], pa.int64()))
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"model_a": a, "model_b": b, "winner": ["model_a"] * 5, "judge": numbers}), path)
    rows, quarantined = read(path)
    assert [(r["model_a"], r["model_b"], r["judge"]) for r in rows] == [
        ("zed", "bea", "7"), ("amy", "bea", "8"), ("bea", "zed", "7")]
    assert quarantined == [(4, "model_a", "missing model_a"), (5, "model_b", "missing model_b")]


# --- every Arrow type made usable or marked (`usable`), value by value --------------------------------------------

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
FIRST_DAY, LAST_DAY = (date(1, 1, 1) - date(1970, 1, 1)).days, (date(9999, 12, 31) - date(1970, 1, 1)).days
LAST_SECOND = (datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc) - EPOCH) // timedelta(seconds=1)
FIRST_SECOND = (datetime(1, 1, 1, tzinfo=timezone.utc) - EPOCH) // timedelta(seconds=1)


def made_usable(array: pa.Array) -> tuple[list, pa.DataType, list | None, list | None]:
    values, nested, invalid = usable(array)
    return values.to_pylist(), values.type, nested, invalid


@pytest.mark.parametrize("kind", [pa.int8(), pa.uint64(), pa.int64(), pa.float32(), pa.float64(), pa.bool_()])
def test_numbers_and_booleans_are_kept_as_they_are(kind):
    array = pa.array([True, None, False] if kind == pa.bool_() else [1, None, 0], kind)
    assert made_usable(array) == (array.to_pylist(), kind, None, None)


@pytest.mark.parametrize("array", [pa.array([1.5, None, -2.25], pa.float16()),
                                   pa.array([Decimal("1.5"), None, Decimal("-2.25")], pa.decimal128(5, 2)),
                                   pa.array([Decimal("1.5"), None, Decimal("-2.25")], pa.decimal256(40, 2))])
def test_half_floats_and_decimals_become_doubles(array):
    assert made_usable(array) == ([1.5, None, -2.25], pa.float64(), None, None)


def test_a_column_of_nulls_is_text_of_nulls():
    assert made_usable(pa.nulls(2)) == ([None, None], pa.string(), None, None)


def test_columns_whose_every_value_is_null_or_unusable_are_still_text():
    assert made_usable(pa.array([None, None], pa.list_(pa.int64()))) == ([None, None], pa.string(), [False, False], None)
    assert made_usable(pa.array([None], pa.duration("s"))) == ([None], pa.string(), None, [None])
    assert made_usable(pa.array([b"\xff", None], pa.binary())) == (
        [None, None], pa.string(), None, ["bytes that are not UTF-8 text (byte 0xFF at 0)", None])


TEXTS = ["cafe\u0301", None, "plain"]  # an NFD name: NFC on the way in
NFC = ["caf\u00e9", None, "plain"]


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string(), pa.string_view(), pa.binary(), pa.large_binary(),
                                  pa.binary_view()])
def test_text_and_binary_that_is_utf8_become_nfc_text(kind):
    values, nested, invalid = usable(pa.array([t if t is None or "string" in str(kind) else t.encode() for t in TEXTS], kind))
    assert (values.to_pylist(), pa.types.is_string(values.type) or pa.types.is_large_string(values.type)) == (NFC, True)
    assert (nested, invalid) == (None, None)


def test_fixed_size_binary_that_is_utf8_is_text():
    assert made_usable(pa.array([b"ab", None, b"\xc3\xa9"], pa.binary(2))) == (["ab", None, "é"], pa.string(), None, None)


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string(), pa.string_view(), pa.binary()])
def test_bytes_that_are_not_utf8_are_marked_with_the_first_bad_byte(kind):
    raw = pa.array([b"ok", None, b"ab\xffc", b"\xc3"], pa.binary())  # an invalid byte, a character cut short
    storage = {pa.string_view(): pa.binary_view(), pa.large_string(): pa.large_binary()}.get(kind, pa.binary())
    array = raw.cast(storage).view(kind)
    assert made_usable(array) == (["ok", None, None, None], pa.string(), None,
                                  [None, None, "bytes that are not UTF-8 text (byte 0xFF at 2)",
                                   "bytes that are not UTF-8 text (byte 0xC3 at 0)"])


def test_dictionaries_of_text_stay_dictionaries_in_nfc_and_others_are_decoded():
    words = pa.DictionaryArray.from_arrays(pa.array([1, 0, None, 1], pa.int32()), pa.array(["x", "cafe\u0301"]))
    values, nested, invalid = usable(words)
    assert pa.types.is_dictionary(values.type) and values.to_pylist() == ["café", "x", None, "café"]
    assert (nested, invalid) == (None, None)
    numbers = pa.DictionaryArray.from_arrays(pa.array([1, 0], pa.int8()), pa.array([7, 9], pa.int16()))
    assert made_usable(numbers) == ([9, 7], pa.int16(), None, None)
    broken = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int8()), pa.array([b"a", b"\xfe"], pa.binary()).view(pa.string()))
    assert made_usable(broken) == (["a", None], pa.string(), None, [None, "bytes that are not UTF-8 text (byte 0xFE at 0)"])


def test_an_extension_column_is_read_through_its_storage():
    assert made_usable(pa.array([1, 0, None], pa.int8()).cast(pa.bool8()))[:2] == ([1, 0, None], pa.int8())


def test_lists_structs_and_maps_are_sorted_json_text_marked_nested_and_nulls_are_not():
    structs = pa.array([{"b": "cafe\u0301", "a": 1}, None], pa.struct([("b", pa.string()), ("a", pa.int64())]))
    assert made_usable(structs) == (['{"a": 1, "b": "café"}', None], pa.string(), [True, False], None)
    lists = pa.array([[1, 2], None, []], pa.list_(pa.int64()))
    assert made_usable(lists) == (["[1, 2]", None, "[]"], pa.string(), [True, False, True], None)
    maps = pa.array([[("k", date(2024, 1, 2))]], pa.map_(pa.string(), pa.date32()))
    assert made_usable(maps) == (['[["k", "2024-01-02"]]'], pa.string(), [True], None)


@pytest.mark.parametrize("array", [pa.array([timedelta(seconds=3), None], pa.duration("s")),
                                   pa.array([time(10, 30), None], pa.time64("us"))])
def test_durations_and_times_of_day_are_kept_as_text_and_marked_invalid(array):
    shown = str(array[0].as_py())
    assert made_usable(array) == ([shown, None], pa.string(), None, [f"a {array.type} value, not text, a number or a date", None])


@pytest.mark.parametrize("unit, per_second", [("s", 1), ("ms", 1_000), ("us", 1_000_000)])
@pytest.mark.parametrize("zone", [None, "Europe/Paris"])
def test_timestamps_of_any_unit_and_zone_become_utc_microseconds_and_those_past_the_years_1_to_9999_are_marked(unit, per_second, zone):
    counts = [0, -1, None, LAST_SECOND * per_second, (LAST_SECOND + 1) * per_second, FIRST_SECOND * per_second,
              (FIRST_SECOND - 1) * per_second]
    values, kind, nested, invalid = made_usable(pa.array(counts, pa.timestamp(unit, tz=zone)))
    at = {i: EPOCH + timedelta(seconds=counts[i] / per_second) for i in (0, 1, 3, 5)}  # the instants in range
    assert kind == pa.timestamp("us", tz="UTC") and nested is None
    assert values == [at[0], at[1], None, at[3], None, at[5], None]
    assert invalid == [None, None, None, None, OUT_OF_RANGE, None, OUT_OF_RANGE]


def test_nanoseconds_round_down_to_the_microsecond():
    day = 86_400 * 10**9
    values, kind, nested, invalid = made_usable(pa.array([1_999, -1, None, day], pa.timestamp("ns")))
    assert values == [EPOCH + timedelta(microseconds=1), EPOCH - timedelta(microseconds=1), None, EPOCH + timedelta(days=1)]
    assert (kind, nested, invalid) == (pa.timestamp("us", tz="UTC"), None, None)


def test_dates_are_utc_midnights_and_days_past_the_years_1_to_9999_are_marked():
    days = [0, LAST_DAY, LAST_DAY + 1, FIRST_DAY, FIRST_DAY - 1, None]
    midnight = {i: EPOCH + timedelta(days=days[i]) for i in (0, 1, 3)}  # the days in range
    expected = [midnight[0], midnight[1], None, midnight[3], None, None]
    marks = [None, None, OUT_OF_RANGE, None, OUT_OF_RANGE, None]
    assert made_usable(pa.array(days, pa.date32())) == (expected, pa.timestamp("us", tz="UTC"), None, marks)
    millis = [None if d is None else d * 86_400_000 for d in days]
    assert made_usable(pa.array(millis, pa.date64())) == (expected, pa.timestamp("us", tz="UTC"), None, marks)


def test_every_date_in_range_is_kept_when_none_is_out_of_it():
    assert made_usable(pa.array([LAST_DAY, FIRST_DAY], pa.date32()))[3] is None


# --- files and batches ------------------------------------------------------------------------------------------


def test_batches_number_their_rows_on_from_the_batch_before_and_carry_their_markers(tmp_path, monkeypatch):
    monkeypatch.setattr(parquet_files, "BATCH_ROWS", 2)
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({" model_a ": ["a", "b", "c"], "tags": [[1], None, [2]], "raw": [b"x", b"\xff", None]}), path)
    batches = list(read_batches(path))
    assert [b.frame.get_column(LINE).to_list() for b in batches] == [[1, 2], [3]]
    frame = pl.concat([b.frame for b in batches], how="diagonal")
    assert frame.get_column("model_a").to_list() == ["a", "b", "c"]  # header names stripped
    assert frame.get_column(NESTED + "tags").to_list() == [True, False, True]
    assert frame.get_column(INVALID + "raw").to_list() == [None, "bytes that are not UTF-8 text (byte 0xFF at 0)", None]


def test_binary_nested_and_optional_nested_text_are_never_label_columns(tmp_path):
    path = tmp_path / "t.parquet"
    rows = 400
    pq.write_table(pa.table({"raw": [b"a"] * rows, "tags": [["a"]] * rows, "inner": [{"name": "a"}] * rows,
                             "name": ["a"] * rows}), path)  # the label column after the others
    assert label_columns(pq.read_metadata(path)) == ["name"]


def test_a_file_that_is_not_parquet_is_refused_in_one_line(tmp_path):
    path = tmp_path / "t.parquet"
    path.write_bytes(b"PAR1 not\nreally   parquet" + b" " * 400)
    with pytest.raises(UnreadableFile) as refused:
        next(read_batches(path))
    with pytest.raises(Exception) as by_pyarrow:
        pq.ParquetFile(path)
    assert str(refused.value) == f"{path}: not a readable Parquet file ({' '.join(str(by_pyarrow.value).split())})"


def test_a_corrupt_page_is_refused_at_the_first_row_of_its_batch(tmp_path, monkeypatch):
    monkeypatch.setattr(parquet_files, "BATCH_ROWS", 100)
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": [f"v{i}" for i in range(300)]}), path, row_group_size=100, use_dictionary=False,
                   compression="none")
    second = pq.read_metadata(path).row_group(1).column(0)
    data = bytearray(path.read_bytes())
    start = second.data_page_offset + 8  # inside the second row group's page header
    data[start:start + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))
    batches = read_batches(path)
    assert next(batches).frame.height == 100
    with pytest.raises(UnreadableFile) as refused:
        next(batches)
    assert str(refused.value).startswith(f"{path}: line 101: Parquet data cannot be read (")
    assert "None" not in refused.value.reason and len(refused.value.reason) > len("Parquet data cannot be read ()")


def test_a_large_string_column_with_bytes_that_are_not_utf8_quarantines_their_rows(tmp_path):
    """polars writes text as large_string; a reader that viewed it as 32-bit binary crashed on a bad byte."""
    path = tmp_path / "polars.parquet"
    names = pa.array([b"m\xff", b"m1"], pa.large_binary()).view(pa.large_string())
    pq.write_table(pa.table({"model_a": names, "model_b": ["m2", "m2"], "winner": ["model_a", "tie"]}), path)
    assert pq.read_schema(path).field("model_a").type == pa.large_string()
    rows, quarantined = read(path)
    assert [(r["model_a"], r["model_b"]) for r in rows] == [("m1", "m2")]
    assert [(line, field) for line, field, _ in quarantined] == [(1, "model_a")]
    assert "bytes that are not UTF-8 text (byte 0xFF at 1)" in quarantined[0][2]


def test_the_reasons_of_a_column_whose_every_value_is_null_are_still_text(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"model_a": ["a"], "weight": pa.array([None], pa.duration("s"))}), path)
    assert next(read_batches(path)).frame.schema[INVALID + "weight"] == pl.String
