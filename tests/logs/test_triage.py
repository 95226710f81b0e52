"""Row triage: rejections name the first line of a repeated key, whether or not the shortcut
(distinct hashes, nothing to check) applies, and a check that rejects nothing keeps every row."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from pipeline.logs.records import LINE, RawRecords
from pipeline.logs.triage import Check, Triage


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
    assert t.frame.height == 2 and rejected(t) == [(4, "v", "three")]


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
