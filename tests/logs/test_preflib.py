"""PrefLib 2022 order files read as raw ballot records (pipeline/logs/preflib.py): names from the
header, ties and incomplete orders judged by the file's declared type, counts kept as the weights'
text, every other line quarantined under its physical line with the line itself."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.logs.encoding import CONVERT
from pipeline.logs.preflib import read_preflib
from pipeline.logs.records import LINE, UnreadableFile

HEADER = ["# FILE NAME: elections.toc", "#ALTERNATIVE NAME 1:Ann", "#  ALTERNATIVE NAME 2 :  Bob Lee  ",
          "# ALTERNATIVE NAME 10: Cy"]


def read(tmp_path, name: str, lines: list[str], *, prefix: bytes = b"", newline: str = "\n"):
    path = tmp_path / name
    text = newline.join(lines + [""])
    path.write_bytes(prefix + (text.encode("utf-16-le") if text.startswith("\ufeff") else text.encode()))
    records = read_preflib(path)
    return records.frame.select("ranking", "weight", LINE).rows(), records.unparsable


def test_names_ties_counts_and_physical_lines_of_a_complete_file_with_ties(tmp_path):
    body = ["", " 3 : 1 , {2 , 10}", "2: {10,1},2", "1:2,1", "x 1,2,10", "4: 1,2,11", "1: 1,2,10,2"]
    rows, bad = read(tmp_path, "votes.TOC", HEADER + body)  # the suffix's case does not matter
    first = len(HEADER) + 2  # the blank line is counted, not read
    assert rows == [("Ann>Bob Lee=Cy", "3", first), ("Cy=Ann>Bob Lee", "2", first + 1),
                    ("Ann>Bob Lee>Cy>Bob Lee", "1", first + 5)]  # every alternative named: a repeat is the ballot check's
    assert bad == [(first + 2, "an incomplete order in a complete .toc file", "1:2,1"),
                   (first + 3, "expected 'count: order'", "x 1,2,10"),
                   (first + 4, "unknown alternative 11", "4: 1,2,11")]
    assert len(bad) + len(rows) == len(body) - 1


def test_a_colon_inside_an_order_is_an_unknown_alternative_not_a_count(tmp_path):
    rows, bad = read(tmp_path, "v.soi", HEADER + ["1: 1,2:10"])
    assert rows == [] and bad == [(len(HEADER) + 1, "unknown alternative 2:10", "1: 1,2:10")]


def test_a_file_of_no_accepted_order_still_has_text_columns(tmp_path):
    path = tmp_path / "v.soc"
    path.write_text("\n".join(HEADER + ["1: 1"]) + "\n")
    records = read_preflib(path)
    assert records.frame.height == 0 and len(records.unparsable) == 1
    assert records.frame.schema["ranking"] == records.frame.schema["weight"] == pl.String


def test_strict_files_quarantine_ties_and_incomplete_files_accept_partial_orders(tmp_path):
    body = ["5: 2", "1: {1,2}", "2: 10,1,2"]
    rows, bad = read(tmp_path, "v.soi", HEADER + body)
    line = len(HEADER) + 1
    assert rows == [("Bob Lee", "5", line), ("Cy>Ann>Bob Lee", "2", line + 2)]
    assert bad == [(line + 1, "a tie in a strict .soi file", "1: {1,2}")]


def test_the_first_unknown_alternative_is_named_before_a_tie_or_a_missing_one(tmp_path):
    rows, bad = read(tmp_path, "v.soc", HEADER + ["1: {7,1},8"])
    assert rows == [] and bad == [(len(HEADER) + 1, "unknown alternative 7", "1: {7,1},8")]


def test_a_byte_order_mark_and_windows_line_ends_are_read_through(tmp_path):
    rows, bad = read(tmp_path, "v.soc", HEADER + ["1: 10,2,1"], prefix=b"\xef\xbb\xbf", newline="\r\n")
    assert rows == [("Cy>Bob Lee>Ann", "1", len(HEADER) + 1)] and bad == []


@pytest.mark.parametrize("name, lines, message", [
    ("v.soc", ["\ufeffx"], "line 1: UTF-16 (little-endian) text (byte order mark FF FE): " + CONVERT),
    ("v.txt", HEADER, "not a PrefLib order file (expected .soc, .soi, .toc, .toi)"),
    ("v.soc", ["# FILE NAME: x", "1: 1,2"], "no '# ALTERNATIVE NAME' header lines: not a PrefLib 2022 file"),
    ("v.soc", HEADER[:2] + ["# ALTERNATIVE NAME 2: a>b"], "line 3: alternative name 'a>b' contains '>' or '='"),
    ("v.soc", HEADER[:2] + ["# ALTERNATIVE NAME 2: a=b"], "line 3: alternative name 'a=b' contains '>' or '='"),
])
def test_a_file_that_is_not_a_preflib_order_file_is_refused_in_one_line(tmp_path, name, lines, message):
    with pytest.raises(UnreadableFile) as refused:
        read(tmp_path, name, lines)
    assert str(refused.value) == f"{tmp_path / name}: {message}"


def test_text_that_is_not_utf8_is_refused_naming_the_byte(tmp_path):
    path = tmp_path / "v.soc"
    data = ("\n".join(HEADER[:2] + ["# ALTERNATIVE NAME 2: Zoë"]) + "\n").encode("latin-1")
    path.write_bytes(b"\xef\xbb\xbf" + data)
    bad_at = 3 + data.index("ë".encode("latin-1"))
    with pytest.raises(UnreadableFile) as refused:
        read_preflib(path)
    assert str(refused.value) == (f"{path}: line 3: not UTF-8 text: byte 0xEB at byte offset {bad_at} "
                                  f"(Latin-1 or Windows-1252?); {CONVERT}")
