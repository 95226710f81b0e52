"""Raw records: any tabular log file read, batch by batch, into polars frames whose rows carry
their physical line numbers.

Every format reader is total: for any bytes it yields rows, quarantines what it cannot parse, or
raises `UnreadableFile` naming the file (and the line and field where that helps). CSV and JSON
values are kept as text, so a malformed value in one row quarantines that row instead of failing
the whole file; Parquet keeps its types where they are usable (`pipeline.logs.parquet_files`).
Text is normalised to Unicode NFC here, once, so that every later comparison of names (a model
against itself, a player twice in a ranking, a duplicate id) sees one spelling.

Columns whose names start with `\\x00` are the readers' own: the line number (`LINE`), and per
raw column `x` the markers `NESTED + x` (true where the value is a list or an object) and
`INVALID + x` (why a value cannot be used at all, e.g. bytes that are not UTF-8 text). The kinds'
triage (`pipeline.logs.triage`) quarantines a row whose marker is set in a column it reads.

Line numbers: CSV counts physical lines (the header is line 1; a quoted field spanning lines
counts all its lines; blank lines are skipped but counted); JSONL counts physical lines; a JSON
array and Parquet count records from 1.
"""

from __future__ import annotations

import logging
import os
import stat
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from pipeline.terminal import visible

LINE = "\x00line"
NESTED = "\x00nested:"
INVALID = "\x00invalid:"

TABULAR_SUFFIXES = (".csv", ".tsv", ".json", ".jsonl", ".ndjson", ".parquet")
LINE_SUFFIXES = (".csv", ".tsv", ".jsonl", ".ndjson")  # formats where appending lines appends records


class UnreadableFile(ValueError):
    """The file as a whole cannot be read (missing, unknown format, not text, not parseable at all).

    `str()` is one line: `<file>: line <n>, field <f>: <reason>` (line and field when known), the
    file's name with its control characters made visible (a newline in it does not end the line)."""

    def __init__(self, path: Path | str, reason: str, *, line: int | None = None, field: str | None = None):
        where = ", ".join(p for p in (f"line {line}" if line is not None else "", f"field {field!r}" if field else "") if p)
        super().__init__(f"{visible(path)}: {where + ': ' if where else ''}{reason}")
        self.path = str(path)
        self.reason = reason
        self.line = line
        self.field = field


_SPECIAL_FILES = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
                  (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def check_regular_file(path: Path | str) -> None:
    """Raise `UnreadableFile` if `path` (or what its links lead to) exists but is not a regular
    file: reading a FIFO waits for a writer forever, and a device such as /dev/zero never ends.
    A missing file raises the `OSError` of `os.stat`."""
    mode = Path(path).stat().st_mode
    for test, what in _SPECIAL_FILES:
        if test(mode):
            raise UnreadableFile(path, f"not a regular file but {what}: vase reads log files only")


def internal(name: str) -> bool:
    """Whether a frame column is the readers' own (line numbers, markers), not a column of the file."""
    return name.startswith("\x00")


@dataclass(frozen=True)
class RawRecords:
    """Rows of one file (or of one batch of a big file) with a `LINE` column, plus the records
    that could not be parsed: (line, reason, raw text)."""

    frame: pl.DataFrame
    unparsable: list[tuple[int, str, str]] = field(default_factory=list)

    @property
    def rows_in(self) -> int:
        return self.frame.height + len(self.unparsable)

    @property
    def columns(self) -> list[str]:
        """The file's columns (internal columns left out)."""
        return [c for c in self.frame.columns if not internal(c)]

    @classmethod
    def concat(cls, batches: Sequence[RawRecords]) -> RawRecords:
        frames = [b.frame for b in batches if b.frame.width]
        frame = pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame(schema={LINE: pl.Int64})
        return cls(frame, [u for b in batches for u in b.unparsable])


def empty_records() -> RawRecords:
    return RawRecords(pl.DataFrame(schema={LINE: pl.Int64}))


def nfc_text(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Strings in Unicode NFC. Text that is all ASCII is NFC already, so only a column with a
    byte above 0x7f pays for the normalisation."""
    if isinstance(values, pa.ChunkedArray):
        return pa.chunked_array([nfc_text(chunk) for chunk in values.chunks], values.type)
    if not len(values) or values.null_count == len(values):
        return values
    if pa.types.is_dictionary(values.type):
        return pa.DictionaryArray.from_arrays(values.indices, nfc_text(values.dictionary))
    if ascii_only(values):
        return values
    return pl.from_arrow(values).str.normalize("NFC").to_arrow().cast(values.type)


def ascii_only(values: pa.Array) -> bool:
    """Whether the data buffer of a string or binary array (not a view) holds ASCII bytes only: then
    its text is valid UTF-8 and in NFC. One reduction over the bytes, no temporary array."""
    kind = values.type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind) or pa.types.is_large_binary(kind)):
        return False  # views keep short values inline, beside their data buffers
    data = values.buffers()[2]
    return data is None or not data.size or int(np.frombuffer(data, np.uint8).max()) < 0x80


def nfc(name: str) -> str:
    return unicodedata.normalize("NFC", name)


def column_names(names: Sequence[str]) -> list[str]:
    """Header names stripped of surrounding whitespace and in NFC; a repeated name gets `#2`, `#3`
    (the triage refuses a file whose repeated name is one it reads)."""
    seen: dict[str, int] = {}
    out = []
    for raw in names:
        name = nfc(str(raw)).strip()
        if internal(name):  # a file's column never passes for one of the readers' own
            name = "\\x00" + name[1:]
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out


def frame_of_text(columns: Mapping[str, pa.Array], lines: np.ndarray) -> pl.DataFrame:
    """A raw frame from text columns (NFC-normalised here) and their line numbers."""
    data = {name: pl.from_arrow(nfc_text(values)) for name, values in columns.items()}
    line = pl.Series(LINE, np.asarray(lines, dtype=np.int64))
    if not data:  # records without fields (`{}`): rows all the same
        return line.to_frame()
    return pl.DataFrame({name: series.cast(pl.String) for name, series in data.items()}).with_columns(line)


@dataclass(frozen=True)
class FileStart:
    """Where to start reading a line-based file that continues an earlier one: the byte offset
    just past the earlier file's end, and the physical lines before it (the header included)."""

    offset: int
    lines: int


MAX_RECORD_BYTES = 16 << 20  # a line of CSV, TSV or JSONL longer than this is quarantined unread: the readers
# stream a file in bounded memory, and one enormous line would otherwise be held whole (a 256 MiB line took 2.5 GB)
_SKIP_BYTES = 8 << 20
_PREVIEW_CHARS = 200


def skip_line(handle) -> int:
    """Read past the end of the current line (its newline included) in bounded pieces, and leave
    the file just after it; the bytes skipped. A regular file's handle (the readers check that)."""
    skipped = 0
    while piece := handle.read(_SKIP_BYTES):
        end = piece.find(b"\n")
        if end >= 0:
            handle.seek(end + 1 - len(piece), os.SEEK_CUR)
            return skipped + end + 1
        skipped += len(piece)
    return skipped


def too_long(path: Path | str, line: int, start: bytes, size: int) -> tuple[int, str, str]:
    """The quarantine entry (line, reason, the line's first characters) of a line of `size` bytes
    past `MAX_RECORD_BYTES`, logged as one line naming the file and the line."""
    reason = f"the line is {size:,} bytes long, past the limit of {MAX_RECORD_BYTES:,} bytes a record: not read"
    logging.getLogger(__name__).warning("%s: line %d: %s", path, line, reason)
    return line, reason, start[:_PREVIEW_CHARS * 4].decode("utf-8", "replace")[:_PREVIEW_CHARS] + "..."
