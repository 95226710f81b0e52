"""Exactly once: a record id seen before (earlier in the file, or in an earlier file of the store)
makes its record a duplicate, quarantined naming where the id was first seen.

A kind declares the columns that identify its records across files (`LogKind.record_id`:
battles' `battle_id`, games' `game_id`, ballots' `ballot_id`; reviews have none, as a later review
of a query by the same reviewer replaces the earlier one);
records a file gave no id get ids of their content (`ContentIds`, at the end), checked like any
other, so a re-sorted or cumulative dump is stored once (stores written before them hold
`<file name>:<line>` ids, which identify nothing beyond their file and are not checked). Ids are compared by a 128-bit hash (two seeded 64-bit polars
hashes): the chance that two of 10^9 distinct ids collide is below 10^-20.

`SeenIds` holds the ids seen, as sorted runs of (hash high, hash low, where) with `where` =
file ordinal << 40 | line; runs are merged as they grow, up to `MAX_RUN` entries each: the filter
below spares most needles the search, so more runs cost little, while each doubling of the
largest run costs every id one more merge pass (runs of 2^22 rather than 2^24 ids: the ids of a
2e7-row file added in 1.5 s of CPU instead of 2.8). A
lookup first asks `IdFilter`, a Bloom filter in memory over every id seen (keyed on the high
hash, 10 to 20 bits per id): the needles it rules out (all new ids but 0.04% to 1.3%) are new for
certain, and only the others walk the runs (a galloping search per run). Without it a batch of
random hashes touches every page of every run, so the check of a whole file would cost
O(rows^2 / batch); with it a batch costs O(batch) probes of one cache line each, plus the search
of the duplicates and the filter's few false positives. The filter is not stored: it is built from
the runs on the first lookup and rebuilt twice as big when it fills, so that it costs O(ids) in
all. With fewer than `SMALL_BATCH` ids in all (a file of a million rows into a small store) the
same sorts, merges and searches run in numpy, with no filter: importing numba and its first
compiled call cost about 1 s a process, more than the compiled passes save at that size. The store keeps the runs on disk (`pipeline.store.index`); `read_log` uses them in memory.

The same `where` of each stored row is its ingest position (`INGEST_POSITION`): the store writes
it beside the rows of every kind with record ids, so that the order in which rows were ingested
(file by file, then line by line) survives partitioning; online Elo runs in it where rows have
no timestamp (`pipeline.stats.sequence`).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.logs.triage import ReadResult, distinct_values, quarantine_rows

SEEDS = (0x7A5E_0001, 0x7A5E_0002)
HASHER = f"polars-{pl.__version__}-{sys.byteorder}-{SEEDS[0]:x}-{SEEDS[1]:x}"  # a stored index built by another is rebuilt
NOT_FOUND = np.uint64(2**64 - 1)
LINE_BITS = 40
INGEST_POSITION = "ingest_position"  # the stored column of `where` (int64): file ordinal << 40 | line
MAX_RUN = 1 << 22  # ids: 25 runs for 1e8 ids
FILTER_BITS_PER_ID = 10  # at least: 1.3% of new ids pass the filter (measured; 0.04% at 20 bits, just after a rebuild)
MIN_FILTER_IDS = 1 << 16
SMALL_BATCH = 1 << 21  # ids below which the index's passes run in numpy: importing numba and its first call cost about 1 s
KEY_SEPARATOR = "\x1f"


def key_text(table: pa.Table, columns: tuple[str, ...]) -> pl.Series:
    """The id of each row as one string (several columns joined by a separator no id holds)."""
    frame = pl.from_arrow(table.select(list(columns)))
    if len(columns) == 1:
        return frame.to_series().cast(pl.String)
    return frame.select(pl.concat_str([pl.col(c).cast(pl.String) for c in columns], separator=KEY_SEPARATOR)).to_series()


def key_hashes(keys: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    return keys.hash(SEEDS[0]).to_numpy(), keys.hash(SEEDS[1]).to_numpy()


def id_codes(table: pa.Table, columns: tuple[str, ...]) -> tuple[np.ndarray, pa.Array]:
    """Each row's code into the texts of the ids: a dictionary column's codes as they are (a
    reader's triage encoded a game's id once per distinct value), any other id encoded here. A
    row without an id has the last code, whose text is null (as `key_text` gives it)."""
    column = table.column(columns[0])
    if len(columns) == 1 and pa.types.is_dictionary(column.type):
        encoded = table.select(list(columns)).unify_dictionaries().column(0).combine_chunks()
    else:
        encoded = distinct_values(key_text(table, columns))
    codes = pc.fill_null(encoded.indices.cast(pa.int64()), len(encoded.dictionary)).to_numpy()
    return codes, pa.concat_arrays([encoded.dictionary, pa.nulls(1, encoded.dictionary.type)])


def distinct_ids(table: pa.Table, columns: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The hashes (high, low) of each distinct id of `table`'s rows, the row where each is first,
    and each row's entry among them: the ids of a game's rows are one entry. Only the distinct
    texts are hashed (a game's id once, not once per player), and the rows find their entry by
    their codes (`id_codes`), not by sorting their hashes.

    Entries are grouped by text, which is grouping by both hashes unless two texts share the
    high hash (or a dictionary repeats a text): then the rows are grouped by both hashes, so that
    the entries and their first rows are those of the hashes in every case."""
    codes, texts = id_codes(table, columns)
    rows = len(codes)
    first = np.full(len(texts), rows)
    np.minimum.at(first, codes, np.arange(rows))
    used = np.flatnonzero(first < rows)
    high, low = key_hashes(pl.from_arrow(texts.take(used)).cast(pl.String))
    if pl.Series(high).n_unique() < len(high):
        high, low = key_hashes(key_text(table, columns))
        first, entry = np.unique(np.stack([high, low]), axis=1, return_index=True, return_inverse=True)[1:]
        return high[first], low[first], first, entry.ravel()
    entry_of_code = np.empty(len(texts), np.int64)  # unused codes are never read
    entry_of_code[used] = np.arange(len(used))
    return high, low, first[used], entry_of_code[codes]


def where(file: int, line: np.ndarray) -> np.ndarray:
    return (np.uint64(file) << np.uint64(LINE_BITS)) | np.asarray(line, np.uint64)


def ingest_positions(file: int, lines: np.ndarray) -> pa.Array:
    """The `INGEST_POSITION` column of rows read from `lines` of file ordinal `file`."""
    lines = np.asarray(lines, np.int64)
    if len(lines) and (lines.min() < 0 or lines.max() >> LINE_BITS or file >> (63 - LINE_BITS)):
        raise ValueError(f"ingest position out of range: file ordinal {file}, lines {lines.min()}..{lines.max()}")
    return pa.array(where(file, lines).astype(np.int64))


def file_of(where_: int) -> int:
    return int(where_) >> LINE_BITS


def line_of(where_: int) -> int:
    return int(where_) & ((1 << LINE_BITS) - 1)


def sort_order(values: np.ndarray) -> np.ndarray | None:
    """The stable order that sorts hashes `values`, or None if they are sorted already (a check
    costs a hundredth of a sort)."""
    if len(values) < 2 or not np.any(values[1:] < values[:-1]):
        return None
    return id_order(values)


def id_order(keys: np.ndarray) -> np.ndarray:
    """`pipeline.sorted_merge.hash_order` (the stable order of hashes `keys`), by numpy's stable sort
    for a small batch: the same order, without importing numba (~1 s) for a small file."""
    if len(keys) < SMALL_BATCH:
        return np.argsort(np.asarray(keys, np.uint64), kind="stable")
    from pipeline.sorted_merge import hash_order as compiled_order  # numba is imported on first use only

    return compiled_order(keys)


@dataclass
class Run:
    """Ids sorted by their high hash: rows 0, 1, 2 of `data` are high, low and where."""

    data: np.ndarray  # (3, n) uint64, maybe memory-mapped

    @classmethod
    def of(cls, high: np.ndarray, low: np.ndarray, where_: np.ndarray) -> Run:
        order = sort_order(high)
        data = np.empty((3, len(high)), np.uint64)  # each column gathered (or copied) once, into its row
        for row, values in zip(data, (high, low, where_)):
            if order is None:
                row[:] = values
            else:
                np.take(np.asarray(values, np.uint64), order, out=row)
        return cls(data)

    def __len__(self) -> int:
        return self.data.shape[1]

    def find(self, high: np.ndarray, low: np.ndarray) -> np.ndarray:
        """`where` of each (high, low) in this run, NOT_FOUND if absent."""
        return SeenIds([self]).search(high, low)


def search_run(run: np.ndarray, high: np.ndarray, low: np.ndarray, found: np.ndarray) -> None:
    """`pipeline.sorted_merge.find_sorted` by numpy's binary search, for needles in any order: for
    each (high, low) still NOT_FOUND, `where` of the first id of `run` with that high and low hash."""
    pending = np.flatnonzero(found == NOT_FOUND)
    first = np.searchsorted(run[0], high[pending], "left")
    count = np.searchsorted(run[0], high[pending], "right") - first
    one = np.flatnonzero(count == 1)
    hit = one[run[1][first[one]] == low[pending[one]]]
    found[pending[hit]] = run[2][first[hit]]
    for i in np.flatnonzero(count > 1).tolist():  # ids sharing a high hash: rare
        same = np.flatnonzero(run[1][first[i]:first[i] + count[i]] == low[pending[i]])
        if len(same):
            found[pending[i]] = run[2][first[i] + same[0]]


def merge(older: Run, newer: Run, out: np.ndarray | None = None) -> Run:
    """One run of the ids of two, ordered as a stable sort of their concatenation would order
    them, into `out` (shape (3, n): a memory-mapped file keeps a big merge out of memory) or a new
    array: one compiled pass, no memory beyond the output (`pipeline.sorted_merge`); for fewer than
    `SMALL_BATCH` ids in memory, numpy's stable sort of the concatenation (the same order)."""
    if len(older) + len(newer) < SMALL_BATCH and out is None:
        return Run.of(*np.concatenate([older.data, newer.data], axis=1))  # C order, as `np.save` must write it
    from pipeline.sorted_merge import merge_sorted  # numba is imported on first use only

    data = np.empty((3, len(older) + len(newer)), np.uint64) if out is None else out
    merge_sorted(older.data, newer.data, data)
    return Run(data)


class IdFilter:
    """A blocked Bloom filter of high hashes (`pipeline.sorted_merge`, [PSS07]) sized for
    `capacity` ids at `FILTER_BITS_PER_ID` bits each: no false negatives, so an id it rules out
    was never added."""

    def __init__(self, capacity: int):
        blocks = -(-max(capacity, MIN_FILTER_IDS) * FILTER_BITS_PER_ID // 256)
        self.bits = np.zeros((blocks, 8), np.uint32)
        self.capacity = blocks * 256 // FILTER_BITS_PER_ID
        self.ids = 0

    @classmethod
    def of(cls, runs: list[Run]) -> IdFilter:
        """A filter of the ids of `runs`, with room for as many again."""
        built = cls(2 * sum(len(run) for run in runs))
        for run in runs:
            built.add(run)
        return built

    def has_room(self, ids: int) -> bool:
        return self.ids + ids <= self.capacity

    def add(self, run: Run) -> None:
        from pipeline.sorted_merge import bloom_add  # numba is imported on first use only

        bloom_add(self.bits, run.data[0])
        self.ids += len(run)

    def may_hold(self, high: np.ndarray) -> np.ndarray:
        """False where an id of high hash `high` was never added; True where it may have been."""
        from pipeline.sorted_merge import bloom_check

        return bloom_check(self.bits, high)

    @property
    def nbytes(self) -> int:
        return self.bits.nbytes


@dataclass
class SeenIds:
    """The ids seen so far: runs merged as they grow, and the filter over all of them."""

    runs: list[Run] = field(default_factory=list)
    max_run: ClassVar[int] = MAX_RUN
    id_filter: IdFilter | None = field(default=None, repr=False)  # built on the first lookup

    def find(self, high: np.ndarray, low: np.ndarray) -> np.ndarray:
        """`where` of each (high, low) among the runs, NOT_FOUND if absent: the needles that the
        filter does not rule out are searched in the runs (`search`). Runs of fewer than
        `SMALL_BATCH` ids in all are searched without a filter (no numba: about 1 s a process)."""
        found = np.full(len(high), NOT_FOUND, np.uint64)
        if not len(high) or not self.runs:
            return found
        if self.id_filter is None and sum(map(len, self.runs)) < SMALL_BATCH:
            return self.search(high, low)
        if self.id_filter is None:
            self.id_filter = IdFilter.of(self.runs)
        candidates = np.flatnonzero(self.id_filter.may_hold(high))
        if len(candidates):
            found[candidates] = self.search(high[candidates], low[candidates])
        return found

    def search(self, high: np.ndarray, low: np.ndarray) -> np.ndarray:
        """`where` of each (high, low) among the runs, NOT_FOUND if absent, by the runs alone. The
        needles are searched in sorted order (a walk through each run, compiled:
        `pipeline.sorted_merge`), or by numpy's binary search (`search_run`) in runs of fewer than
        `SMALL_BATCH` ids in all."""
        found = np.full(len(high), NOT_FOUND, np.uint64)
        if sum(map(len, self.runs)) < SMALL_BATCH:
            for run in self.runs:
                search_run(run.data, high, low, found)
            return found
        from pipeline.sorted_merge import find_sorted  # numba is imported on first use only

        order = sort_order(high)
        sorted_high, sorted_low = (high, low) if order is None else (high[order], low[order])
        sorted_high, sorted_low = np.ascontiguousarray(sorted_high, np.uint64), np.ascontiguousarray(sorted_low, np.uint64)
        for run in self.runs:
            find_sorted(run.data, sorted_high, sorted_low, found, NOT_FOUND)
        if order is not None:
            found[order] = found.copy()
        return found

    def add(self, high: np.ndarray, low: np.ndarray, where_: np.ndarray) -> None:
        if len(high):
            self.append(Run.of(high, low, where_))
            self.compact()

    def append(self, run: Run) -> None:
        """Add a run of ids not seen before, unmerged; the filter, once built, learns them (or is
        rebuilt twice as big when they do not fit)."""
        self.runs.append(run)
        if self.id_filter is not None:
            if self.id_filter.has_room(len(run)):
                self.id_filter.add(run)
            else:
                self.id_filter = None  # freed before the one twice as big is built
                self.id_filter = IdFilter.of(self.runs)

    def compact(self) -> None:
        """Merge the newest runs while the newest is at least half the size of the one before."""
        while len(self.runs) > 1 and 2 * len(self.runs[-1]) >= len(self.runs[-2]) and \
                len(self.runs[-1]) + len(self.runs[-2]) <= self.max_run:
            self.runs[-2:] = [merge(*self.runs[-2:])]


def drop_seen(result: ReadResult, columns: tuple[str, ...], seen: SeenIds, file: int,
              name_of: Callable[[int], str], unit_rows: bool) -> ReadResult:
    """`result` with the rows whose id was seen before moved to its quarantine; its new ids are
    added to `seen` as found in file `file` (an ordinal; `name_of` names an ordinal for reasons).

    With `unit_rows`, rows sharing an id make one unit (a game's players): the id is new or seen
    for all of them."""
    if not columns or not result.rows_accepted:
        return result
    lines = result.lines
    if unit_rows:  # one entry per distinct id, at its first line
        uh, ul, first, entries = distinct_ids(result.table, columns)
        ulines = lines[first]
    else:
        uh, ul = key_hashes(key_text(result.table, columns))
        ulines, entries = lines, None
    order = id_order(uh)  # sorted once: each run's search and the new run then need no sort
    sh, sl = uh[order], ul[order]
    found_sorted = seen.find(sh, sl)
    new = found_sorted == NOT_FOUND
    seen.add(sh[new], sl[new], where(file, ulines[order][new]))
    found = np.empty_like(found_sorted)
    found[order] = found_sorted
    seen_before = found != NOT_FOUND
    rows = seen_before[entries] if unit_rows else seen_before
    if not rows.any():
        return result
    label = " and ".join(columns)
    firsts = found[entries][rows] if unit_rows else found[rows]
    reasons = [f"duplicate {label} (first at line {line_of(w)})" if file_of(w) == file else
               f"duplicate {label} (first in {name_of(file_of(w))}, line {line_of(w)})" for w in firsts.tolist()]
    bad = np.flatnonzero(rows)
    records = [json.dumps(r, sort_keys=True, default=str, ensure_ascii=False) for r in result.table.take(bad).to_pylist()]
    quarantined = quarantine_rows(result.source, lines[bad].tolist(), [columns[0]] * len(bad), reasons, records)
    keep = np.flatnonzero(~rows)
    return ReadResult(result.kind, result.source, result.table.take(keep), pa.concat_tables([result.quarantined, quarantined]),
                      result.rows_in, lines[keep], result.keyed)



CONTENT_PREFIX = "content:"
DIGEST_BYTES = 16  # BLAKE2b-128


def content_digests(texts: pa.Array | pa.ChunkedArray) -> bytes:
    """The BLAKE2b-128 digests of `texts`' UTF-8 bytes, end to end. Each text is hashed as a slice
    of the Arrow data buffer: no Python string is made, encoded or formatted per text; the call
    to `hashlib` is the only per-text Python left."""
    array = texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts
    array = array.cast(pa.large_string())
    if array.null_count:
        raise ValueError("a record without a canonical text")
    offsets = np.frombuffer(array.buffers()[1], np.int64)[array.offset:array.offset + len(array) + 1].tolist()
    data = memoryview(array.buffers()[2] or b"")
    digest = functools.partial(hashlib.blake2b, digest_size=DIGEST_BYTES)  # keywords parsed once, not per row
    return b"".join([digest(data[start:end]).digest() for start, end in itertools.pairwise(offsets)])


def distinct_texts(texts: pl.Series, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The row of each distinct text's first occurrence, and each row's entry among them. Texts
    are grouped by their `hashes` (a 64-bit hash: sorting integers rather than hashing texts into
    a dictionary) and then checked equal to their entry's text: if two distinct texts share a
    hash, every row is its own entry, so the grouping is exact whatever the hashes."""
    first, codes = np.unique(hashes, return_index=True, return_inverse=True)[1:]
    codes = codes.ravel()
    if not (texts == texts.gather(first[codes])).all():
        return np.arange(len(texts)), np.arange(len(texts))
    return first, codes


def binary_of_width(values: bytes, width: int) -> pa.Array:
    """`values` cut into binary values of `width` bytes each, without a copy."""
    rows = len(values) // width
    offsets = np.arange(0, (rows + 1) * width, width, dtype=np.int64)
    return pa.Array.from_buffers(pa.large_binary(), rows, [None, pa.py_buffer(offsets), pa.py_buffer(values)])


class ContentIds:
    """Ids for records a file gave none: what the record says, and how many times it said it.

    A record's id is `content:` and the BLAKE2b-128 hash (hex) of its canonical fields as JSON
    (every stored column but the id, in schema order, as `polars`' `struct.json_encode` writes
    them), then `#k` for the k-th identical record of the same source (k > 1). So the same battles
    re-exported, re-sorted, or dumped again with new ones after them are the same ids, stored once
    whatever the file's format; and a source holding a record k times stores it k times: a later
    dump holding it m times adds max(0, m - k) (identical battles are told apart by nothing but
    their count). A file that grew is read again from its start for the counts (`read_batches`),
    its earlier rows not handed on. One per source file: the counts run over its batches.

    The texts are polars' (vectorised); each distinct text of a batch is hashed once
    (`distinct_texts`, `content_digests`) and the ids are built by polars, not formatted per row:
    the same ids as one hash and one string per row (tested on hostile records)."""

    def __init__(self) -> None:
        self.keys = np.empty(0, np.uint64)  # the keys seen in earlier batches, sorted, and how often each
        self.seen = np.empty(0, np.int64)
        self.used = False  # whether any record needed an id of its content

    def assign(self, result: ReadResult, columns: tuple[str, ...]) -> ReadResult:
        self.used = True
        table = result.table
        if not table.num_rows:
            return dataclasses.replace(result, keyed=True)
        fields = [name for name in table.schema.names if name not in columns]
        texts = pl.from_arrow(table.select(fields)).select(pl.struct(pl.all()).struct.json_encode()).to_series()
        first, codes = distinct_texts(texts, texts.hash(SEEDS[0]).to_numpy())  # each distinct text hashed once: a log repeats records
        digests = content_digests(texts.gather(first).to_arrow())
        keys = np.frombuffer(digests, np.uint64)[::2][codes]  # each digest's first 8 bytes
        ids = (CONTENT_PREFIX + pl.from_arrow(binary_of_width(digests, DIGEST_BYTES)).bin.encode("hex")).gather(codes)
        occurrence = self._occurrences(keys)
        if len(again := np.flatnonzero(occurrence > 1)):  # only repeats get `#k`: most rows are first occurrences
            ids = ids.scatter(again, ids.gather(again) + "#" + pl.Series(occurrence[again]).cast(pl.String))
        ids = ids.to_arrow()
        column = columns[0]
        table = table.set_column(table.schema.get_field_index(column), column, ids.cast(table.schema.field(column).type))
        return dataclasses.replace(result, table=table, keyed=True)

    def _occurrences(self, keys: np.ndarray) -> np.ndarray:
        """Each key's occurrence among the keys seen so far (1 for the first), by sorting: the
        rank within its run of equal keys in this batch, plus its count in earlier batches. The
        earlier counts are looked up and updated per distinct key of the batch, and the keys kept
        sorted by merging the new ones in (a stable sort of two sorted runs is one merge pass)."""
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        distinct, counts = ordered[starts], np.diff(np.r_[starts, len(keys)])
        run = np.repeat(np.arange(len(starts)), counts)  # each sorted row's run of equal keys
        at = np.searchsorted(self.keys, distinct)
        known = at < len(self.keys)
        known[known] = self.keys[at[known]] == distinct[known]
        before = np.zeros(len(distinct), np.int64)
        before[known] = self.seen[at[known]]
        occurrence = np.empty(len(keys), np.int64)
        occurrence[order] = np.arange(len(keys)) - starts[run] + before[run] + 1
        seen = self.seen.copy()
        seen[at[known]] += counts[known]
        merged, seen = np.r_[self.keys, distinct[~known]], np.r_[seen, counts[~known]]
        merge = np.argsort(merged, kind="stable")
        self.keys, self.seen = merged[merge], seen[merge]
        return occurrence
