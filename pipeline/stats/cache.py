"""A cache of per-unit partial statistics inside the store, for incremental recomputation.

A unit's rows never change (partition files are written once per source content hash), so its
partial is stored under a key of (kind, statistics asked, dense or sparse, the unit's files)
and reused by later reductions: after a new file is ingested, only its units are read. When
the id dictionary has grown since, a cached partial is re-embedded in the larger id space, its
extra statistics too (`Extra.resize`; one without it is recomputed). Partials are exact (integer
units, sorted unions, sorted runs: the merge contract of `pipeline.stats.extras`), so a reduction
from the cache equals one from scratch bit for bit.

Every Dask worker writes here, so whoever can write into the store can plant files: a cached
partial is data only. It is an `.npz` of plain arrays (`Partial.to_arrays`), read with
`allow_pickle=False`, holding its full key and a SHA-256 of its arrays. A file that does not
load, belongs to another key or fails its checksum (truncated, tampered, of an older format)
is ignored and the unit recomputed; `.pkl` files of earlier versions are never opened. In a store
in object storage the cache is objects under `<store>/cache/`, each put whole in one request.

A statistic as large as the log (`Extra.kept`) is cached per unit in a file of its own, and kept
finalized too: a `Snapshot` (the same kind of checked `.npz`, one per kind, statistic, layout and
category, naming the cache keys of the units whose rows it holds) that the next reduction extends
by the new units' rows rather than merging every unit's partial again (`pipeline.stats.reduce`).
A snapshot of row columns that only grow at their end (`Extra.kept.columns`: the sequence) is, on
a local store, that `.npz` as an index beside one raw file per row column: a nightly maps the
files (copy on write) without reading them and appends the new rows in place (`append_snapshot`),
under a lock per snapshot, then replaces the index atomically. A snapshot whose arrays change
anywhere (`Extra.kept.files`: the council reviews, spliced by position) keeps them in column files
too, written whole as a new generation with each new snapshot: the next reduction maps them rather
than reading, decompressing and checksumming the whole `.npz`. A column file is trusted without a
read while its size and mtime are as the index recorded; one changed since is read and checked
against the SHA-256 of each appended segment (and cut back to its rows: a crashed append) or
refused (truncated, edited), and the statistic recomputed. In object storage it is one object.
The sum of the units' partials (but the kept extras) is kept as a snapshot too, so that the next
reduction opens one file for the units it holds (`pipeline.stats.reduce.load_summed`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import logging
import os
import uuid
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.paths import below, is_url
from pipeline.stats.encoding import Arrays
from pipeline.stats.partials import Partial
from pipeline.store.files import atomic_write, exclusive_lock, sync_files
from pipeline.store.location import address, read_object, write_object

FORMAT = 5  # 3: .npz of arrays with a checksum (1 and 2 were pickles: never read); 4: sequence partials hold ingest
# positions; 5: sequence partials are compact runs (int32 agents, columns of default values left out)
SUFFIX = ".npz"
KEY, CHECKSUM = "cache.key", "cache.sha256"
SNAPSHOT_UNITS = "snapshot.units"  # the cache keys of the units a snapshot holds
COLUMNS, COLUMN_SUFFIX = "columns", ".col"  # a snapshot's index arrays naming its column files; their suffix
COLUMN_FILES = 1  # snapshots of `Columns` keep their row columns in files (before: one .npz, 3 bytes a battle)

log = logging.getLogger(__name__)


def cache_key(root: str, kind: str, want: frozenset[str], dense: bool, unit) -> str:
    """The SHA-256 of what a unit's partial depends on (its files are immutable once written)."""
    files = [p.removeprefix(f"{root}/") if is_url(root) else str(Path(p).relative_to(Path(root).resolve())) for p in unit.paths]
    subset = [unit.category] if unit.category is not None else []  # keys of whole units are as before
    subset += unit.decay.key() if unit.decay is not None else []  # weighed counts never meet unweighed ones
    key = json.dumps([FORMAT, kind, sorted(want), dense, unit.source, files, unit.row_groups, *subset])
    return hashlib.sha256(key.encode()).hexdigest()


def cache_path(root: str, kind: str, key: str) -> Path | str:
    """Where the partial of `key` lives (a store in object storage: its URL); refused if a folder
    or file on the way is a symbolic link."""
    relative = f"cache/{kind}/{key[:32]}{SUFFIX}"
    return address(root, relative) if is_url(root) else below(root, relative)


def checksum(arrays: Arrays) -> str:
    """SHA-256 over every array's name, dtype, shape and bytes, in name order."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(json.dumps([name, array.dtype.str, array.shape]).encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def text(array: np.ndarray) -> str:
    return bytes(array.astype(np.uint8)).decode("ascii")


def _ascii(value: str) -> np.ndarray:
    return np.frombuffer(value.encode("ascii"), np.uint8)


def load_arrays(path: Path | str, key: str, what: str = "partial") -> Arrays | None:
    """The arrays cached at `path` under `key`; None if absent or refused (another key, a checksum
    that does not match, not an .npz: logged, and the caller recomputes)."""
    if is_url(path):
        try:
            source = io.BytesIO(read_object(path))
        except FileNotFoundError:
            return None
    elif path.exists():
        source = path
    else:
        return None
    try:
        with np.load(source, allow_pickle=False) as stored:
            arrays = {name: stored[name] for name in stored.files}
        found, recorded = text(arrays.pop(KEY)), text(arrays.pop(CHECKSUM))
        if found != key:
            raise ValueError(f"it holds the {what} of another key ({found[:16]}...)")
        if recorded != checksum(arrays):
            raise ValueError("its checksum does not match its content")
    except (OSError, EOFError, KeyError, ValueError, TypeError, zipfile.BadZipFile) as error:
        log.warning("%s: cached %s refused (%s); recomputing it", path, what, error)
        return None
    return arrays


def load(path: Path | str, key: str, n: int) -> Partial | None:
    """The cached partial of `key` in an id space of size n; None if absent, not valid or not re-embeddable."""
    arrays = load_arrays(path, key)
    return None if arrays is None else partial_of(arrays, n, path)


def partial_of(arrays: Arrays, n: int, where: object) -> Partial | None:
    """The partial of cached `arrays` in an id space of size n; None if they do not decode or
    cannot be re-embedded (logged, naming `where`)."""
    try:
        partial = Partial.from_arrays(arrays)
    except (KeyError, ValueError, TypeError) as error:
        log.warning("%s: cached partial refused (%s); recomputing it", where, error)
        return None
    if partial.n == n:
        return partial
    if partial.n < n and partial.resizable:
        return partial.resized(n)
    return None


def store_arrays(path: Path | str, key: str, arrays: Arrays) -> None:
    """`arrays` under `key` at `path`, with their checksum, written whole."""
    marks = {KEY: key, CHECKSUM: checksum(arrays)}
    arrays = arrays | {name: _ascii(value) for name, value in marks.items()}

    def write(tmp: Path) -> None:
        with tmp.open("wb") as handle:
            np.savez(handle, **arrays)

    if is_url(path):  # one PUT: an object appears whole (two workers writing one key write the same bytes)
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        write_object(path, buffer.getvalue())
    else:
        atomic_write(path, write)


def store(path: Path | str, key: str, partial: Partial) -> None:
    store_arrays(path, key, partial.to_arrays())


@dataclass(frozen=True)
class ColumnFile:
    """A row column of a snapshot kept as a file of raw values (`Extra.kept.columns`), appended in
    place: its first `rows` values count (a crashed append leaves more, cut by the next writer).
    Each append is a segment, with the SHA-256 of its bytes; the file's (size, mtime) as last written
    lets a reader trust it without reading it, and a file changed since is read and checked whole."""

    dtype: np.dtype
    segments: tuple[int, ...]  # the row each segment ends at
    digests: tuple[str, ...]  # SHA-256 of each segment's bytes
    written: tuple[int, int]  # (size, mtime in ns) after the last write

    @property
    def rows(self) -> int:
        return self.segments[-1] if self.segments else 0


@dataclass(frozen=True)
class Snapshot:
    """A finalized statistic as large as the log (`Extra.kept`), kept between reductions with the
    cache keys of the units whose rows it holds: the next reduction extends it by the other units.
    On a local store, a snapshot of `Columns` keeps its row columns in files (`files`, by name,
    of generation `generation`), which `arrays` maps (copy on write: never read or changed here)."""

    units: frozenset[str]
    arrays: Arrays
    files: Mapping[str, ColumnFile] | None = None
    generation: str = ""


@dataclass(frozen=True)
class SnapshotPlace:
    """Where the snapshot of extra `name` lives, beside the partials: one per store, kind, statistic,
    layout and category (each reduction replaces it with the one holding every unit)."""

    root: str
    kind: str
    name: str
    dense: bool
    category: str | None

    @property
    def key(self) -> str:
        return hashlib.sha256(json.dumps([FORMAT, "snapshot", COLUMN_FILES, self.kind, self.name, self.dense,
                                          self.category]).encode()).hexdigest()

    @property
    def path(self) -> Path | str:
        return cache_path(self.root, self.kind, self.key)

    def column(self, generation: str, name: str) -> Path:
        """The file of row column `name` of a generation (local stores only)."""
        return self.path.with_name(f"{self.path.stem}.{generation}.{name}{COLUMN_SUFFIX}")


@contextmanager
def snapshot_lock(place: SnapshotPlace) -> Iterator[None]:
    """One reduction at a time reads and extends a snapshot on a local store (its column files are
    appended in place); none in object storage, whose snapshot is one object put whole."""
    if is_url(place.root):
        yield
        return
    with exclusive_lock(place.path.with_suffix(".lock")):
        yield


def _written(path: Path) -> tuple[int, int]:
    status = path.stat()
    return status.st_size, status.st_mtime_ns


def _segment_digests(path: Path, column: ColumnFile) -> list[str]:
    """The SHA-256 of each segment of a column file as it is now (a read of the whole file)."""
    digests, start = [], 0
    with path.open("rb") as handle:
        for end in column.segments:
            digest = hashlib.sha256()
            left = (end - start) * column.dtype.itemsize
            while left:
                chunk = handle.read(min(left, 1 << 24))
                if not chunk:
                    break
                digest.update(chunk)
                left -= len(chunk)
            digests.append(digest.hexdigest())
            start = end
    return digests


def _checked(path: Path, column: ColumnFile) -> bool:
    """Whether a column file holds its rows as written: trusted without a read if its size and mtime
    are as last written; else (a crashed append, a hand edit) read whole and checked segment by
    segment, and cut back to its rows if that holds."""
    if path.is_symlink() or not path.is_file() or path.stat().st_size < column.rows * column.dtype.itemsize:
        return False
    if _written(path) == column.written:
        return True
    if _segment_digests(path, column) != list(column.digests):
        return False
    os.truncate(path, column.rows * column.dtype.itemsize)
    return True


def _mapped(path: Path, column: ColumnFile) -> np.ndarray:
    """The column's rows mapped copy on write (a consumer may write into them; the file never changes)."""
    if not column.rows:
        return np.zeros(0, column.dtype)
    return np.memmap(path, column.dtype, "c", shape=(column.rows,)).view(np.ndarray)


def _column_marks(files: Mapping[str, ColumnFile], generation: str) -> Arrays:
    """The column files as index arrays."""
    marks = {f"{COLUMNS}.generation": _ascii(generation), f"{COLUMNS}.names": np.array(sorted(files), dtype="S")}
    for name, column in files.items():
        marks |= {f"{COLUMNS}.{name}.dtype": _ascii(column.dtype.str), f"{COLUMNS}.{name}.segments": np.array(column.segments, np.int64),
                  f"{COLUMNS}.{name}.sha256": np.array(column.digests, dtype="S64"),
                  f"{COLUMNS}.{name}.written": np.array(column.written, np.int64)}
    return marks


def _column_files(arrays: Arrays) -> tuple[dict[str, ColumnFile], str] | None:
    """The column files an index names, taken out of its arrays; None for a snapshot held whole."""
    if f"{COLUMNS}.names" not in arrays:
        return None
    generation = text(arrays.pop(f"{COLUMNS}.generation"))
    files = {}
    for name in arrays.pop(f"{COLUMNS}.names").astype(str).tolist():
        files[name] = ColumnFile(np.dtype(text(arrays.pop(f"{COLUMNS}.{name}.dtype"))),
                                 tuple(arrays.pop(f"{COLUMNS}.{name}.segments").tolist()),
                                 tuple(arrays.pop(f"{COLUMNS}.{name}.sha256").astype(str).tolist()),
                                 tuple(arrays.pop(f"{COLUMNS}.{name}.written").tolist()))
    if not generation.isalnum() or any(not all(part.isidentifier() for part in name.split(".")) for name in files):
        raise ValueError("it names column files outside its own")
    if any(file.dtype.kind not in "biuf" or len(file.segments) != len(file.digests) or np.any(np.diff((0, *file.segments)) < 0)
           for file in files.values()):
        raise ValueError("its column files are not columns of numbers in segments")
    return files, generation


def load_snapshot(place: SnapshotPlace) -> Snapshot | None:
    """The snapshot at `place`, its column files mapped; None if absent or refused (logged).
    On a local store, call it under `snapshot_lock`: it may cut a crashed append's bytes."""
    path = place.path
    arrays = load_arrays(path, place.key, "snapshot")
    if arrays is None:
        return None
    units = arrays.pop(SNAPSHOT_UNITS, None)
    try:
        layout = _column_files(arrays)
        if units is None or (layout is not None and is_url(place.root)):
            raise ValueError("it is not a snapshot of this store's kind")
    except (KeyError, ValueError, TypeError) as error:
        log.warning("%s: cached snapshot refused (%s); recomputing it", path, error)
        return None
    if layout is None:
        return Snapshot(frozenset(units.astype(str).tolist()), arrays)
    files, generation = layout
    units = frozenset(units.astype(str).tolist())
    checked = {}
    for column, file in files.items():
        where = place.column(generation, column)
        if not _checked(where, file):
            log.warning("%s: cached snapshot refused (its column file %s is not as written); recomputing it", path, where.name)
            return None
        checked[column] = dataclasses.replace(file, written=_written(where))
    if checked != files:  # read and checked whole (a crashed append cut back): trusted again without a read
        _store_index(place, units, arrays, checked, generation)
    return Snapshot(units, arrays | {column: _mapped(place.column(generation, column), file) for column, file in checked.items()},
                    checked, generation)


def _write_column(path: Path, values: np.ndarray, column: ColumnFile | None = None) -> ColumnFile:
    """`values` appended to a column file (its rows as `column` records them: bytes past them cut), or
    written as a new one; the caller syncs it (`sync_files`, batched) before an index names it."""
    values = np.ascontiguousarray(values)
    if column is not None and values.dtype != column.dtype:
        raise ValueError(f"{path.name}: {values.dtype} rows appended to a column of {column.dtype}")
    with path.open("r+b" if column is not None else "wb") as handle:
        start = column.rows if column is not None else 0
        handle.truncate(start * values.dtype.itemsize)
        handle.seek(start * values.dtype.itemsize)
        handle.write(values.data)
    before = (column.segments, column.digests) if column is not None else ((), ())
    grown = (start + len(values),) if len(values) or column is None else ()
    digest = (hashlib.sha256(values.data).hexdigest(),) if grown else ()
    return ColumnFile(values.dtype, before[0] + grown, before[1] + digest, _written(path))


def _store_index(place: SnapshotPlace, units: frozenset[str], arrays: Arrays, files: Mapping[str, ColumnFile], generation: str) -> None:
    store_arrays(place.path, place.key, arrays | _column_marks(files, generation) | {SNAPSHOT_UNITS: np.array(sorted(units), dtype="S64")})


def store_snapshot(place: SnapshotPlace, snapshot: Snapshot, rows: frozenset[str] = frozenset()) -> None:
    """The snapshot written whole: on a local store its row columns (`rows`: `Kept.column_files`) in column
    files of a new generation, then the index naming them; the other generations' files removed after."""
    path = place.path
    if is_url(place.root) or not rows:
        store_arrays(path, place.key, snapshot.arrays | {SNAPSHOT_UNITS: np.array(sorted(snapshot.units), dtype="S64")})
        return
    generation = uuid.uuid4().hex
    path.parent.mkdir(parents=True, exist_ok=True)
    files = {column: _write_column(place.column(generation, column), snapshot.arrays[column])
             for column in sorted(rows & snapshot.arrays.keys())}
    sync_files(place.column(generation, column) for column in files)
    _store_index(place, snapshot.units, {array: x for array, x in snapshot.arrays.items() if array not in files}, files, generation)
    _remove_other_generations(place, generation)


def _remove_other_generations(place: SnapshotPlace, generation: str) -> None:
    """The column files of the snapshot's other generations: the one it replaced, or one a crashed
    rebuild wrote before its index (a reduction that mapped them keeps reading them)."""
    path = place.path
    for stale in path.parent.glob(f"{path.stem}.*{COLUMN_SUFFIX}"):
        if not stale.name.startswith(f"{path.stem}.{generation}."):
            stale.unlink(missing_ok=True)


def append_snapshot(place: SnapshotPlace, snapshot: Snapshot, appendix: Arrays, units: frozenset[str], rows: frozenset[str]) -> Arrays:
    """A local snapshot of `Columns` extended in place (under `snapshot_lock`): the appendix's rows
    appended to each column file (a row column it lacks written whole, a new file), then the index
    replaced atomically, naming `units`; the whole snapshot's arrays, its columns mapped. A crash
    before the index is replaced leaves the previous snapshot valid (the bytes past its rows are
    cut by the next writer)."""
    if snapshot.files is None:
        raise ValueError("only a snapshot kept in column files is appended to in place")
    if missing := snapshot.files.keys() - appendix.keys():
        raise ValueError(f"the appendix lacks the rows of {sorted(missing)}")
    files = {column: _write_column(place.column(snapshot.generation, column), appendix[column], snapshot.files.get(column))
             for column in sorted(rows & appendix.keys())}
    sync_files(place.column(snapshot.generation, column) for column in files)
    if len({file.rows for file in files.values()}) > 1:
        raise ValueError("the row columns of a snapshot have as many rows each")
    small = {array: x for array, x in appendix.items() if array not in files}
    _store_index(place, units, small, files, snapshot.generation)
    _remove_other_generations(place, snapshot.generation)
    return small | {column: _mapped(place.column(snapshot.generation, column), file) for column, file in files.items()}
