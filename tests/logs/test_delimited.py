"""CSV read in chunks: every record with its true physical line, whatever the size of the chunks."""

from __future__ import annotations

import pytest

from pipeline.logs import delimited
from pipeline.logs.formats import read_records
from pipeline.logs.records import LINE

LONG = "long\n" * 20  # a quoted field of 20 lines, longer than the smallest chunks read below
# Each record with the line it starts on. A BOM and a blank line before the header; CRLF and LF
# lines mixed; blank lines of both kinds; a quoted CRLF; doubled quotes; a record with a field
# missing; a record longer than a chunk; non-ASCII text; no newline at the end.
ADVERSARIAL = (
    "\ufeff\n"
    "battle_id,model_a,model_b,winner\r\n"  # line 2
    "1,a,b,tie\r\n"
    "\r\n"
    '2,"x\r\ny",b,model_a\r\n'  # lines 5-6
    "3,a,b,tie\n"
    "\n"
    '4,"""q""",b,tie\n'  # line 9
    "5,a,b\n"
    f'6,"{LONG}",b,tie\n'  # lines 11-31
    "7,caf\u00e9,b,tie"  # line 32
)


def read(path, chunk_bytes: int, monkeypatch) -> tuple[list[tuple], list[tuple]]:
    with monkeypatch.context() as patch:
        patch.setattr(delimited, "CHUNK_BYTES", chunk_bytes)
        records = read_records(path)
    return records.frame.select("battle_id", "model_a", LINE).rows(), records.unparsable


def test_records_keep_their_physical_lines_at_every_chunk_size(tmp_path, monkeypatch):
    path = tmp_path / "b.csv"
    path.write_bytes(ADVERSARIAL.encode())
    expected = ([("1", "a", 3), ("2", "x\r\ny", 5), ("3", "a", 7), ("4", '"q"', 9), ("6", LONG, 11), ("7", "caf\u00e9", 32)],
                [(10, "expected 4 fields, found 3", "5,a,b")])
    assert read(path, 8 << 20, monkeypatch) == expected
    for chunk_bytes in range(64, len(ADVERSARIAL) + 8, 5):  # chunk boundaries in every record, in the CRLFs, in the quotes
        assert read(path, chunk_bytes, monkeypatch) == expected, chunk_bytes


@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_blank_lines_inside_a_chunk_keep_the_lines_after_them(tmp_path, monkeypatch, ending):
    # the fast path sees as many records as lines only without them
    rows = [f"{i},m{i},n{i},tie{ending}" + (ending if i % 7 == 0 else "") for i in range(1, 50)]
    path = tmp_path / "b.csv"
    path.write_text("battle_id,model_a,model_b,winner" + ending + "".join(rows), newline="")
    lines, line = [], 2
    for i in range(1, 50):
        lines.append(line)
        line += 2 if i % 7 == 0 else 1
    for chunk_bytes in (64, 200, 8 << 20):
        got, unparsable = read(path, chunk_bytes, monkeypatch)
        assert [row[2] for row in got] == lines and [row[0] for row in got] == [str(i) for i in range(1, 50)] and not unparsable


def test_a_bare_carriage_return_never_stands_in_for_a_blank_line(tmp_path, monkeypatch):
    # pyarrow breaks the record at the bare \r (one record more) and skips the blank line (one
    # fewer): as many records as lines, but not one per line
    path = tmp_path / "b.csv"
    path.write_text("battle_id,model_a,model_b,winner\n1,a,b,tie\r2,a,b,tie\n\n3,a,b,tie\n", newline="")
    for chunk_bytes in (64, 8 << 20):
        got, unparsable = read(path, chunk_bytes, monkeypatch)
        assert got == [("3", "a", 4)]
        assert [(line, reason) for line, reason, _ in unparsable] == [(2, "expected 4 fields, found 7")]


def test_a_tsv_with_a_stray_quote_is_read_record_by_record_each_bad_line_quarantined_as_it_stands(tmp_path, monkeypatch):
    # Stray quotes send the chunk to the record-by-record path; commas are text in a TSV; a record
    # whose first field is empty is no blank line, nor is a line of spaces or of one field; the
    # quarantined text keeps its spaces and letters but no CR; the last record, after a blank line,
    # has no newline.
    path = tmp_path / "b.tsv"
    path.write_text("battle_id\tmodel_a\tmodel_b\twinner\r\n"
                    "1\ta\tb\ttie\r\n"
                    '2\t"a"x\tb\ttieX\r\n'  # line 3
                    "\r\n"
                    "3\ta\tb\r\n"  # line 5
                    "4\ta,b\tc\ttie\r\n"
                    "\tx\ty\ttie\r\n"
                    "X\r\n"  # line 8
                    "\tz\r\n"
                    "  \r\n"
                    '6\t"a"y\tb\ttie \r\n'  # line 11
                    "\n"
                    "5\tc\td\ttie", newline="")
    for chunk_bytes in (64, 8 << 20):
        got, unparsable = read(path, chunk_bytes, monkeypatch)
        assert got == [("1", "a", 2), ("4", "a,b", 6), ("", "x", 7), ("5", "c", 13)], chunk_bytes
        assert [(line, text) for line, _, text in unparsable] == \
            [(3, '2\t"a"x\tb\ttieX'), (5, "3\ta\tb"), (8, "X"), (9, "\tz"), (10, "  "), (11, '6\t"a"y\tb\ttie ')], chunk_bytes
        assert [reason.startswith("unparsable line (") for _, reason, _ in unparsable] == [True] + [False] * 4 + [True]
        assert [reason for _, reason, _ in unparsable[1:5]] == [f"expected 4 fields, found {n}" for n in (3, 1, 2, 1)]


def test_records_that_open_with_a_quoted_field_of_two_lines_are_cut_whole_at_every_chunk_size(tmp_path, monkeypatch):
    # every chunk starts with a quote: a cut that missed it would land inside a quoted field
    path = tmp_path / "b.csv"
    path.write_text("battle_id,model_a,model_b,winner\n" + "".join(f'"b{i}\nc",a{i},b,tie\n' for i in range(30)))
    expected = ([(f"b{i}\nc", f"a{i}", 2 + 2 * i) for i in range(30)], [])
    for chunk_bytes in range(64, 200, 7):
        assert read(path, chunk_bytes, monkeypatch) == expected, chunk_bytes


def test_text_that_pyarrow_would_take_for_null_stays_text_and_a_chunk_of_bad_records_reads_none(tmp_path, monkeypatch):
    path = tmp_path / "b.csv"
    path.write_text('battle_id,model_a,model_b,winner\n,NULL,"N/A",tie\n')
    assert read(path, 8 << 20, monkeypatch) == ([("", "NULL", 2)], [])
    path.write_text("battle_id,model_a,model_b,winner\n1,a\n2,b,c\n")
    got, unparsable = read(path, 8 << 20, monkeypatch)
    assert got == [] and [(line, reason) for line, reason, _ in unparsable] == \
        [(2, "expected 4 fields, found 2"), (3, "expected 4 fields, found 3")]


@pytest.mark.parametrize(("before", "kept", "bare"), [
    ("\n", [], 3),  # the chunk opens with a blank line
    ("\r\n", [], 3),  # with a CRLF one
    ("0,z,y,tie\n\r\n", [("0", "z", 2)], 4),  # a CRLF blank line inside it
])
def test_a_bare_carriage_return_beside_any_blank_line_is_no_line_break(tmp_path, monkeypatch, before, kept, bare):
    path = tmp_path / "b.csv"
    path.write_text("battle_id,model_a,model_b,winner\n" + before + "1,a,b,tie\r2,a,b,tie\n3,a,b,tie\n", newline="")
    got, unparsable = read(path, 8 << 20, monkeypatch)
    assert got == [*kept, ("3", "a", bare + 1)]
    assert [(line, reason) for line, reason, _ in unparsable] == [(bare, "expected 4 fields, found 7")]
