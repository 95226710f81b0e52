"""Parquet files, read by batches of row groups, with every Arrow type made usable or marked.

What is safely castable is cast: dictionary-encoded columns are decoded (but see below), binary
that is UTF-8 text becomes text, decimals become floats, dates and timestamps of any unit or time
zone become UTC microsecond timestamps. What is not is marked, value by value, and quarantined if
the kind reads that column: binary that is not UTF-8 (`INVALID`), dates beyond the years 1-9999,
durations and times of day, which are not dates (`INVALID`), lists, structs and maps (`NESTED`,
kept as JSON text for the kinds that read nested values). A file whose footer or pages cannot be
read is refused.

Text columns that the file stores as small dictionaries (`label_columns`: names of models, winners,
judges, few distinct values over many rows) are read as dictionary arrays and handed on as polars
categoricals, so that their text is checked, normalised and cleaned once per distinct value.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.logs.records import INVALID, LINE, NESTED, RawRecords, UnreadableFile, ascii_only, column_names, nfc_text

BATCH_ROWS = 1_000_000
MIN_MICROS = -62_135_596_800_000_000  # 0001-01-01T00:00:00Z
MAX_MICROS = 253_402_300_799_999_999  # 9999-12-31T23:59:59.999999Z
_PER_MICRO = {"s": 1_000_000, "ms": 1_000, "us": 1}
OUT_OF_RANGE = "a date outside the years 1 to 9999"
# Each text type's binary of the same layout, to read its bytes unchecked (large_string is what polars writes)
_BYTES_OF_TEXT = {pa.string(): pa.binary(), pa.large_string(): pa.large_binary(), pa.string_view(): pa.binary_view()}


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:300]


def read_batches(path: Path) -> Iterator[RawRecords]:
    try:
        parquet = pq.ParquetFile(path)
        names = column_names(parquet.schema_arrow.names)
        if labels := label_columns(parquet.metadata):
            parquet = pq.ParquetFile(path, read_dictionary=labels)
    except Exception as exc:  # pyarrow raises several types for a file that is not Parquet or is cut short
        raise UnreadableFile(path, f"not a readable Parquet file ({_one_line(exc)})") from None
    row = 1
    batches = parquet.iter_batches(batch_size=BATCH_ROWS)
    while True:
        try:
            batch = next(batches, None)
        except Exception as exc:  # a corrupt page or column chunk
            raise UnreadableFile(path, f"Parquet data cannot be read ({_one_line(exc)})", line=row) from None
        if batch is None:
            return
        yield _raw(batch, names, row)
        row += batch.num_rows


def label_columns(metadata: pq.FileMetaData, max_bytes_per_value: int = 4) -> list[str]:
    """The top-level text columns whose every column chunk is dictionary-encoded and takes at most
    `max_bytes_per_value` bytes per value, dictionary included: few distinct values over many rows
    (a column of ids, where the dictionary is all the data, or one whose dictionary overflowed
    into plain pages, takes more), which the reader hands on without decoding them row by row."""
    schema, groups = metadata.schema, [metadata.row_group(g) for g in range(metadata.num_row_groups)]
    chosen = []
    for position in range(metadata.num_columns):
        column = schema.column(position)
        if column.max_repetition_level or column.max_definition_level > 1 or column.physical_type != "BYTE_ARRAY" \
                or str(column.logical_type) != "String" or not groups:
            continue
        chunks = [group.column(position) for group in groups]
        if all(chunk.has_dictionary_page and chunk.total_uncompressed_size <= max_bytes_per_value * max(chunk.num_values, 1)
               for chunk in chunks):
            chosen.append(column.path)
    return chosen


def _raw(batch: pa.RecordBatch, names: list[str], first_row: int) -> RawRecords:
    columns: dict[str, pl.Series] = {}
    for name, array in zip(names, batch.columns):
        values, nested, invalid = usable(array)
        columns[name] = pl.from_arrow(values).alias(name)
        if nested is not None:
            columns[NESTED + name] = pl.Series(NESTED + name, nested, dtype=pl.Boolean)
        if invalid is not None:
            columns[INVALID + name] = pl.Series(INVALID + name, invalid, dtype=pl.String)
    frame = pl.DataFrame(list(columns.values())) if columns else pl.DataFrame()
    return RawRecords(frame.with_columns(pl.Series(LINE, np.arange(first_row, first_row + batch.num_rows, dtype=np.int64))))


def usable(array: pa.Array) -> tuple[pa.Array, list[bool] | None, list[str | None] | None]:
    """The array as text, a number, a boolean or a UTC timestamp; plus, where some values are
    nested or unusable, a per-value nested flag and a per-value reason."""
    kind = array.type
    if isinstance(array, pa.ExtensionArray):
        return usable(array.storage)
    if pa.types.is_dictionary(kind):
        words = array.dictionary
        if (pa.types.is_string(words.type) or pa.types.is_large_string(words.type)) and _utf8(words):
            return nfc_text(array), None, None  # each distinct value checked and normalised once
        return usable(array.dictionary_decode())
    if pa.types.is_null(kind):
        return pa.nulls(len(array), pa.string()), None, None
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        if not _utf8(array):
            return _text_of_binary(array.view(_BYTES_OF_TEXT[kind]))
        return nfc_text(array.cast(pa.large_string()) if pa.types.is_string_view(kind) else array), None, None
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind) or pa.types.is_binary_view(kind):
        return _text_of_binary(array)
    if pa.types.is_boolean(kind) or pa.types.is_integer(kind) or pa.types.is_float64(kind) or pa.types.is_float32(kind):
        return array, None, None
    if pa.types.is_floating(kind) or pa.types.is_decimal(kind):
        return pc.cast(array, pa.float64(), safe=False), None, None
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        return _utc_micros(array)
    if pa.types.is_nested(kind):
        values = [None if v is None else json.dumps(v, sort_keys=True, ensure_ascii=False, default=str) for v in array.to_pylist()]
        return nfc_text(pa.array(values, pa.string())), [v is not None for v in values], None
    values = array.to_pylist()  # durations, times of day, intervals, unions: not a name, a number or a date
    return (pa.array([None if v is None else str(v) for v in values], pa.string()), None,
            [None if v is None else f"a {kind} value, not text, a number or a date" for v in values])


def _utf8(text: pa.Array) -> bool:
    """Whether a text array holds UTF-8 (Parquet readers do not check it); ASCII is UTF-8, and
    the check of the bytes' maximum costs a tenth of a full validation."""
    try:
        if pa.types.is_string_view(text.type) or not ascii_only(text):
            text.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _text_of_binary(array: pa.Array) -> tuple[pa.Array, None, list[str | None] | None]:
    try:
        return nfc_text(pc.cast(array, pa.string())), None, None
    except pa.ArrowInvalid:
        pass
    texts, reasons = [], []
    for value in array.to_pylist():
        try:
            texts.append(None if value is None else value.decode("utf-8"))
            reasons.append(None)
        except UnicodeDecodeError as exc:
            texts.append(None)
            reasons.append(f"bytes that are not UTF-8 text (byte 0x{value[exc.start]:02X} at {exc.start})")
    return nfc_text(pa.array(texts, pa.string())), None, reasons


def _utc_micros(array: pa.Array) -> tuple[pa.Array, None, list[str | None] | None]:
    """Dates and timestamps (any unit; with a time zone they hold UTC instants, without one they
    are taken as UTC) as UTC microseconds; values outside the years 1-9999 are marked."""
    kind = array.type
    if pa.types.is_date32(kind):
        raw, per_unit = pc.cast(array, pa.int32()), 86_400_000_000
    elif pa.types.is_date64(kind):
        raw, per_unit = pc.cast(array, pa.int64()), 1_000
    else:
        raw, per_unit = pc.cast(array, pa.int64()), _PER_MICRO.get(kind.unit, 0)
    valid = ~np.asarray(array.is_null().to_numpy(zero_copy_only=False), bool)
    raw = pc.fill_null(raw, 0).to_numpy().astype(np.int64)
    if per_unit:  # s, ms, us, days: check the range before multiplying
        inside = (raw >= MIN_MICROS // per_unit) & (raw <= MAX_MICROS // per_unit)
        micros = np.where(inside, raw, 0) * per_unit
    else:  # ns
        micros = raw // 1_000
        inside = (micros >= MIN_MICROS) & (micros <= MAX_MICROS)
    bad = valid & ~inside
    result = pa.array(np.where(bad, 0, micros), pa.timestamp("us", tz="UTC"), mask=~valid | bad)
    if not bad.any():
        return result, None, None
    return result, None, [OUT_OF_RANGE if b else None for b in bad.tolist()]
