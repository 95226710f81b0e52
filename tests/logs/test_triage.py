"""Row triage: rejections name the first line of a repeated key, whether or not the shortcut
(distinct hashes, nothing to check) applies, and a check that rejects nothing keeps every row."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from pipeline.logs.records import INVALID, LINE, NESTED, RawRecords, UnreadableFile
from pipeline.logs.triage import (
    MAX_EPOCH,
    MIN_EPOCH,
    QUARANTINE_SCHEMA,
    UTC_MICROS,
    Check,
    ReadResult,
    Triage,
    alias_key,
    number,
    quarantine_rows,
    timestamps,
)


def triage(columns: dict[str, list]) -> Triage:
    height = len(next(iter(columns.values())))
    return Triage("f.csv", RawRecords(pl.DataFrame(columns).with_columns(pl.Series(LINE, np.arange(2, height + 2)))))


def rejected(t: Triage) -> list[tuple[int, str, str]]:
    result = t.result("test", {"n": pl.col(LINE)}, pa.schema([("n", pa.int64())]))
    return [(q["line"], q["field"], q["reason"]) for q in result.quarantined.to_pylist()]


def test_distinct_keys_reject_nothing_and_repeats_name_their_first_line():
    distinct = triage({"id": ["a", "b", "c"], "p": ["x", "x", "y"]})
    distinct.reject_repeats(["id"], "id", "duplicate id")
    assert distinct.frame.height == 3 and rejected(distinct) == []
    repeated = triage({"id": ["a", "b", "a", None, None, "b"], "p": ["x"] * 6})
    repeated.reject_repeats(["id"], "id", "duplicate id")
    assert repeated.frame.get_column("id").to_list() == ["a", "b", None]
    assert rejected(repeated) == [(4, "id", "duplicate id (first at line 2)"), (6, "id", "duplicate id (first at line 5)"),
                                  (7, "id", "duplicate id (first at line 3)")]


def test_repeats_of_several_columns_compare_the_pair():
    t = triage({"game": ["g1", "g1", "g2", "g1"], "player": ["a", "b", "a", "a"]})
    t.reject_repeats(["game", "player"], "player", "duplicate player in game")
    assert rejected(t) == [(5, "player", "duplicate player in game (first at line 2)")]


def test_checks_that_reject_nothing_or_null_keep_every_row():
    t = triage({"v": [1.0, None, 3.0]})
    t.reject([Check("v", "negative", pl.col("v") < 0)])  # null compares as null: not a rejection
    t.reject_rows(pl.col("v") > 10, "v", pl.lit("too big"))
    assert t.frame.height == 3 and rejected(t) == []
    t.reject([Check("v", "negative", pl.col("v") < 0), Check("v", "three", pl.col("v") == 3)])
    assert t.frame.height == 2 and t.frame.columns == ["v", LINE] and rejected(t) == [(4, "v", "three")]
    t.reject_rows(pl.col("v") == 1, "v", pl.lit("one"))
    assert t.frame.columns == ["v", LINE] and rejected(t) == [(2, "v", "one"), (4, "v", "three")]  # no helper column left


def test_labels_are_cleaned_once_per_value_into_one_dictionary_whatever_the_column_type():
    a = [" x", "X", "  ", None, "y ", "x"]
    b = ["x", "y", "z", "x", "y", "\tx"]
    for carrier in (pl.String, pl.Categorical):
        t = triage({"a": pl.Series(a, dtype=carrier), "b": pl.Series(b, dtype=carrier)})
        dictionary = t.derive_labels({"a": "a", "b": "b", "c": None}, lowercase=True).to_pylist()
        codes = t.frame.select("~a", "~b", "~c").rows()
        assert [tuple(None if c is None else dictionary[c] for c in row) for row in codes] == [
            ("x", "x", None), ("x", "y", None), (None, "z", None), (None, "x", None), ("y", "y", None), ("x", "x", None)]
        assert sorted(dictionary) == ["x", "y", "z"]  # once each, shared by both columns
        result = t.result("test", {"a": pl.col("~a"), "n": pl.col(LINE)}, pa.schema([("a", pa.string()), ("n", pa.int64())]))
        assert pa.types.is_dictionary(result.table.schema.field("a").type)
        assert result.table.column("a").to_pylist() == ["x", "x", None, None, "y", "x"]


def test_a_file_whose_keys_repeat_across_the_values_of_a_column_it_does_not_read_is_refused_naming_it():
    # ids a and b each come twice, once per release: two logs in one file. `note` holds a value per
    # row (4 > half the rows, not a split) and comes first, so only `release` may be named.
    mixed = triage({"id": ["a", "b", "a", "b"], "note": ["n1", "n2", "n3", "n4"], "release": ["r1", "r2", "r2", "r1"]})
    mixed.column("id")
    with pytest.raises(UnreadableFile) as refused:
        mixed.refuse_mixed(["id"], "id")
    assert (refused.value.path, refused.value.line, refused.value.field) == ("f.csv", 1, "release")
    assert refused.value.reason == ("rows repeat (id) across the 2 values of column 'release': rate one with --where "
                                    "release=r1, or each with --by release")
    # distinct keys are one log, whatever the other columns hold; so is a repeat no column explains
    for columns in ({"id": ["a", "b", "c", "d"], "release": ["r1", "r2", "r2", "r1"]},
                    {"id": ["a", "a", "b", "b"], "release": ["r1", "r1", "r2", "r2"]}):
        one_log = triage(columns)
        one_log.column("id")
        one_log.refuse_mixed(["id"], "id")


def test_epoch_seconds_are_timestamps_from_the_year_1_to_9999_and_null_beyond():
    seconds = [MIN_EPOCH - 1, MIN_EPOCH, 0.5, MAX_EPOCH, MAX_EPOCH + 1, float("inf"), float("nan")]
    parsed, numeric = timestamps(pl.DataFrame({"t": seconds}), "t")
    utc = UTC
    assert numeric is None and parsed.to_list() == [None, datetime(1, 1, 1, tzinfo=utc), datetime(1970, 1, 1, 0, 0, 0, 500_000, utc),
                                                    datetime(9999, 12, 31, 23, 59, 59, tzinfo=utc), None, None, None]


def test_the_rows_after_a_line_keep_their_lines_and_quarantine_and_balance():
    # what a grown file adds: the rows (accepted and quarantined) read from lines after the old end
    table = pa.table({"n": [10, 11, 12, 13]})
    quarantined = quarantine_rows("f.csv", [3, 6], ["x", "y"], ["bad", "worse"], ["{}", "{}"])
    read = ReadResult("games", "f.csv", table, quarantined, 6, np.array([2, 4, 5, 7]), keyed=False)
    later = read.after(4)
    assert (later.kind, later.source, later.keyed) == ("games", "f.csv", False)
    assert later.table.column("n").to_pylist() == [12, 13] and later.lines.tolist() == [5, 7]
    assert later.quarantined.column("line").to_pylist() == [6] and later.rows_in == 3
    assert read.after(7).rows_in == 0 and read.after(1).rows_in == 6


def test_text_timestamps_may_vary_in_format_row_by_row():
    # polars infers one format from the first value and applies it to all; the rows it leaves
    # are tried format by format (an unparsable one among them). Offsets are converted to UTC, a naive time is UTC.
    raw = ["2024/01/02 03:04", "garbage", "2024-01-02", "2024-01-02T03:04:05", "2024-01-02 03:04:05+01:00", "2024-01-02T03:04",
           "9999-12-31T23:59:59.5", "1700000000", "20240102", None, " "]
    parsed, numeric = timestamps(pl.DataFrame({"t": raw}), "t")
    utc = UTC
    assert parsed.to_list() == [datetime(2024, 1, 2, 3, 4, tzinfo=utc), None, datetime(2024, 1, 2, tzinfo=utc),
                                datetime(2024, 1, 2, 3, 4, 5, tzinfo=utc), datetime(2024, 1, 2, 2, 4, 5, tzinfo=utc),
                                datetime(2024, 1, 2, 3, 4, tzinfo=utc), datetime(9999, 12, 31, 23, 59, 59, 500_000, utc),
                                datetime.fromtimestamp(1_700_000_000, utc), datetime(2024, 1, 2, tzinfo=utc), None, None]
    # whether a present value reads as a number (the checks name "out of range" or "unparsable" by it)
    assert numeric.to_list() == [False] * 7 + [True, False, None, None]


def test_typed_timestamps_are_utc_microseconds_a_naive_one_read_as_utc():
    # (the Parquet reader hands dates and timestamps on as UTC microseconds already)
    utc = UTC
    frame = pl.DataFrame({"aware": pl.Series([datetime(2024, 1, 2, 3, 4, 5, 6, utc)], dtype=pl.Datetime("us", "UTC")),
                          "naive_ns": pl.Series([datetime(2024, 1, 2, 3, 4, 5, 6)], dtype=pl.Datetime("ns"))})
    for name, expected in (("aware", datetime(2024, 1, 2, 3, 4, 5, 6, utc)), ("naive_ns", datetime(2024, 1, 2, 3, 4, 5, 6, utc))):
        parsed, numeric = timestamps(frame, name)
        assert parsed.dtype == pl.Datetime("us", "UTC") and parsed.to_list() == [expected] and numeric is None, name


def test_results_of_batches_concatenate_and_none_is_an_empty_result():
    schema = pa.schema([("n", pa.int64())])
    empty = ReadResult.concat([], "games", "f.csv", schema)
    assert (empty.kind, empty.source, empty.rows_in, empty.table.schema, empty.quarantined.schema) == \
        ("games", "f.csv", 0, schema, QUARANTINE_SCHEMA)
    batches = [ReadResult("games", "f.csv", pa.table({"n": [1]}), quarantine_rows("f.csv", [3], ["x"], ["bad"], ["{}"]), 2,
                          np.array([2]), keyed) for keyed in (True, False)]
    both = ReadResult.concat(batches, "games", "f.csv", schema)
    assert (both.kind, both.source, both.rows_in, both.keyed, both.lines.tolist()) == ("games", "f.csv", 4, False, [2, 2])
    assert quarantine_rows("f.csv", [], [], [], []).schema == QUARANTINE_SCHEMA  # typed even when empty


def test_numbers_of_any_column_type_are_floats():
    frame = pl.DataFrame({"i": [1, 2], "b": [True, False], "s": [" 2.5", "x"]})
    assert [frame.select(number(c, frame.schema[c])).to_series().to_list() for c in "ibs"] == [[1.0, 2.0], [1.0, 0.0], [2.5, None]]


def test_a_typed_timestamp_column_keeps_its_nulls_and_no_column_is_all_null():
    utc = UTC
    t = triage({"t": pl.Series([datetime(2024, 1, 2, tzinfo=utc), None], dtype=UTC_MICROS)})
    t.reject(t.derive_timestamp("t"))  # a missing timestamp is no reason to quarantine a row
    assert t.frame.get_column("~timestamp").to_list() == [datetime(2024, 1, 2, tzinfo=utc), None] and rejected(t) == []
    absent = triage({"v": [1]})
    assert absent.derive_timestamp(None) == [] and absent.frame.schema["~timestamp"] == UTC_MICROS
    assert absent.frame.get_column("~timestamp").to_list() == [None]


def test_a_rejected_row_of_a_file_without_columns_is_recorded_as_an_empty_object():
    t = Triage("f.csv", RawRecords(pl.DataFrame({LINE: [2, 3]})))
    t.reject_rows(pl.col(LINE) == 3, "(record)", pl.lit("empty"))
    assert t.result("test", {"n": pl.col(LINE)}, pa.schema([("n", pa.int64())])).quarantined.to_pylist() == [
        {"file": "f.csv", "line": 3, "field": "(record)", "reason": "empty", "record": "{}"}]


def test_labels_of_three_columns_share_one_dictionary():
    t = triage({"a": ["x", "y"], "b": ["z", "z"], "c": ["w", "x"]})
    dictionary = t.derive_labels({"a": "a", "b": "b", "c": "c"}).to_pylist()
    assert [[dictionary[code] for code in t.frame.get_column(f"~{name}")] for name in "abc"] == [["x", "y"], ["z", "z"], ["w", "x"]]


def test_a_weight_too_small_or_too_large_to_sum_exactly_is_named():
    from pipeline.logs.triage import weight_checks

    t = triage({"w": [2.0**-30, 2.0**39, 1.0, 2.0**38]})  # 2^38 itself is summed exactly
    t.reject(weight_checks("w", None))
    assert rejected(t) == [(2, "weight", "weight is below 2^-24, the grid of exact sums, where it would count as 0"),
                           (3, "weight", "weight is above 274,877,906,944 (2^38), the largest weight summed exactly")]


def test_a_value_the_format_reader_marked_unusable_quarantines_its_row_naming_the_column():
    t = triage({"name": ["a", "b"], INVALID + "name": [None, "bytes that are not UTF-8 text"]})
    t.column("Name")
    t.reject([])  # the marked rows go before any check of the kind
    assert rejected(t) == [(3, "Name", "Name is bytes that are not UTF-8 text")]


def test_accepted_rows_come_out_in_line_order():
    t = Triage("f.csv", RawRecords(pl.DataFrame({"v": ["a", "c", "b"], LINE: [2, 4, 3]})))
    result = t.result("test", {"v": pl.col("v")}, pa.schema([("v", pa.string())]))
    assert result.table.column("v").to_pylist() == ["a", "b", "c"] and result.lines.tolist() == [2, 3, 4]
    assert (result.kind, result.source, result.rows_in) == ("test", "f.csv", 3)


def test_a_column_named_twice_whatever_the_case_refuses_the_file():
    assert [alias_key(n) for n in ("Model_A#2", "a#b#3", "x#", "x#y")] == ["model_a", "a#b", "x#", "x#y"]
    t = triage({"model_a": ["x"], "Model_A": ["y"]})
    with pytest.raises(UnreadableFile) as refused:
        t.column("model_a")
    assert (refused.value.path, refused.value.line, refused.value.field, refused.value.reason) == (
        "f.csv", 1, "model_a", "columns 'model_a' and 'Model_A' both name 'model_a': rename or drop one")


def test_a_nested_value_quarantines_its_row_and_an_unmarked_one_does_not():
    t = triage({"name": ["a", "[1]", "b"], NESTED + "name": [False, True, None]})
    t.column("name")
    t.reject([])
    assert rejected(t) == [(3, "name", "name is a list or an object, not a single value")]


def test_missing_columns_refuse_the_file_naming_them_all_and_a_file_without_rows_reads_them_as_text():
    t = triage({"x": ["1"]})
    t.column("model_a", "model_1", "a")
    t.column("winner", "result")
    with pytest.raises(UnreadableFile) as refused:
        t.check_columns()
    assert (refused.value.path, refused.value.line, refused.value.field, refused.value.reason) == (
        "f.csv", 1, "model_a", ("missing columns 'model_a' (or 'model_1', 'a'), 'winner' (or 'result'); the file has x "
                                "(map them with --columns, e.g. --columns model_a=COLUMN)"))
    empty = Triage("f.csv", RawRecords(pl.DataFrame({"x": pl.Series([], dtype=pl.String), LINE: pl.Series([], dtype=pl.Int64)})))
    assert empty.column("winner") == "winner" and empty.frame.schema["winner"] == pl.String
    empty.check_columns()


def test_unparsable_records_are_quarantined_and_a_result_without_lines_has_line_zero():
    raw = RawRecords(pl.DataFrame({"v": ["a"], LINE: [2]}), unparsable=[(3, "not JSON", "{")])
    quarantined = Triage("f.csv", raw).result("test", {"v": pl.col("v")}, pa.schema([("v", pa.string())])).quarantined
    assert quarantined.schema == QUARANTINE_SCHEMA
    assert quarantined.to_pylist() == [{"file": "f.csv", "line": 3, "field": "(record)", "reason": "not JSON", "record": "{"}]
    lines = ReadResult("games", "f.csv", pa.table({"n": [1, 2]}), quarantined.slice(0, 0), 2).lines
    assert lines.dtype == np.int64 and lines.tolist() == [0, 0]
    with pytest.raises(AssertionError, match=r"f.csv: row accounting broken: 3 in, 2 accepted, 0 quarantined"):
        ReadResult("games", "f.csv", pa.table({"n": [1, 2]}), quarantined.slice(0, 0), 3)


def test_a_number_of_seconds_beyond_the_year_9999_is_quarantined_as_out_of_range():
    t = triage({"t": [1e20, 0.0]})
    t.reject(t.derive_timestamp("t"))
    assert rejected(t) == [(2, "timestamp", "timestamp is not a finite number of seconds within the years 1 to 9999")]
