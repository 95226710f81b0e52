"""Writing one source file's rows into partition files, batch by batch, in bounded memory.

Rows with a timestamp go to `<kind>/date=YYYY-MM-DD/<sha>.parquet` by their UTC date, the others
to `<kind>/source=<sha>/part.parquet`. Rows are buffered per partition and written as row groups
of `ROW_GROUP_ROWS`, or all of them when together they pass `BUFFER_ROWS` (a buffered slice keeps
its whole batch in memory, so a partition left behind would make memory grow with the file), each
partition file to a temporary name that the commit renames (`PartitionWriter.finish`). At most
`MAX_OPEN` files are open at once: a partition whose writer had to close continues in a second
file, `<sha>-1.parquet`. The date is the day number of the timestamp (microseconds floor-divided),
so no row is ever formatted as text. Columns whose values are all different (a kind's record id,
one per row; the ingest position; a battle's timestamp) are written without a dictionary: a
dictionary of distinct values only costs time (half the writing time of a year of daily
partitions) and, in a small partition where Parquet never falls back to plain pages, space
(a year of daily partitions of 2e6 battles: 17% smaller without the last two).
"""

from __future__ import annotations

import resource
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.paths import below
from pipeline.store.files import ROW_GROUP_ROWS, temporary_path

BUFFER_ROWS = 2_000_000
# Open partition files at most: half the process's file limit (up to 4,096), so that a year of
# daily partitions stays open and each partition is one file; past it, the least recently
# written file is closed and its partition continues in a new one.
MAX_OPEN = max(64, min(4_096, resource.getrlimit(resource.RLIMIT_NOFILE)[0] // 2))
MICROS_PER_DAY = 86_400_000_000
UNDATED = np.iinfo(np.int64).min  # the day key of rows without a timestamp
# Threads writing the partitions of one flush: each file is written by one call, so its bytes do
# not depend on them; the writes run in pyarrow without the GIL, beside ingest's other stages.
FLUSH_THREADS = 2


@dataclass(frozen=True)
class Written:
    """A partition file written under a temporary name, and the name the commit gives it."""

    path: str  # relative to the store root
    temporary: Path
    rows: int


def day_keys(timestamps: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """The UTC day number of each timestamp (UNDATED for null)."""
    micros = pc.fill_null(pc.cast(timestamps, pa.int64()), UNDATED).to_numpy()
    return np.where(micros == UNDATED, UNDATED, np.floor_divide(micros, MICROS_PER_DAY))


def key_order(keys: np.ndarray) -> np.ndarray:
    """The stable sort order of partition keys; keys within 65,536 of each other (dates spanning
    up to 179 years, and the undated key alone) are sorted as 16-bit offsets, by a radix sort."""
    dated = keys[keys != UNDATED]
    low = dated.min(initial=0)
    if len(dated) and dated.max() - low < np.iinfo(np.uint16).max:
        offsets = np.where(keys == UNDATED, 0, keys - low + 1).astype(np.uint16)
        return np.argsort(offsets, kind="stable")
    return np.argsort(keys, kind="stable")


def reordered(table: pa.Table, order: np.ndarray) -> pa.Table:
    """`table.take(order)`, except that a column of nulls only (an optional column the file lacks)
    is the same in any order and is kept as it is instead of gathered."""
    columns = [column if column.null_count == len(column) else column.take(order) for column in table.columns]
    return pa.Table.from_arrays(columns, schema=table.schema)


def write_row_group(writer: pq.ParquetWriter, buffered: list[pa.Table]) -> None:
    """A partition's buffered slices, written as one row group (or more, past `ROW_GROUP_ROWS`)."""
    writer.write_table(pa.concat_tables(buffered), row_group_size=ROW_GROUP_ROWS)


def _write_row_groups(writes: list[tuple[pq.ParquetWriter, list[pa.Table]]]) -> None:
    """`write_row_group` for each (file, slices), on `FLUSH_THREADS`; raises the first error."""
    if FLUSH_THREADS == 1 or len(writes) < 2:
        for writer, buffered in writes:
            write_row_group(writer, buffered)
        return
    with ThreadPoolExecutor(FLUSH_THREADS, thread_name_prefix="vase-flush") as pool:
        list(pool.map(write_row_group, *zip(*writes)))


@dataclass
class _Partition:
    name: str  # `date=YYYY-MM-DD` or `source=<sha>`
    buffered: list[pa.Table] = field(default_factory=list)
    rows: int = 0
    files: list[Written] = field(default_factory=list)


class PartitionWriter:
    """The partition files of one source file (`short` = its hash's first 16 hex digits)."""

    def __init__(self, root: Path, kind: str, short: str, dated: bool, timestamp: str = "timestamp",
                 distinct: tuple[str, ...] = (), tag: str = ""):
        self.root, self.kind, self.short, self.dated, self.timestamp = root, kind, short, dated, timestamp
        self.distinct = distinct  # columns whose values are all different: no dictionary
        self.tag = tag  # ends every file name: the writer's token in object storage (`pipeline.store.objects`)
        self.schema: pa.Schema | None = None
        self._partitions: dict[int, _Partition] = {}
        self._open: OrderedDict[int, pq.ParquetWriter] = OrderedDict()
        self._buffered = 0

    def add(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        if self.schema is None:
            self.schema = table.schema
        table = table.cast(self.schema)
        keys = day_keys(table.column(self.timestamp)) if self.dated else np.full(table.num_rows, UNDATED)
        first = keys[0]
        if (keys == first).all():
            self._buffer(int(first), table)
        else:
            order = key_order(keys)
            sorted_keys, table = keys[order], reordered(table, order)  # one gather; each partition is then a slice
            starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
            for lo, hi in zip(starts, np.r_[starts[1:], len(keys)]):
                self._buffer(int(sorted_keys[lo]), table.slice(lo, hi - lo))
        if self._buffered > BUFFER_ROWS:  # all of them: a buffer left behind would keep whole batches alive
            self._flush(list(self._partitions))

    def _buffer(self, key: int, rows: pa.Table) -> None:
        part = self._partitions.get(key)
        if part is None:
            name = f"source={self.short}" if key == UNDATED else f"date={np.datetime64(key, 'D')}"
            part = self._partitions[key] = _Partition(name)
        part.buffered.append(rows)
        part.rows += rows.num_rows
        self._buffered += rows.num_rows
        if part.rows >= ROW_GROUP_ROWS:
            self._flush([key])

    def _flush(self, keys: list[int]) -> None:
        """Write the buffered rows of these partitions, each as a row group of its file: the files
        opened (and closed past `MAX_OPEN`) here, the row groups written on `FLUSH_THREADS`."""
        writes: list[tuple[pq.ParquetWriter, list[pa.Table]]] = []
        for key in keys:
            part = self._partitions[key]
            if not part.rows:
                continue
            writer = self._open.pop(key, None)
            if writer is None:
                if len(self._open) >= MAX_OPEN:  # a file about to close may have a write pending
                    _write_row_groups(writes)
                    writes = []
                while len(self._open) >= MAX_OPEN:
                    self._open.popitem(last=False)[1].close()
                part.files.append(self._next_file(key, part))
                writer = self._open_file(part.files[-1].temporary)
            self._open[key] = writer  # the most recently used last
            writes.append((writer, part.buffered))
            file = part.files[-1]
            part.files[-1] = Written(file.path, file.temporary, file.rows + part.rows)
            self._buffered -= part.rows
            part.buffered, part.rows = [], 0
        _write_row_groups(writes)

    def _next_file(self, key: int, part: _Partition) -> Written:
        stem = "part" if key == UNDATED else self.short
        name = stem if not part.files else f"{stem}-{len(part.files)}"
        path = f"{self.kind}/{part.name}/{name}{self.tag}.parquet"
        return Written(path, temporary_path(below(self.root, path)), 0)

    def _open_file(self, temporary: Path) -> pq.ParquetWriter:
        temporary.parent.mkdir(parents=True, exist_ok=True)
        dictionary = [name for name in self.schema.names if name not in self.distinct]
        return pq.ParquetWriter(temporary, self.schema, compression="zstd", use_dictionary=dictionary)

    def finish(self) -> list[Written]:
        """Write what is buffered and close every file; the files in partition order."""
        self._flush(list(self._partitions))
        for writer in self._open.values():
            writer.close()
        self._open.clear()
        return [f for key in sorted(self._partitions) for f in self._partitions[key].files]

    def discard(self) -> None:
        for writer in self._open.values():
            try:
                writer.close()
            except OSError:
                pass
        self._open.clear()
        for part in self._partitions.values():
            for file in part.files:
                file.temporary.unlink(missing_ok=True)


class QuarantineWriter:
    """The quarantined rows of one source file, streamed to `quarantine/<kind>/<sha>.parquet`."""

    def __init__(self, root: Path, kind: str, short: str, tag: str = ""):
        self.path = f"quarantine/{kind}/{short}{tag}.parquet"
        self.temporary = temporary_path(below(root, self.path))
        self._writer: pq.ParquetWriter | None = None
        self.rows = 0

    def add(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        if self._writer is None:
            self.temporary.parent.mkdir(parents=True, exist_ok=True)
            self._writer = pq.ParquetWriter(self.temporary, table.schema, compression="zstd")
        self._writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
        self.rows += table.num_rows

    def finish(self) -> Written | None:
        if self._writer is None:
            return None
        self._writer.close()
        return Written(self.path, self.temporary, self.rows)

    def discard(self) -> None:
        if self._writer is not None:
            try:
                self._writer.close()
            except OSError:
                pass
        self.temporary.unlink(missing_ok=True)
