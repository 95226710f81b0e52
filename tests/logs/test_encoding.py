"""Text encodings: UTF-8 with or without its mark is read, anything else refused in one line saying
what the bytes look like and where the first bad one is (pipeline/logs/encoding.py)."""

from __future__ import annotations

import pytest

from pipeline.logs.encoding import CONVERT, UTF8_BOM, bom_length, decode
from pipeline.logs.records import UnreadableFile

TEXT = "winner,model_a\ncafé,x\n"


def test_a_utf8_mark_is_three_bytes_to_skip_and_plain_utf8_none():
    assert bom_length(UTF8_BOM + TEXT.encode()[:1], "log.csv") == 3
    assert bom_length(TEXT.encode()[:4], "log.csv") == 0
    assert bom_length(b"", "empty.csv") == 0


# Each mark as its codec writes it: UTF-32 little-endian's mark begins with UTF-16 little-endian's,
# so a reader that tried the shorter first would name the wrong encoding.
@pytest.mark.parametrize("codec, name, mark", [
    ("utf-32-le", "UTF-32 (little-endian)", "FF FE 00 00"),
    ("utf-32-be", "UTF-32 (big-endian)", "00 00 FE FF"),
    ("utf-16-le", "UTF-16 (little-endian)", "FF FE"),
    ("utf-16-be", "UTF-16 (big-endian)", "FE FF"),
])
def test_every_other_mark_is_refused_naming_its_encoding_and_bytes(codec, name, mark):
    data = "\ufeff".encode(codec) + TEXT.encode(codec)
    with pytest.raises(UnreadableFile) as refused:
        bom_length(data[:4], "wide.csv")
    assert str(refused.value) == f"wide.csv: line 1: {name} text (byte order mark {mark}): {CONVERT}"


@pytest.mark.parametrize("head", [TEXT.encode(codec)[:4] for codec in ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")]
                         + ["x".encode("utf-16-le")])  # a file of one character: two bytes
def test_wide_text_without_a_mark_is_refused_by_its_nul_bytes(head):
    with pytest.raises(UnreadableFile) as refused:
        bom_length(head, "wide.csv")
    assert str(refused.value) == ("wide.csv: line 1: NUL bytes at the start: UTF-16 or UTF-32 text without a byte "
                                  f"order mark? {CONVERT}")


def test_a_nul_past_the_first_two_bytes_or_a_lone_nul_is_left_to_the_reader():
    assert bom_length(b"ab\x00c", "log.csv") == 0
    assert bom_length(b"\x00", "log.csv") == 0  # one byte: not two-byte text


def test_utf8_decodes_whole():
    assert decode(TEXT.encode(), "log.csv", 1, 0) == TEXT


def test_a_latin1_byte_is_named_with_its_line_and_offset_in_the_file():
    data = "head\nrow one\nno\u00ebl,x\n".encode("latin-1")
    first_line, offset = 7, 100  # the piece starts at physical line 7, byte 100 of the file
    bad_at = data.index(b"\xeb")
    with pytest.raises(UnreadableFile) as refused:
        decode(data, "old.csv", first_line, offset)
    assert refused.value.line == first_line + 2
    assert str(refused.value) == (f"old.csv: line {first_line + 2}: not UTF-8 text: byte 0xEB at byte offset "
                                  f"{offset + bad_at} (Latin-1 or Windows-1252?); {CONVERT}")


def test_utf8_cut_inside_a_character_is_not_taken_for_latin1():
    data = "x\né".encode()[:-1]  # the last character's first byte only
    with pytest.raises(UnreadableFile) as refused:
        decode(data, "cut.csv", 1, 3)
    assert str(refused.value) == f"cut.csv: line 2: not UTF-8 text: byte 0xC3 at byte offset {3 + 2}; {CONVERT}"


@pytest.mark.parametrize("byte", [0x80, 0xFF])  # the ends of the Latin-1 range: a continuation byte, a byte UTF-8 never uses
def test_a_first_line_that_is_blank_is_counted_and_every_high_byte_is_taken_for_latin1(byte):
    data = b"\n" + bytes([byte])
    with pytest.raises(UnreadableFile) as refused:
        decode(data, "old.csv", 1, 0)
    assert str(refused.value) == (f"old.csv: line 2: not UTF-8 text: byte 0x{byte:02X} at byte offset 1 "
                                  f"(Latin-1 or Windows-1252?); {CONVERT}")
