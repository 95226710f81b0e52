"""CSV read in chunks: every record with its true physical line, whatever the size of the chunks."""

from __future__ import annotations

import csv
from collections import Counter

import pyarrow.csv as pa_csv
import pytest

from pipeline.logs import delimited, formats
from pipeline.logs.formats import read_records
from pipeline.logs.records import LINE, MAX_RECORD_BYTES, FileStart, RawRecords, UnreadableFile

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


def batches(path, chunk_bytes: int, monkeypatch, max_record_bytes: int = MAX_RECORD_BYTES, start=None) -> list[RawRecords]:
    with monkeypatch.context() as patch:
        patch.setattr(delimited, "CHUNK_BYTES", chunk_bytes)
        patch.setattr(delimited, "MAX_RECORD_BYTES", max_record_bytes)
        return list(formats.batches(path, start=start))


@pytest.mark.parametrize(("chunk_bytes", "records"), [
    (64, 60),  # past the buffer's bound (four chunks) long before 10,000 lines: cut there
    (40_000, 12_000),  # 10,000 lines with the quote still open, within the bound: cut there
])
def test_an_unterminated_quote_is_quarantined_alone_and_the_rest_read_in_batches_of_bounded_size(
        tmp_path, monkeypatch, chunk_bytes, records):
    # From the open quote on, no newline has an even number of quotes before it: the reader must
    # still cut at a record's end, and hold no more than five chunks at once.
    path = tmp_path / "b.csv"
    path.write_text('id,m,n\n1,"open,x\n' + "".join(f"{i:05d},y,z\n" for i in range(records)))  # 10 bytes a record
    got = batches(path, chunk_bytes, monkeypatch)
    assert max(batch.rows_in for batch in got) * 10 <= 5 * chunk_bytes
    records_read = RawRecords.concat(got)
    assert records_read.frame.rows() == [(f"{i:05d}", "y", "z", 3 + i) for i in range(records)]
    assert [(line, reason) for line, reason, _ in records_read.unparsable] == [(2, "unparsable line (unexpected end of data)")]


def long_line(n: int, size: int) -> str:
    """A record of `size` bytes (its newline not counted) that opens with `n,a,long`."""
    return f"{n},a,long".ljust(size, "x")


def test_a_line_past_the_limit_is_quarantined_with_its_size_whatever_the_chunk_size(tmp_path, monkeypatch, caplog):
    # The limit at 200 bytes (16 MiB in use), chunks well under it (8 MiB in use): the too-long
    # lines are found whole in the buffer or skipped unread, the last one without a newline; each
    # is logged in one line naming the file and the line.
    long_lines = {3: long_line(2, 201), 6: long_line(5, 1000), 8: long_line(7, 250)}
    path = tmp_path / "b.csv"
    path.write_text("id,m,n\n1,a,b\n" + long_lines[3] + "\n3,a,b\n" + long_line(4, 200) + "\n" + long_lines[6] + "\n6,a,b\n"
                    + long_lines[8])
    for chunk_bytes in range(40, 101, 3):
        caplog.clear()
        records = RawRecords.concat(batches(path, chunk_bytes, monkeypatch, max_record_bytes=200))
        assert records.frame.select("id", LINE).rows() == [("1", 2), ("3", 4), ("4", 5), ("6", 7)], chunk_bytes
        assert [line for line, _, _ in records.unparsable] == [3, 6, 8], chunk_bytes
        for at, reason, preview in records.unparsable:
            size = len(long_lines[at]) + (at != 8)  # the newline counted, the last line has none
            assert f"the line is {size:,} bytes long" in reason, (chunk_bytes, at, reason)
            assert preview.endswith("...") and long_lines[at].startswith(preview[:-3]) and len(preview) > 12, (chunk_bytes, preview)
        assert [record.getMessage().split(": the line")[0] for record in caplog.records] == [f"{path}: line {at}" for at in (3, 6, 8)]
    path.write_text("id,m,n\n" + long_line(1, 200) + "\n2,a,b\n")  # at the limit, not past it
    for chunk_bytes in range(40, 101):  # at 69 the buffer holds the line's 200 bytes and not yet its newline
        records = RawRecords.concat(batches(path, chunk_bytes, monkeypatch, max_record_bytes=200))
        assert (records.frame.select("id", LINE).rows(), records.unparsable) == ([("1", 2), ("2", 3)], []), chunk_bytes


def test_a_record_over_the_limit_in_lines_under_it_is_read_whole_and_a_last_line_past_it_after_an_open_quote_is_not(
        tmp_path, monkeypatch):
    # The limit bounds a line, not a record: a quoted field of three lines of 71 bytes is read
    # whole (the buffer's bound, four chunks, is above it, as in use). A quote left open holds
    # the cut until the buffer's bound; the line past the limit after it, the file's last, has no
    # newline to count.
    path = tmp_path / "b.csv"
    field = ("x" * 70 + "\n") * 3
    path.write_text(f'id,m,n,w\n1,a,b,tie\n2,"{field}",b,tie\n3,a,b,tie\n')
    for chunk_bytes in range(64, 101, 3):
        records = RawRecords.concat(batches(path, chunk_bytes, monkeypatch, max_record_bytes=200))
        assert records.frame.select("id", "m", LINE).rows() == [("1", "a", 2), ("2", field, 3), ("3", "a", 7)], chunk_bytes
        assert not records.unparsable, chunk_bytes
    path.write_text('id,m,n,w\n1,"abc\n' + "x" * 300)
    records = RawRecords.concat(batches(path, 64, monkeypatch, max_record_bytes=200))
    assert records.frame.height == 0
    assert [(line, reason.split(", past")[0]) for line, reason, _ in records.unparsable] == \
        [(2, "unparsable line (unexpected end of data)"), (3, "the line is 300 bytes long")]


@pytest.mark.parametrize("resume", [False, True])
def test_a_file_read_from_where_an_earlier_version_ended_keeps_its_lines_and_byte_offsets(tmp_path, monkeypatch, resume):
    # A file that grew: read from the earlier version's end (`FileStart`), the records keep their
    # physical lines, and a byte that is not UTF-8, after a line past the limit skipped unread, is
    # named at its line and byte offset in the file.
    earlier = "id,m,n\n1,a,b\n2,a,b\n"
    grown = earlier + '3,"c\nd",b\n' + long_line(4, 300) + "\n5,a,\u00e9\n"
    path = tmp_path / "b.csv"
    path.write_text(grown)
    start = FileStart(len(earlier.encode()), earlier.count("\n")) if resume else None
    for chunk_bytes in range(40, 101, 3):
        records = RawRecords.concat(batches(path, chunk_bytes, monkeypatch, max_record_bytes=200, start=start))
        assert records.frame.select("id", "m", LINE).rows() == [("1", "a", 2), ("2", "a", 3)][2 * resume:] + \
            [("3", "c\nd", 4), ("5", "a", 7)], chunk_bytes
        assert [line for line, _, _ in records.unparsable] == [6], chunk_bytes
    latin1 = grown.encode().replace("\u00e9".encode(), b"\xe9")
    path.write_bytes(latin1)
    named = f"byte 0xE9 at byte offset {latin1.index(0xE9)} "
    for chunk_bytes in range(40, 101, 3):
        with pytest.raises(UnreadableFile) as caught:
            batches(path, chunk_bytes, monkeypatch, max_record_bytes=200, start=start)
        assert caught.value.line == 7 and named in caught.value.reason, (chunk_bytes, str(caught.value))


@pytest.mark.parametrize(("stray", "kept"), [
    ("", []),
    ('2,a"x"y,b,tie\n', [("2", 'a"x"y', 3)]),
])
def test_a_line_of_one_empty_quoted_field_is_a_record_not_a_blank_line_whichever_path_reads_it(
        tmp_path, monkeypatch, stray, kept):
    # A quote inside a field (`a"x"y`, text in RFC 4180 as in Python's csv) sends the chunk to the
    # record-by-record path, which once took `""` for a blank line and dropped it unaccounted.
    path = tmp_path / "b.csv"
    path.write_text("battle_id,model_a,model_b,winner\n1,a,b,tie\n" + stray + '""\n3,a,b,tie\n')
    at = 3 + len(kept)
    assert read(path, 8 << 20, monkeypatch) == ([("1", "a", 2), *kept, ("3", "a", at + 1)],
                                                [(at, "expected 4 fields, found 1", '""')])


CLEAN = '1,a,b,tie\r\n2,"x,""y""",b,tie\r\n3,a,"",model_a\r\n'  # quoted delimiters and quotes, CRLF, one record a line
WELL_QUOTED = ('"1",a,b,tie\r\n'  # a quote at the chunk's first byte, and before a CR
               "\r\n"  # a blank line: records and lines differ
               '2,"x\r\ny",b,tie\r\n'  # a quoted field of two lines
               '3,"""q""","",tie\n'  # doubled quotes, an empty quoted field
               ",a,b,tie\n"  # a record that opens with the delimiter
               "4,a,b\n"  # a field missing
               '5,a,b,"tie"')  # a quote at the chunk's last byte


def clean_read(delimiter: str) -> tuple[list[tuple], list[int]]:
    return [("1", "a", 2), ("2", f'x{delimiter}"y"', 3), ("3", "a", 4)], []


def well_quoted_read(newline: str) -> tuple[list[tuple], list[int]]:
    return [("1", "a", 2), ("2", f"x{newline}y", 4), ("3", '"q"', 6), ("", "a", 7), ("5", "a", 9)], [8]


@pytest.mark.parametrize(("suffix", "body", "read_as", "path", "parses"), [
    ("csv", CLEAN, clean_read(","), "pyarrow", 1),  # pyarrow's parse accounts for every line
    ("tsv", CLEAN.replace(",", "\t"), clean_read("\t"), "pyarrow", 1),
    ("csv", CLEAN.removesuffix("\r\n"), clean_read(","), "pyarrow", 1),  # no newline at the end
    # a CR and a blank line: the scan finds the records, pyarrow parses the good ones
    ("csv", WELL_QUOTED, well_quoted_read("\r\n"), "scan", 1),
    ("tsv", WELL_QUOTED.replace(",", "\t"), well_quoted_read("\r\n"), "scan", 1),
    ("csv", WELL_QUOTED.replace("\r", ""), well_quoted_read("\n"), "scan", 2),  # in LF: pyarrow's parse of the chunk first
    ("csv", ',"1",b,tie\n\n2,a,b,tie\n', ([("", "1", 2), ("2", "a", 4)], []), "scan", 2),  # a quote at the second byte
    ("csv", '1,a"x,b,tie\n\n2,a,b,tie\n', ([("1", 'a"x', 2), ("2", "a", 4)], []), "csv", 1),  # a quote inside a field
    ("csv", '1,"a",b,tie\n2,a\rb,c,tie\n', ([("1", "a", 2)], [3]), "csv", 2),  # a bare CR: pyarrow's parses both fail
])
def test_each_chunk_is_read_by_the_first_path_that_can_account_for_it(tmp_path, monkeypatch, suffix, body, read_as, path,
                                                                      parses):
    # The module's design: pyarrow whole, else a vectorised scan and pyarrow, else Python's csv
    # module record by record. A path that refuses what it could read costs speed (the record-by-
    # record path is the slowest by far) though the records come out the same. The chunk is
    # decoded to text only once pyarrow's parse of it is refused.
    calls = Counter()

    def counted(name, function):
        def call(*args, **kwargs):
            calls[name] += name != "decode" or args[2] > 1  # the header (line 1) is decoded and read by csv once
            return function(*args, **kwargs)
        return call

    monkeypatch.setattr(pa_csv, "read_csv", counted("pyarrow", pa_csv.read_csv))
    monkeypatch.setattr(csv, "reader", counted("csv", csv.reader))
    monkeypatch.setattr(delimited, "decode", counted("decode", delimited.decode))
    file = tmp_path / f"b.{suffix}"
    file.write_text("battle_id,model_a,model_b,winner\r\n".replace(",", "\t" if suffix == "tsv" else ",") + body, newline="")
    got, unparsable = read(file, 8 << 20, monkeypatch)
    assert (got, [line for line, _, _ in unparsable]) == read_as
    taken = "csv" if calls["csv"] > 1 else "scan" if calls["decode"] else "pyarrow"
    assert (taken, calls["pyarrow"]) == (path, parses)


@pytest.mark.parametrize(("content", "columns", "rows"), [
    ('"battle_id","model_a",b,w\r\n1,a,b,tie\r\n', ["battle_id", "model_a", "b", "w"], [("1", "a", 2)]),  # quoted names
    # a blank line at the file's first byte; a quoted name of two lines; no newline at the end
    ('\nbattle_id,"model\na",b,w\n1,"x\ny",b,tie\n2,a,b,c', ["battle_id", "model\na", "b", "w"], [("1", "x\ny", 4), ("2", "a", 6)]),
    ("battle_id,model_a,b,TAX\r\n1,a,b,x\r\n", ["battle_id", "model_a", "b", "TAX"], [("1", "a", 2)]),  # only the CRLF stripped
    ('battle_id,"model_a",b,w', [], []),  # a header without a newline, and no record
    ("\n\r\n\n", [], []),  # blank lines only: no header
    ("battle_id\tmodel_a\tb\t\n1\ta\tb\t\n", ["battle_id", "model_a", "b", ""], [("1", "a", 2)]),  # a TSV header's empty last name
])
def test_the_header_is_the_first_record_whatever_its_quoting_and_the_blank_lines_before_it(tmp_path, content, columns, rows):
    path = tmp_path / ("b.tsv" if "\t" in content else "b.csv")
    path.write_text(content, newline="")
    records = read_records(path)
    assert records.columns == columns and not records.unparsable
    assert records.frame.select(columns[:2] + [LINE]).rows() == rows if columns else records.frame.height == 0


@pytest.mark.parametrize(("name", "content", "line", "reason"), [
    # a quote open to the end of the file, which has no newline at its end
    ("b.csv", b'battle_id,"model_a,b\n1,a,b,c', 1, "the header does not parse as CSV (unexpected end of data)"),
    ("b.tsv", b'battle_id\t"model"_a\tb\n1\ta\tb\n', 1, "the header does not parse as TSV"),
    ("b.csv", b"\nbattle_id,mod\xe9l,b,w\n1,a,b,c\n", 2, "not UTF-8 text: byte 0xE9 at byte offset 14 "),  # Latin-1
    ("b.csv", b'\nbattle_id,"mod\n\xe9l",b,w\n1,a,b,c\n', 3, "not UTF-8 text: byte 0xE9 at byte offset 16 "),  # on the name's 2nd line
])
def test_a_header_that_does_not_read_refuses_the_file_in_one_line_naming_its_line(tmp_path, name, content, line, reason):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(UnreadableFile) as caught:
        read_records(path)
    assert caught.value.line == line and str(caught.value).startswith(f"{path}: line {line}: {reason}"), str(caught.value)


@pytest.mark.parametrize(("line", "last", "kept"), [
    ('1,"a" ,b,tie', False, None),  # a space after a closing quote: pyarrow would read `a `, Python's csv refuses it
    ('1,""a,b,tie', False, None),  # text after an empty quoted field
    ('"1"x,a,b,tie', False, None),  # text after a quoted first field
    ('1,a,b,"tie"x', True, None),  # text after the chunk's last quote, one byte before its end
    ('x"1,2",a,b', False, ('x"1', '2"')),  # quotes inside fields (text), the first at the chunk's second byte
    ('1,a",b",tie', False, ("1", 'a"')),  # a quote after text, before a delimiter
    ('1,a"b,c",tie', False, ("1", 'a"b')),
])
def test_a_misplaced_quote_is_read_as_rfc_4180_reads_it_not_as_pyarrow_guesses(tmp_path, monkeypatch, line, last, kept):
    # The blank line sends the chunk past pyarrow's whole parse; a quote out of place must send it
    # on to Python's csv (strict), not to the scan, which takes quotes for RFC 4180 quoting.
    path = tmp_path / "b.csv"
    path.write_text("battle_id,model_a,model_b,winner\n" + ("2,a,b,tie\n\n" + line if last else line + "\n\n2,a,b,tie\n"))
    at = 4 if last else 2
    got, unparsable = read(path, 8 << 20, monkeypatch)
    assert [row[:2] for row in got if row[2] == at] == ([kept] if kept else [])
    assert [(line, reason.split(" (")[0]) for line, reason, _ in unparsable] == ([] if kept else [(at, "unparsable line")])
