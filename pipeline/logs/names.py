"""Names and ids: one spelling per name, and nothing that could pass for another name.

The format readers put all text in Unicode NFC and the kinds strip surrounding whitespace, so a
name typed with a combining accent and with a precomposed one is one agent. Here, after a kind
has read a file, every column whose values go into a store dictionary (`LogKind.ids`) and every
column of the record id (`LogKind.record_id`), given by the file or of its content, is checked
(a reader's placeholder `<file name>:<line>`, if ever handed on, is not: a file's name may hold
any character), and a row is quarantined when a value

- holds a control character (`Cc`), a format character (`Cf`: zero-width spaces and joiners,
  bidirectional overrides and isolates, soft hyphens) or a line or paragraph separator: such a
  name prints like another one, or not at all;
- is longer than `MAX_NAME` characters (names of agents and judges) or `MAX_ID` (ids and prompts).

Names that differ only in case, width, separators or a common Cyrillic or Greek homoglyph
(`Model-A`, `model_a`, `mоdel_a` with a Cyrillic `о`) are kept apart, as the file spells them,
but reported (`LookAlikes`): merging them silently could join two agents, and a report lets the
team fix the log. The homoglyphs are the common ones of Unicode's confusables list, not all of
it (UTS #39).
"""

from __future__ import annotations

import json
import unicodedata

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.logs.triage import ReadResult, quarantine_rows

MAX_NAME = 256  # characters in the name of an agent or a judge
MAX_ID = 4_096  # characters in an id or a prompt
FORBIDDEN_CATEGORIES = ("Cc", "Cf", "Zl", "Zp")  # Unicode categories no name may hold (see above)
FORBIDDEN = "[" + "".join(rf"\p{{{category}}}" for category in FORBIDDEN_CATEGORIES) + "]"
NAME_DICTIONARIES = ("agents", "judges")


def _plain_ascii(values: pa.Array) -> bool:
    """Whether every byte of a text array's data is printable ASCII (nothing to forbid)."""
    buffers = values.buffers() if pa.types.is_string(values.type) or pa.types.is_large_string(values.type) else []
    data = buffers[2] if len(buffers) > 2 else None
    if data is None:
        return False
    data = np.frombuffer(data, np.uint8)  # two reductions, no temporary arrays: 5x faster than a mask
    return not len(data) or (int(data.min()) >= 0x20 and int(data.max()) < 0x7F)


def _all_fine(values: pa.Array, limit: int) -> bool:
    """The common case, decided from the buffers alone: printable ASCII, no value longer than
    `limit` bytes (so not longer than `limit` characters)."""
    if not _plain_ascii(values):
        return False
    offsets = np.frombuffer(values.buffers()[1], np.int64 if pa.types.is_large_string(values.type) else np.int32)
    offsets = offsets[values.offset: values.offset + len(values) + 1]
    return len(offsets) < 2 or int(np.diff(offsets).max()) <= limit


def _problems(values: pa.Array, field: str, limit: int) -> pl.Series:
    """Per value, why it cannot be a name or an id (null if it can)."""
    series = pl.from_arrow(values).cast(pl.String)
    plain_ascii = _plain_ascii(values)
    frame = pl.DataFrame({"v": series})
    forbidden = pl.lit(False) if plain_ascii else pl.col("v").str.contains(FORBIDDEN)
    first = pl.col("v").str.extract("(" + FORBIDDEN + ")", 1).str.encode("hex")
    return frame.select(
        pl.when(forbidden)
        .then(pl.format("{} contains a control or format character (UTF-8 bytes {}), which would print like another name",
                        pl.lit(field), first))
        .when(pl.col("v").str.len_chars() > limit)
        .then(pl.lit(f"{field} is longer than {limit:,} characters"))
        .otherwise(None)
    ).to_series()


def check_names(result: ReadResult, ids: dict[str, str], record_id: tuple[str, ...]) -> ReadResult:
    """`result` with the rows holding an unusable name or id moved to its quarantine."""
    table = result.table
    if not table.num_rows:
        return result
    limits = {column: MAX_NAME if dictionary in NAME_DICTIONARIES else MAX_ID for column, dictionary in ids.items()}
    if result.keyed:
        limits |= {column: MAX_ID for column in record_id if column not in limits}
    reason = np.full(table.num_rows, None, object)
    blamed = np.full(table.num_rows, None, object)
    for column, limit in limits.items():
        values = table.column(column).combine_chunks()
        if pa.types.is_list(values.type):
            row = np.repeat(np.arange(len(values)), pc.list_value_length(values).fill_null(0).to_numpy())
            values = values.flatten()
        else:
            row = np.arange(len(values))
        if pa.types.is_dictionary(values.type):  # each distinct value checked once
            if _all_fine(values.dictionary, limit):
                continue
            problems = _problems(values.dictionary, column, limit).to_numpy()[pc.fill_null(values.indices, 0).to_numpy()]
            problems[values.is_null().to_numpy(zero_copy_only=False)] = None
        elif _all_fine(values, limit):
            continue
        else:
            problems = _problems(values, column, limit).to_numpy()
        bad = np.flatnonzero(problems != None)  # noqa: E711 (an object array)
        rows, first = np.unique(row[bad], return_index=True)
        new = reason[rows] == None  # noqa: E711
        reason[rows[new]] = problems[bad[first[new]]]
        blamed[rows[new]] = column
    bad = np.flatnonzero(reason != None)  # noqa: E711
    if not len(bad):
        return result
    records = [json.dumps(r, sort_keys=True, default=str, ensure_ascii=False) for r in table.take(bad).to_pylist()]
    quarantined = quarantine_rows(result.source, result.lines[bad].tolist(), blamed[bad].tolist(), reason[bad].tolist(), records)
    keep = np.flatnonzero(reason == None)  # noqa: E711
    return ReadResult(result.kind, result.source, table.take(keep), pa.concat_tables([result.quarantined, quarantined]),
                      result.rows_in, result.lines[keep], result.keyed)


_HOMOGLYPHS = str.maketrans(
    "\u0430\u0432\u0435\u0456\u0458\u043a\u043c\u043d\u043e\u0440\u0441\u0442\u0443\u0445\u0455\u0501"
    "\u03b1\u03bf\u03c1\u03c5\u03ba\u03bd\u03c4\u03b9",
    "abeijkmhopctyxsd" "aopukvti",
)
_SEPARATORS = str.maketrans("", "", " \t-_.")


def skeleton(name: str) -> str:
    """What a name looks like: compatibility-normalised, case-folded, common Cyrillic and Greek
    homoglyphs as their Latin twins, without spaces, hyphens, underscores and dots."""
    return unicodedata.normalize("NFKC", name).casefold().translate(_HOMOGLYPHS).translate(_SEPARATORS)


class LookAlikes:
    """The names of a dictionary by skeleton: `add` says which new names look like a known one."""

    def __init__(self, names: list[str]):
        self._by_skeleton: dict[str, str] = {}
        self.add(names)

    def add(self, names: list[str]) -> list[tuple[str, str]]:
        """(new name, the known name it looks like) for each of `names` that looks like another."""
        found = []
        for name in names:
            known = self._by_skeleton.setdefault(skeleton(name), name)
            if known != name:
                found.append((name, known))
        return found
