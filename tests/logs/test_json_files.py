"""JSON arrays and JSON lines read totally (pipeline/logs/json_files.py): every value kept as text,
nested values as sorted JSON marked nested, every record on its physical line; a line that cannot be
kept is quarantined with its reason and text, an array that does not parse is refused in one line."""

from __future__ import annotations

import json

import polars as pl
import pytest

from pipeline.logs import json_files
from pipeline.logs.json_files import MAX_INT_DIGITS, read_json, read_lines
from pipeline.logs.records import LINE, NESTED, FileStart, RawRecords, UnreadableFile


def rows(batches) -> tuple[list[dict], list[tuple[int, str, str]]]:
    records = RawRecords.concat(list(batches))
    return records.frame.to_dicts(), records.unparsable


def decode_error(text: str) -> json.JSONDecodeError:
    """Python's own error for `text`: the reason and column the reader must repeat."""
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(text)
    return caught.value


RECORDS = [{"model_a": "x", "n": 3, "ok": True, "no": False, "gone": None},
           {"model_a": "y", "f": 0.5, "tags": {"b": [1, 2], "a": "é"}}]


def test_values_are_text_and_nested_values_sorted_json_marked_nested(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n")
    found, bad = rows(read_lines(path))
    assert bad == []
    assert found == [
        {"model_a": "x", "n": "3", "ok": "true", "no": "false", "gone": None, "f": None, "tags": None,
         LINE: 1, NESTED + "tags": False},
        {"model_a": "y", "n": None, "ok": None, "no": None, "gone": None, "f": "0.5", "tags": '{"a": "é", "b": [1, 2]}',
         LINE: 2, NESTED + "tags": True}]


def test_a_key_whose_every_value_is_null_is_still_a_text_column(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": "1", "judge": null}\n')
    records = RawRecords.concat(list(read_lines(path)))
    assert records.frame.schema["judge"] == pl.String


def test_json_lines_keep_physical_lines_past_blank_ones_and_quarantine_each_bad_line(tmp_path):
    long_int = "7" * (MAX_INT_DIGITS + 1)
    lines = ['{"a": "1"}', "", "   ", '{"a": 2,}', "[1, 2]", '{"a": "x", "a": "y"}', '{"a": {"b": 1, "b": 2}}',
             '{"a": "\\ud800"}', '{"a": "\\ud83d\\ude00"}', "[" * 100_000, f'{{"a": {long_int}}}', f'{{"a": -{"7" * MAX_INT_DIGITS}}}']
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + ("\r\n".join(lines) + "\r\n").encode())
    found, bad = rows(read_lines(path))
    assert [(r[LINE], r["a"]) for r in found] == [(1, "1"), (9, "\U0001f600"), (11, "inf"), (12, "-" + "7" * MAX_INT_DIGITS)]
    trailing_comma = decode_error('{"a": 2,}')
    assert bad == [
        (4, f"invalid JSON: {trailing_comma.msg} (column {trailing_comma.colno})", '{"a": 2,}'),
        (5, "a record must be a JSON object", "[1, 2]"),
        (6, "the key 'a' appears twice in one object: which value is meant cannot be known", '{"a": "x", "a": "y"}'),
        (7, "the key 'b' appears twice in one object: which value is meant cannot be known", '{"a": {"b": 1, "b": 2}}'),
        (8, "a lone surrogate \\ud800 in a string: not Unicode text", '{"a": "\\ud800"}'),
        (10, "invalid JSON: nested deeper than the parser allows", "[" * 100_000)]


def test_a_lone_surrogate_is_found_in_keys_and_inside_lists(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"\\uDC00": 1}\n{"a": [1, {"b": ["ok", "\\udbff"]}]}\n'
                    '{"x": "\\ud800", "y": {"a": 1}}\n{"x": "\\ud800", "y": [1]}\n{"a": "\\ue000\\udfff"}\n')
    found, bad = rows(read_lines(path))
    assert found == [] and [(line, reason) for line, reason, _ in bad] == [
        (1, "a lone surrogate \\udc00 in a string: not Unicode text"),
        (2, "a lone surrogate \\udbff in a string: not Unicode text"),
        (3, "a lone surrogate \\ud800 in a string: not Unicode text"),  # found past an object beside it
        (4, "a lone surrogate \\ud800 in a string: not Unicode text"),  # and past a list
        (5, "a lone surrogate \\udfff in a string: not Unicode text")]  # the last surrogate, after a private-use character


def test_a_continued_file_starts_at_its_offset_and_counts_on_from_its_lines(tmp_path):
    path = tmp_path / "r.jsonl"
    first = '{"a": "1"}\n{"a": "2"}\n'
    path.write_text(first + '\n{"a": "3"}\n{"a": }\n')
    found, bad = rows(read_lines(path, FileStart(offset=len(first), lines=2)))
    assert [(r[LINE], r["a"]) for r in found] == [(4, "3")] and [line for line, _, _ in bad] == [5]


def test_batches_hold_their_own_records_and_quarantine(tmp_path, monkeypatch):
    monkeypatch.setattr(json_files, "BATCH_RECORDS", 2)
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": "1"}\nbad\n{"a": "2"}\n{"a": "3"}\nworse\n')
    batches = list(read_lines(path))
    assert [([r[LINE] for r in b.frame.to_dicts()], [line for line, _, _ in b.unparsable]) for b in batches] == [
        ([1, 3], [2]), ([4], [5])]


def padded(size: int) -> str:
    """A JSON record of exactly `size` bytes."""
    return '{"a": "' + "z" * (size - 9) + '"}'


def test_a_line_past_the_record_limit_is_quarantined_unread_and_the_next_one_read(tmp_path, monkeypatch, caplog):
    limit = 32
    monkeypatch.setattr(json_files, "MAX_RECORD_BYTES", limit)
    path = tmp_path / "r.jsonl"
    huge = padded(100)
    lines = [padded(limit - 1), padded(limit), padded(limit + 1), huge, padded(limit)]  # the last without its newline
    path.write_text("\n".join(lines))
    found, bad = rows(read_lines(path))
    assert [r[LINE] for r in found] == [1, 2, 5]  # a line of `limit` bytes and its newline is read
    assert [line for line, _, _ in bad] == [3, 4] and f"{len(huge) + 1:,} bytes long" in bad[1][1]
    assert f"{path}: line 4: the line is {len(huge) + 1:,} bytes long" in caplog.text


@pytest.mark.parametrize("name, head, limit", [
    ("r.jsonl", b'{"a": "1"}\n\n', None),  # past a blank line
    ("r.jsonl", (padded(20) + "\n" + padded(100) + "\n").encode(), 32),  # past a line skipped for its size
    ("r.json", b'\xef\xbb\xbf[{"a": "1"},\n\n', None),  # in an array, past its byte order mark
])
def test_a_bad_byte_is_refused_naming_the_file_its_line_and_its_byte_offset(tmp_path, monkeypatch, name, head, limit):
    if limit:
        monkeypatch.setattr(json_files, "MAX_RECORD_BYTES", limit)
    path = tmp_path / name
    path.write_bytes(head + b'{"a": "\xe9"}' + (b"]" if name.endswith(".json") else b"\n"))
    with pytest.raises(UnreadableFile) as refused:
        list(read_json(path) if name.endswith(".json") else read_lines(path))
    assert str(refused.value).startswith(f"{path}: line 3: not UTF-8 text: byte 0xE9 at byte offset {len(head) + 7} (Latin-1")


@pytest.mark.parametrize("name", ["r.json", "r.jsonl"])
def test_wide_text_is_refused_naming_the_file(tmp_path, name):
    path = tmp_path / name
    path.write_bytes('[{"a": "1"}]'.encode("utf-16-le"))
    with pytest.raises(UnreadableFile) as refused:
        list(read_json(path) if name.endswith(".json") else read_lines(path))
    assert str(refused.value).startswith(f"{path}: line 1: NUL bytes at the start")


def test_an_array_keeps_each_record_on_the_line_it_starts_and_quarantines_non_objects(tmp_path):
    path = tmp_path / "r.json"
    path.write_bytes(b'\xef\xbb\xbf \n[ {"a": "1"},\n\n  7 , {"a":\n "2"}, {"a": "x", "a": "y"}\n ]\n\n')
    found, bad = rows(read_json(path))
    assert [(r[LINE], r["a"]) for r in found] == [(2, "1"), (4, "2")]
    assert bad == [(4, "a record must be a JSON object", "7"),
                   (5, "the key 'a' appears twice in one object: which value is meant cannot be known", '{"a": "x", "a": "y"}')]


@pytest.mark.parametrize("text", ["", " \n\t ", "[]", "[ \n ]\n"])
def test_an_empty_file_or_array_gives_no_records(tmp_path, text):
    path = tmp_path / "r.json"
    path.write_text(text)
    found, bad = rows(read_json(path))
    assert found == [] and bad == []


def test_a_json_file_that_is_not_an_array_is_read_as_json_lines(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('\n{"a": "1"}\n{"a": 2,}\n')
    found, bad = rows(read_json(path))
    assert [(r[LINE], r["a"]) for r in found] == [(2, "1")] and [line for line, _, _ in bad] == [3]


# Each fault followed by more lines, so that a fault placed at the end of the text would show
@pytest.mark.parametrize("text, line, reason", [
    ('[{"a": 1},\n {"a": 2,}]\n\n', 2, "invalid JSON: Expecting property name enclosed in double quotes (record starting at column 10)"),
    ('[{"a": 1}\n {"a": 2}]\n\n', 2, "invalid JSON: expected ',' or ']' after a record"),
    ('[{"a": 1} X]\n\n', 1, "invalid JSON: expected ',' or ']' after a record"),
    ('[{"a": 1}', 1, "invalid JSON: expected ',' or ']' after a record"),
    ('[{"a": 1}]x\n\n', 1, "invalid JSON: text after the closing ']'"),
    ('[{"a": 1},\n{"a": 2},\n', 3, "invalid JSON: the array is not closed (a truncated file?)"),
    ('\n[  \n', 3, "invalid JSON: the array is not closed (a truncated file?)"),
    ('[' * 100_000 + "\n\n", 1, "invalid JSON: nested deeper than the parser allows"),
])
def test_an_array_that_does_not_parse_is_refused_in_one_line_at_the_line_of_the_fault(tmp_path, text, line, reason):
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(UnreadableFile) as refused:
        list(read_json(path))
    assert str(refused.value) == f"{path}: line {line}: {reason}"


def test_a_compact_array_after_a_blank_first_line_and_a_long_bad_record_shown_in_part(tmp_path):
    path = tmp_path / "r.json"
    long_text = json.dumps("x" * 20_000)
    path.write_text(f'\n[{{"a":"1"}},{long_text},{{"a":"2"}}]')
    found, bad = rows(read_json(path))
    assert [(r[LINE], r["a"]) for r in found] == [(2, "1"), (2, "2")]
    assert bad == [(2, "a record must be a JSON object", long_text[:10_000])]


def test_an_array_is_yielded_in_batches(tmp_path, monkeypatch):
    monkeypatch.setattr(json_files, "BATCH_RECORDS", 2)
    path = tmp_path / "r.json"
    path.write_text('[{"a": "1"}, 2, {"a": "2"}, {"a": "3"}, [], {"a": "4"}]')
    batches = list(read_json(path))
    assert [([r["a"] for r in b.frame.to_dicts()], len(b.unparsable)) for b in batches] == [
        (["1", "2"], 1), (["3", "4"], 1), ([], 0)]
