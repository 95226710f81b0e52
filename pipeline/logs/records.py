"""Raw records: any tabular log file read into a polars frame, each row carrying its line number.

CSV and JSON values are kept as strings, so a malformed value in one row quarantines that row
instead of failing the whole file. Nested JSON values (lists, objects) are kept as JSON text for
the kind that needs them. Parquet keeps its types. Line numbers: CSV data rows start at line 2
(the header is line 1; quoted fields spanning lines are not supported); JSONL counts physical
lines; a JSON array and Parquet count records from 1.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

LINE = "__line__"

TABULAR_SUFFIXES = (".csv", ".tsv", ".json", ".jsonl", ".ndjson", ".parquet")


class UnreadableFile(ValueError):
    """The file as a whole cannot be read (missing, unknown format, not parseable at all)."""

    def __init__(self, path: Path | str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


@dataclass(frozen=True)
class RawRecords:
    """Rows of one file with a `__line__` column, plus the lines that could not be parsed."""

    frame: pl.DataFrame
    unparsable: list[tuple[int, str, str]]  # (line, reason, raw text)

    @property
    def rows_in(self) -> int:
        return self.frame.height + len(self.unparsable)


def _scalar_text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _frame(objects: list[tuple[int, dict]]) -> pl.DataFrame:
    columns: dict[str, None] = {}
    for _, obj in objects:
        columns.update(dict.fromkeys(obj))
    data = {name: [_scalar_text(obj.get(name)) for _, obj in objects] for name in columns}
    data[LINE] = [line for line, _ in objects]
    schema = {name: pl.String for name in columns} | {LINE: pl.Int64}
    return pl.DataFrame(data, schema=schema)


def records_of_objects(objects: Sequence[dict]) -> RawRecords:
    """In-memory records (dicts, as a JSON array holds them) as raw records numbered from 1."""
    return RawRecords(_frame(list(enumerate(objects, start=1))), [])


def _read_json_lines(path: Path) -> RawRecords:
    objects: list[tuple[int, dict]] = []
    bad: list[tuple[int, str, str]] = []
    with path.open(encoding="utf-8") as handle:
        for line_no, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                bad.append((line_no, f"invalid JSON: {exc.msg}", text.rstrip("\n")))
                continue
            if not isinstance(obj, dict):
                bad.append((line_no, "a JSON line must be an object", text.rstrip("\n")))
                continue
            objects.append((line_no, obj))
    return RawRecords(_frame(objects), bad)


def _read_json_array(path: Path) -> RawRecords:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UnreadableFile(path, f"invalid JSON at line {exc.lineno}: {exc.msg}") from exc
    if not isinstance(data, list):
        raise UnreadableFile(path, "a .json log must hold an array of records")
    objects, bad = [], []
    for number, obj in enumerate(data, start=1):
        if isinstance(obj, dict):
            objects.append((number, obj))
        else:
            bad.append((number, "a record must be a JSON object", json.dumps(obj)))
    return RawRecords(_frame(objects), bad)


def _looks_like_json_array(path: Path) -> bool:
    with path.open(encoding="utf-8") as handle:
        head = handle.read(4096).lstrip()
    return head.startswith("[")


def read_records(path: str | Path) -> RawRecords:
    """Read a CSV, TSV, JSON array, JSONL or Parquet file into raw records."""
    path = Path(path)
    if not path.is_file():
        raise UnreadableFile(path, "no such file")
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        try:
            frame = pl.read_csv(
                path,
                infer_schema=False,
                separator="\t" if suffix == ".tsv" else ",",
            )
        except (pl.exceptions.ComputeError, pl.exceptions.NoDataError) as exc:
            raise UnreadableFile(path, f"not a readable CSV file ({exc})") from exc
        return RawRecords(frame.with_row_index(LINE, offset=2).with_columns(pl.col(LINE).cast(pl.Int64)), [])
    if suffix in (".jsonl", ".ndjson"):
        return _read_json_lines(path)
    if suffix == ".json":
        return _read_json_array(path) if _looks_like_json_array(path) else _read_json_lines(path)
    if suffix == ".parquet":
        try:
            frame = pl.read_parquet(path)
        except Exception as exc:  # polars raises several error types for corrupt files
            raise UnreadableFile(path, f"not a readable Parquet file ({exc})") from exc
        return RawRecords(frame.with_row_index(LINE, offset=1).with_columns(pl.col(LINE).cast(pl.Int64)), [])
    raise UnreadableFile(path, f"unknown format {suffix!r}; expected one of {', '.join(TABULAR_SUFFIXES)}")
