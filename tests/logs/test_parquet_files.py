"""Parquet text stored as small dictionaries: read as dictionaries, checked and cleaned once per
distinct value, with the same accepted rows, quarantine and lines as the same values stored plain."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

from pipeline.logs import read_log
from pipeline.logs.parquet_files import label_columns, read_batches

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
