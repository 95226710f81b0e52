"""Tabular files by format: the suffix picks the reader (`delimited`, `json_files`,
`parquet_files`); each yields raw records (`pipeline.logs.records`) in batches of bounded size."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from pipeline.logs import delimited, json_files, parquet_files
from pipeline.logs.records import TABULAR_SUFFIXES, FileStart, RawRecords, UnreadableFile


def batches(path: str | Path, *, start: FileStart | None = None) -> Iterator[RawRecords]:
    """The raw records of a tabular file, in batches of bounded size, in file order."""
    path = Path(path)
    if not path.is_file():
        raise UnreadableFile(path, "no such file")
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return delimited.read_batches(path, "\t" if suffix == ".tsv" else ",", start)
    if suffix in (".jsonl", ".ndjson"):
        return json_files.read_lines(path, start)
    if suffix == ".json":
        return json_files.read_json(path)
    if suffix == ".parquet":
        return parquet_files.read_batches(path)
    raise UnreadableFile(path, f"unknown format {suffix!r}; expected one of {', '.join(TABULAR_SUFFIXES)}")


def read_records(path: str | Path) -> RawRecords:
    """A whole tabular file (CSV, TSV, JSON array, JSONL or Parquet) as raw records."""
    return RawRecords.concat(list(batches(path)))


def records_of_objects(objects: Sequence[dict]) -> RawRecords:
    """In-memory records (dicts, as a JSON array holds them) as raw records numbered from 1."""
    return json_files.frame_of_objects(list(enumerate(objects, start=1)), [])
