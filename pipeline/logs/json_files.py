"""JSON files: a JSON array of records, or JSON lines (one object per line), read totally.

Every value is kept as text; a list or an object is kept as its JSON text and marked nested
(`NESTED`), for the kinds that read nested values (reviews) and the triage of those that do not.
A JSON line that does not parse, for any reason (syntax, nesting deeper than the parser allows,
an integer literal too long for Python, a lone surrogate `\\ud800` that is not Unicode text), is
quarantined under its line; the others are kept. A JSON array is parsed record by record, so its
records carry their physical lines too, but an array that does not parse is refused whole: past a
syntax error its records cannot be told apart. Integer literals of more than `MAX_INT_DIGITS`
digits are read as floats (they are inf), so a 5,000-digit weight is quarantined as not finite.
A record with a key twice in one object (at any depth) is quarantined: which value was meant
cannot be known.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl

from pipeline.logs.encoding import bom_length, decode, not_utf8
from pipeline.logs.records import (MAX_RECORD_BYTES, NESTED, FileStart, RawRecords, UnreadableFile, column_names, empty_records,
                                   frame_of_text, skip_line, too_long)

BATCH_RECORDS = 200_000
MAX_INT_DIGITS = 4_000  # below Python's int-from-text limit of 4,300 digits


def _number(literal: str) -> int | float:
    return int(literal) if len(literal.lstrip("-")) <= MAX_INT_DIGITS else float(literal)


def _decoder() -> tuple[json.JSONDecoder, list[str]]:
    """A JSON decoder, and the list where it notes each key repeated within one object of what it
    decodes (clear it before each record): Python would keep the last value silently, and which
    one the log meant (`{"model_a": "x", "model_a": "y"}`) cannot be known, so the record is quarantined."""
    repeated: list[str] = []

    def pairs(items: list[tuple[str, object]]) -> dict:
        record = dict(items)
        if len(record) != len(items):
            seen: set[str] = set()
            repeated.extend(key for key, _ in items if key in seen or seen.add(key))
        return record

    return json.JSONDecoder(parse_int=_number, object_pairs_hook=pairs), repeated


def _problem(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {exc.msg} (column {exc.colno})"
    if isinstance(exc, RecursionError):
        return "invalid JSON: nested deeper than the parser allows"
    return f"invalid JSON: {exc}"


def _lone_surrogate(value: object) -> str | None:
    """The first string (or key) in `value` holding a lone UTF-16 surrogate, which no UTF-8 text can."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return item
        elif isinstance(item, dict):
            stack += list(item.keys()) + list(item.values())
        elif isinstance(item, list):
            stack += item
    return None


def _check_object(obj: object, text: str, repeated: list[str]) -> str | None:
    """Why a parsed record cannot be kept, or None (`repeated`: its keys repeated within an object)."""
    if not isinstance(obj, dict):
        return "a record must be a JSON object"
    if repeated:
        return f"the key {repeated[0]!r} appears twice in one object: which value is meant cannot be known"
    if "\\ud" in text.lower() and (bad := _lone_surrogate(obj)) is not None:
        at = next(i for i, ch in enumerate(bad) if 0xD800 <= ord(ch) <= 0xDFFF)
        return f"a lone surrogate \\u{ord(bad[at]):04x} in a string: not Unicode text"
    return None


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return str(value)


def frame_of_objects(objects: list[tuple[int, dict]], unparsable: list[tuple[int, str, str]]) -> RawRecords:
    """Records (line, object) as raw records: values as text, nested values marked."""
    raw_keys: dict[str, None] = {}
    for _, obj in objects:
        raw_keys.update(dict.fromkeys(obj))
    names = dict(zip(raw_keys, column_names(list(raw_keys))))
    columns = {}
    markers = {}
    for key, name in names.items():
        values = [obj.get(key) for _, obj in objects]
        columns[name] = pl.Series(name, [_text(v) for v in values], dtype=pl.String).to_arrow()
        nested = [isinstance(v, (list, dict)) for v in values]
        if any(nested):
            markers[NESTED + name] = nested
    frame = frame_of_text(columns, np.array([line for line, _ in objects], np.int64))
    if markers:
        frame = frame.with_columns(pl.Series(name, flags, dtype=pl.Boolean) for name, flags in markers.items())
    return RawRecords(frame, unparsable)


def read_lines(path: Path, start: FileStart | None = None) -> Iterator[RawRecords]:
    """JSON lines, in batches; blank lines are skipped (and counted)."""
    with path.open("rb") as handle:
        if start is None:
            handle.seek(bom_length(handle.read(4), path))
            line_no, offset = 0, handle.tell()
        else:
            handle.seek(start.offset)
            line_no, offset = start.lines, start.offset
        objects: list[tuple[int, dict]] = []
        bad: list[tuple[int, str, str]] = []
        decoder, repeated = _decoder()
        while raw := handle.readline(MAX_RECORD_BYTES + 1):
            line_no += 1
            if len(raw) > MAX_RECORD_BYTES and not raw.endswith(b"\n"):  # past the limit: skipped unread
                size = len(raw) + skip_line(handle)
                bad.append(too_long(path, line_no, raw, size))
                offset += size
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise not_utf8(raw, exc, path, line_no, offset) from None
            offset += len(raw)
            stripped = text.strip()
            if not stripped:
                continue
            repeated.clear()
            try:
                obj = decoder.decode(stripped)
            except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
                bad.append((line_no, _problem(exc), stripped))
                continue
            if (problem := _check_object(obj, stripped, repeated)) is not None:
                bad.append((line_no, problem, stripped))
                continue
            objects.append((line_no, obj))
            if len(objects) >= BATCH_RECORDS:
                yield frame_of_objects(objects, bad)
                objects, bad = [], []
        if objects or bad:
            yield frame_of_objects(objects, bad)


def read_json(path: Path) -> Iterator[RawRecords]:
    """A `.json` file: an array of records, or JSON lines if it does not start with `[`."""
    data = path.read_bytes()
    skip = bom_length(data[:4], path)
    text = decode(data[skip:], path, 1, skip)
    body = len(text) - len(text.lstrip())
    if body == len(text):
        return iter([empty_records()])
    if text[body] != "[":
        return read_lines(path)
    return _read_array(text, body, path)


def _read_array(text: str, position: int, path: Path) -> Iterator[RawRecords]:
    """Records of a JSON array, each with the physical line it starts on."""
    line, counted = 1, 0

    def line_of(index: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, index)
        counted = index
        return line

    def skip_space(index: int) -> int:
        while index < len(text) and text[index] in " \t\r\n":
            index += 1
        return index

    def fail(index: int, reason: str) -> UnreadableFile:
        return UnreadableFile(path, reason, line=line_of(index))

    objects: list[tuple[int, dict]] = []
    bad: list[tuple[int, str, str]] = []
    decoder, repeated = _decoder()
    index = skip_space(position + 1)
    if index < len(text) and text[index] == "]":
        index = len(text)
    while index < len(text):
        repeated.clear()
        try:
            obj, end = decoder.raw_decode(text, index)
        except (ValueError, RecursionError) as exc:
            raise fail(index, _problem(exc).replace("(column", "(record starting at column")) from None
        record = text[index:end]
        if (problem := _check_object(obj, record, repeated)) is not None:
            bad.append((line_of(index), problem, record[:10_000]))
        else:
            objects.append((line_of(index), obj))
        index = skip_space(end)
        if index < len(text) and text[index] == ",":
            index = skip_space(index + 1)
        elif index < len(text) and text[index] == "]":
            if skip_space(index + 1) < len(text):
                raise fail(index, "invalid JSON: text after the closing ']'")
            index = len(text)
        else:
            raise fail(index, "invalid JSON: expected ',' or ']' after a record")
        if len(objects) >= BATCH_RECORDS:
            yield frame_of_objects(objects, bad)
            objects, bad = [], []
    if not text.rstrip().endswith("]"):
        raise fail(len(text), "invalid JSON: the array is not closed (a truncated file?)")
    yield frame_of_objects(objects, bad)

