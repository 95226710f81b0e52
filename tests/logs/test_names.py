"""Names and ids checked from the array buffers when they are plain ASCII: the shortcut decides
exactly as the full check does, on slices and on large strings too."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from pipeline.logs import read_log
from pipeline.logs.names import MAX_ID, MAX_NAME, check_names
from pipeline.logs.triage import ReadResult, empty_quarantine


def result_of(table: pa.Table) -> ReadResult:
    return ReadResult("battles", "f.csv", table, empty_quarantine(), table.num_rows, np.arange(2, table.num_rows + 2))


def reasons(result: ReadResult) -> list[tuple[int, str, str]]:
    return [(q["line"], q["field"], q["reason"]) for q in result.quarantined.to_pylist()]


@pytest.mark.parametrize("text_type", [pa.string(), pa.large_string()])
def test_a_long_plain_ascii_id_is_refused_and_one_outside_the_slice_is_not(text_type):
    ids = pa.array(["b1", "x" * (MAX_ID + 1), "b3", "b4"], text_type)
    models = pa.array(["m"] * 4, text_type)
    table = pa.table({"battle_id": ids, "model_a": models, "model_b": pa.array(["n", "n", "n", "m" * (MAX_NAME + 1)], text_type)})
    result = check_names(result_of(table), {"model_a": "agents", "model_b": "agents"}, ("battle_id",))
    assert reasons(result) == [(3, "battle_id", f"battle_id is longer than {MAX_ID:,} characters"),
                               (5, "model_b", f"model_b is longer than {MAX_NAME:,} characters")]
    sliced = check_names(result_of(table.slice(2, 1)), {"model_a": "agents", "model_b": "agents"}, ("battle_id",))
    assert sliced.rows_accepted == 1 and not reasons(sliced)  # the long values share the buffers but not the slice
    inside = check_names(result_of(table.slice(1, 1)), {"model_a": "agents", "model_b": "agents"}, ("battle_id",))
    assert inside.rows_accepted == 0 and reasons(inside)[0][1] == "battle_id"


def test_control_characters_and_non_ascii_names_take_the_full_check():
    table = pa.table({"battle_id": ["b1", "b2", "b3"], "model_a": ["caf\u00e9", "a\tb", "a\u200bb"], "model_b": ["x", "x", "x"]})
    result = check_names(result_of(table), {"model_a": "agents", "model_b": "agents"}, ("battle_id",))
    assert result.table.column("model_a").to_pylist() == ["caf\u00e9"]
    assert [(line, field) for line, field, _ in reasons(result)] == [(3, "model_a"), (4, "model_a")]


@pytest.mark.parametrize("kind, header, row", [("battles", "model_a,model_b,winner", "x,y,tie"), ("ballots", "ranking", "x>y")])
@pytest.mark.parametrize("name", ["two\nlines.csv", "zero\u200bwidth.csv", "tab\there.csv"])
def test_ids_made_up_from_a_file_name_with_any_character_keep_every_row(tmp_path, kind, header, row, name):
    # Without an id column a row's id is `<file name>:<line>`: a name the file system allows
    # is no reason to quarantine the file's rows (its ids name no one and are not checked).
    path = tmp_path / name
    path.write_text(f"{header}\n{row}\n{row}\n", encoding="utf-8")
    result = read_log(path, kind)
    assert (result.rows_in, result.rows_accepted) == (2, 2), reasons(result)
    keyed = tmp_path / "keyed.csv"  # an id the file gives is checked as before
    keyed.write_text(f"{kind.removesuffix('s')}_id,{header}\nb\u200b1,{row}\nb2,{row}\n", encoding="utf-8")
    assert [(line, field) for line, field, _ in reasons(read_log(keyed, kind))] == [(2, f"{kind.removesuffix('s')}_id")]
