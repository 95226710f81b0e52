"""CSV and TSV files, read in chunks of bounded size, every record with its true physical line.

The header is the first record. The rest of the file is cut into chunks of about `CHUNK_BYTES`
at record boundaries (a newline with an even number of quotes before it in the chunk), and each
chunk is parsed by the first of three paths that can account for it:

1. **fast**: pyarrow parses the chunk; when it finds as many well-formed records as the chunk
   has lines, record i is on line i (the common case: no blank lines, no field spanning lines).
2. **exact**: a vectorised scan finds the records (a newline inside quotes is not a boundary),
   their lines, and the records with the wrong number of fields; the others are parsed by pyarrow.
   It applies when every quote in the chunk sits where RFC 4180 allows it.
3. **resync**: Python's `csv` module, record by record. A record that does not parse (a stray
   quote, an unterminated field) or has the wrong number of fields is quarantined under its first
   line, and parsing starts again at the next line, so one bad line never swallows the rest.

Bytes that are not UTF-8 refuse the file, naming the line (`pipeline.logs.encoding`). A line
longer than `MAX_RECORD_BYTES` is quarantined unread (skipped in bounded pieces), so memory stays
bounded whatever the file holds.
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

from pipeline.logs.encoding import bom_length, decode
from pipeline.logs.records import (MAX_RECORD_BYTES, FileStart, RawRecords, UnreadableFile, column_names, frame_of_text,
                                   skip_line, too_long)

CHUNK_BYTES = 8 << 20
_QUOTE, _NEWLINE, _RETURN = ord('"'), ord("\n"), ord("\r")
_MAX_RECORD_LINES = 10_000  # a record cut is searched this many lines back before the quotes are taken as broken


def read_batches(path: Path, delimiter: str, start: FileStart | None = None) -> Iterator[RawRecords]:
    with path.open("rb") as handle:
        head = handle.read(CHUNK_BYTES)
        skip = bom_length(head, path)
        header = _header(head, skip, delimiter, path)
        if header is None:
            return
        names, header_end, header_lines = header
        if start is None:
            pending, line, offset = head[header_end:], 1 + header_lines, header_end
        else:
            handle.seek(start.offset)
            pending, line, offset = b"", start.lines + 1, start.offset
        del head
        eof = False
        too_long_lines: list[tuple[int, str, str]] = []  # quarantined with the next records
        while not eof or pending:
            if not eof:
                more = handle.read(CHUNK_BYTES)
                eof = not more
                if len(pending) + len(more) > MAX_RECORD_BYTES and b"\n" not in pending and b"\n" not in more:
                    size = len(pending) + len(more) + (0 if eof else skip_line(handle))  # the rest of the line: unread
                    too_long_lines.append(too_long(path, line, pending or more, size))
                    pending, line, offset = b"", line + 1, offset + size
                    continue
                pending += more
                del more
            if pending.find(b"\n") > MAX_RECORD_BYTES:  # a line past the limit, whose end is in the buffer
                size = pending.find(b"\n") + 1
                too_long_lines.append(too_long(path, line, pending, size))
                pending, line, offset = pending[size:], line + 1, offset + size
                continue
            cut = len(pending) if eof else _record_cut(pending, force=len(pending) > 4 * CHUNK_BYTES)
            if not cut:
                continue
            chunk, pending = pending[:cut], pending[cut:]
            newlines = chunk.count(b"\n")
            records = parse_chunk(chunk, newlines, line, offset, names, delimiter, path)
            if records.rows_in or too_long_lines:
                yield RawRecords(records.frame, too_long_lines + records.unparsable)
                too_long_lines = []
            line += newlines
            offset += cut
        if too_long_lines:
            empty = {name: pa.array([], pa.string()) for name in names}
            yield RawRecords(frame_of_text(empty, np.zeros(0, np.int64)), too_long_lines)


def _header(head: bytes, skip: int, delimiter: str, path: Path) -> tuple[list[str], int, int] | None:
    """The header's column names, the byte offset just past it and its physical lines; None for
    a file with no header (empty, or blank lines only)."""
    position, line = skip, 1
    while True:
        end = head.find(b"\n", position)
        end = len(head) if end < 0 else end + 1
        text = decode(head[position:end], path, line, position)
        if text.strip():
            break
        if end >= len(head):
            return None
        position, line = end, line + 1
    first = position
    while head.count(b'"', first, end) % 2 and end < len(head):  # a quoted name spanning lines
        nxt = head.find(b"\n", end)
        end = len(head) if nxt < 0 else nxt + 1
    text = decode(head[first:end], path, line, first)
    try:
        names = next(csv.reader([text.rstrip("\r\n")], delimiter=delimiter, strict=True))
    except (csv.Error, StopIteration) as exc:
        raise UnreadableFile(path, f"the header does not parse as {'TSV' if delimiter == chr(9) else 'CSV'} ({exc})", line=line) from None
    return column_names(names), end, line - 1 + head.count(b"\n", first, end)


def _record_cut(data: bytes, force: bool) -> int:
    """The end of the last whole record in `data` (0 if none yet): just past a newline with an
    even number of quotes before it. `data` starts at a record, so a quote still open at its first
    newline is a record longer than `data`, whose end is still to be read; odd counts for
    `_MAX_RECORD_LINES` lines are broken quoting, cut just past the last newline, as is everything
    once `force` (the buffer's bound) holds."""
    last = data.rfind(b"\n")
    if last < 0:
        return 0
    quotes, end = data.count(b'"', 0, last), last
    for _ in range(_MAX_RECORD_LINES):
        if quotes % 2 == 0:
            return end + 1
        previous = data.rfind(b"\n", 0, end)
        if previous < 0:
            return last + 1 if force else 0
        quotes -= data.count(b'"', previous, end)
        end = previous
    return last + 1


def parse_chunk(chunk: bytes, newlines: int, first_line: int, offset: int, names: list[str], delimiter: str,
                path: Path) -> RawRecords:
    """The records of `chunk` (whole records, `newlines` newline bytes, starting at physical line
    `first_line`)."""
    if not chunk.isascii():  # refused here, naming the line, rather than by pyarrow without one
        decode(chunk, path, first_line, offset)
    parsed = _fast(chunk, newlines, names, delimiter)
    if parsed is not None:
        return RawRecords(frame_of_text(dict(zip(names, parsed.columns)), first_line + np.arange(parsed.num_rows)))
    text = decode(chunk, path, first_line, offset)  # from here on the bytes are known to be UTF-8
    exact = _exact(chunk, first_line, names, delimiter)
    if exact is not None:
        return exact
    return _resync(text, first_line, names, delimiter)


def _options(names: list[str], delimiter: str) -> dict:
    return {
        "read_options": pa_csv.ReadOptions(column_names=names, use_threads=True),
        "parse_options": pa_csv.ParseOptions(delimiter=delimiter, quote_char='"', double_quote=True, escape_char=False,
                                             newlines_in_values=True, ignore_empty_lines=True),
        "convert_options": pa_csv.ConvertOptions(column_types=dict.fromkeys(names, pa.string()), strings_can_be_null=False,
                                                 quoted_strings_can_be_null=False, check_utf8=True),
    }


def _parse(data: bytes, names: list[str], delimiter: str) -> pa.Table | None:
    if not data:
        return pa.table({name: pa.array([], pa.string()) for name in names})
    try:
        return pa_csv.read_csv(pa.py_buffer(data), **_options(names, delimiter))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # not UTF-8, or a parse error
        return None


def _fast(chunk: bytes, newlines: int, names: list[str], delimiter: str) -> pa.Table | None:
    """pyarrow's parse when it accounts for every line of the chunk: one record per line.

    pyarrow skips blank lines and joins the lines of a quoted field, so as many records as lines
    means neither is there, with one exception the scans below rule out: a bare carriage return,
    which pyarrow takes for a line break, adding a record that a blank line would take away. A
    chunk without a carriage return (one `memchr`) needs no scan."""
    if b"\r" in chunk and (chunk.startswith((b"\n", b"\r\n")) or b"\n\n" in chunk or b"\n\r\n" in chunk):
        return None  # blank lines: records and lines differ
    table = _parse(chunk, names, delimiter)  # a row with the wrong number of fields raises: None
    if table is None or table.num_rows != newlines + (not chunk.endswith(b"\n")):
        return None
    return table


def _exact(chunk: bytes, first_line: int, names: list[str], delimiter: str) -> RawRecords | None:
    """Records found by a vectorised scan, when every quote is where RFC 4180 allows it."""
    data = np.frombuffer(chunk, np.uint8)
    quotes = np.flatnonzero(data == _QUOTE)
    if len(quotes) % 2 or not _quotes_well_placed(data, quotes, ord(delimiter)):
        return None
    newlines = np.flatnonzero(data == _NEWLINE)
    ends = newlines[np.searchsorted(quotes, newlines) % 2 == 0]  # newlines outside quoted fields
    if not len(ends) or ends[-1] != len(data) - 1:
        ends = np.r_[ends, len(data)]
    starts = np.r_[0, ends[:-1] + 1]
    stops = ends - (ends > starts) * (data[np.maximum(ends - 1, 0)] == _RETURN)  # without a trailing \r
    lines = first_line + np.searchsorted(newlines, starts)
    blank = stops <= starts
    delimiters = np.flatnonzero(data == ord(delimiter))
    outside = delimiters[np.searchsorted(quotes, delimiters) % 2 == 0]
    fields = np.bincount(np.searchsorted(starts, outside, side="right") - 1, minlength=len(starts)) + 1
    good = ~blank & (fields == len(names))
    bad = np.flatnonzero(~blank & ~good)
    kept = np.repeat(good, ends - starts + 1)[: len(data)]
    table = _parse(data[kept].tobytes(), names, delimiter)
    if table is None or table.num_rows != int(good.sum()):
        return None
    unparsable = [(int(lines[i]), f"expected {len(names)} fields, found {int(fields[i])}",
                   chunk[starts[i]:stops[i]].decode("utf-8")) for i in bad]
    return RawRecords(frame_of_text(dict(zip(names, table.columns)), lines[good]), unparsable)


def _quotes_well_placed(data: np.ndarray, quotes: np.ndarray, delimiter: int) -> bool:
    """Whether the quotes pair up as RFC 4180 quoting: each opening quote starts a field (or
    doubles the quote just before it), each closing quote ends one (or is doubled)."""
    if not len(quotes):
        return True
    opening, closing = quotes[0::2], quotes[1::2]
    before = np.where(opening > 0, data[np.maximum(opening - 1, 0)], _NEWLINE)
    doubled_before = np.isin(opening - 1, closing)
    after = np.where(closing < len(data) - 1, data[np.minimum(closing + 1, len(data) - 1)], _NEWLINE)
    doubled_after = np.isin(closing + 1, opening)
    starts_field = np.isin(before, [delimiter, _NEWLINE]) | doubled_before
    ends_field = np.isin(after, [delimiter, _NEWLINE, _RETURN]) | doubled_after
    return bool(starts_field.all() and ends_field.all())


def _resync(text: str, first_line: int, names: list[str], delimiter: str) -> RawRecords:
    """Record by record with Python's csv module; a bad record is quarantined under its first
    line and parsing restarts at the next line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    feed = [line + "\n" for line in lines]
    rows: list[list[str]] = []
    numbers: list[int] = []
    unparsable: list[tuple[int, str, str]] = []
    i = 0
    while i < len(feed):
        reader = csv.reader(itertools.islice(feed, i, None), delimiter=delimiter, strict=True)
        before = 0
        try:
            for record in reader:
                at, before = i + before, reader.line_num
                if lines[at] in ("", "\r"):
                    continue  # a blank line; `""` is a record (one empty field), as the other paths read it
                if len(record) != len(names):
                    unparsable.append((first_line + at, f"expected {len(names)} fields, found {len(record)}", lines[at].rstrip("\r")))
                    i = at + 1
                    break
                rows.append(record)
                numbers.append(first_line + at)
            else:
                i = len(feed)
        except csv.Error as exc:
            at = i + before
            unparsable.append((first_line + at, f"unparsable line ({exc})", lines[at].rstrip("\r")))
            i = at + 1
    columns = {name: pa.array([row[j] for row in rows], pa.string()) for j, name in enumerate(names)}
    return RawRecords(frame_of_text(columns, np.array(numbers, np.int64)), unparsable)
