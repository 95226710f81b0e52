"""The defects of issue 13, each as the file that showed it: read as data, or refused in one line."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.logs import UnreadableFile, read_log

HEADER = "battle_id,model_a,model_b,winner\n"


def reasons(result) -> list[tuple[int, str, str]]:
    return [(q["line"], q["field"], q["reason"]) for q in result.quarantined.to_pylist()]


def test_csv_lines_that_do_not_parse_are_quarantined_with_their_physical_line(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text("battle_id,model_a,model_b,winner,category\n"
                    '1,a,b,tie,"spans\ntwo lines"\n2,a,b,tie,x,surplus\n3,a,b,model_a,x\n4,"a,b,tie,x\n5,c,d,tie,x\n')
    result = read_log(path, "battles")
    assert result.table.column("battle_id").to_pylist() == ["1", "3", "5"]
    assert result.lines.tolist() == [2, 5, 7]  # record 1 spans lines 2-3
    assert [(line, field) for line, field, _ in reasons(result)] == [(4, "(record)"), (6, "(record)")]
    assert result.rows_in == result.rows_accepted + result.rows_quarantined == 5


@pytest.mark.parametrize("content, expected", [
    (b"\xff\xfeb\x00", "UTF-16 (little-endian)"),
    (HEADER.encode() + b"1,caf\xe9,b,tie\n", "not UTF-8 text: byte 0xE9"),
])
def test_other_encodings_are_refused_in_one_line_naming_the_file(tmp_path, content, expected):
    path = tmp_path / "b.csv"
    path.write_bytes(content)
    with pytest.raises(UnreadableFile) as caught:
        read_log(path, "battles")
    assert str(caught.value).startswith(str(path)) and expected in str(caught.value) and "\n" not in str(caught.value)


def test_a_bom_before_a_json_array_reads_every_record(tmp_path):
    path = tmp_path / "b.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps([{"model_a": "a", "model_b": "b", "winner": "tie"}] * 10).encode())
    assert read_log(path, "battles").rows_accepted == 10


def test_hostile_json_lines_are_quarantined_one_by_one(tmp_path):
    path = tmp_path / "b.jsonl"
    lines = ['{"model_a": "a", "model_b": "b", "winner": "tie"}', "[" * 100_000, '{"model_a": ' + "9" * 5000 + "}",
             '{"model_a": "\\ud800", "model_b": "b", "winner": "tie"}', '{"model_a": "a", "model_b": "b", "winner": "tie", "weight": NaN}']
    path.write_text("\n".join(lines) + "\n")
    result = read_log(path, "battles")
    assert (result.rows_in, result.rows_accepted, result.rows_quarantined) == (5, 1, 4)
    assert [line for line, _, _ in reasons(result)] == [2, 3, 4, 5]


def test_timestamps_out_of_range_and_case_duplicate_columns(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"model_a": "a", "model_b": "b", "winner": "tie", "timestamp": t}) + "\n"
                            for t in ["NaN", 1e13, "inf", 1.7e9]))
    result = read_log(path, "battles")
    assert result.rows_accepted == 1 and {r for _, _, r in reasons(result)} == {
        "timestamp is not a finite number of seconds within the years 1 to 9999"}
    twice = tmp_path / "twice.csv"
    twice.write_text("model_a,Model_A,model_b,winner\na,b,c,tie\n")
    with pytest.raises(UnreadableFile, match="columns 'model_a' and 'Model_A' both name 'model_a'"):
        read_log(twice, "battles")


def test_parquet_columns_of_unexpected_types_quarantine_their_rows(tmp_path):
    path = tmp_path / "b.parquet"
    pq.write_table(pa.table({"model_a": pa.array([["x"], ["y"]]), "model_b": ["b", "c"], "winner": ["tie", "tie"],
                             "weight": pa.array([1, 2], pa.duration("s"))}), path)
    result = read_log(path, "battles")
    assert (result.rows_in, result.rows_accepted) == (2, 0)
    assert all(field in ("model_a", "weight") for _, field, _ in reasons(result))


def test_names_are_nfc_and_control_or_format_characters_are_refused(tmp_path):
    path = tmp_path / "n.csv"
    path.write_text(HEADER + "1,Be\u0301a,x,tie\n2,B\u00e9a,x,tie\n3,a\u200bb,x,tie\n4,a\u202eb,x,tie\n5," + "n" * 300 + ",x,tie\n")
    result = read_log(path, "battles")
    assert result.table.column("model_a").to_pylist() == ["B\u00e9a", "B\u00e9a"]  # one spelling
    assert [(line, field) for line, field, _ in reasons(result)] == [(4, "model_a"), (5, "model_a"), (6, "model_a")]
    assert "longer than 256" in reasons(result)[-1][2]
