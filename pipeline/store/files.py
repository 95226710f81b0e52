"""Atomic file writes, content hashes and the store's temporary files.

Every file the store writes first goes to a hidden temporary name in the same folder
(`.<name>.tmp-<32 hex digits>`) and is then renamed over its final name (`os.replace` is atomic on
POSIX), so a reader never sees a half file. Small files are synced one by one (`atomic_write`);
the many partition files of an ingest are synced together just before the commit
(`sync_files`), which costs one flush of the disk instead of one per file.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.paths import open_lock_file
from pipeline.store.location import StorageError

ROW_GROUP_ROWS = 250_000  # big files can be split into units of work by row group
TEMPORARY = re.compile(r"^\..+\.tmp-[0-9a-f]{32}$")  # the only names `remove_temporary` deletes
_HASH_BLOCK = 1 << 22


class DamagedStore(ValueError):
    """A file of the store itself (manifest, dictionary, partition, id run) that cannot be read.

    vase writes each atomically, so this is damage from outside (a hand edit, a truncated copy, a
    failing disk); the message names the file and what to do. `path` and `reason` are its parts
    (set after the message, the one argument, so that it crosses Dask's pickling)."""

    def __init__(self, message: str, path: str = "", reason: str = ""):
        super().__init__(message)
        self.path, self.reason = path, reason


@contextmanager
def reading_store_file(path: Path | str) -> Iterator[None]:
    """Turn an error while reading one of the store's own files into `DamagedStore` naming it."""
    try:
        yield
    except (DamagedStore, StorageError):  # said already: the store's or the object store's own words
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else next(iter(str(exc).splitlines()), "")
        reason = f"{type(exc).__name__}: {reason}"
        raise DamagedStore(f"{path}: a file of the store cannot be read ({reason}); restore it from a backup, or ingest "
                           "the logs into a new store", str(path), reason) from exc


class StoreDiskFull(OSError):
    """The disk (or the quota) of the store is full: said as such, naming the store, never as a
    fault of the log being read (every write of an ingest goes to the store, or, for a store in
    object storage, to the ingest's local scratch folder: `disk` and `remedy` say so)."""

    def __init__(self, root: Path | str, error: OSError, disk: str = "the store's disk", remedy: str = "move the store"):
        super().__init__(f"{root}: {disk} is full ({_first_line(error)}); free space there, or {remedy}, "
                         "and ingest again: what it read since its last commit was not committed")
        self.errno = errno.ENOSPC


_SHORT_WRITE = re.compile(r"\d+ requested and \d+ written")  # numpy's `tofile` (id runs) on a full disk


def disk_full(error: BaseException) -> bool:
    """Whether a write failed for want of space: ENOSPC or EDQUOT, as an errno or in the text of
    Arrow's errors (`[errno 28] No space left on device`), or numpy's short write, which has no errno."""
    if not isinstance(error, OSError):
        return False
    text = str(error)
    return (error.errno in (errno.ENOSPC, errno.EDQUOT) or _SHORT_WRITE.search(text) is not None
            or any(f"[errno {code}]" in text.lower() for code in (errno.ENOSPC, errno.EDQUOT)))


def _first_line(error: OSError) -> str:
    return error.strerror or next(iter(str(error).splitlines()), type(error).__name__)


def temporary_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex}")


@dataclass(frozen=True)
class Digest:
    """A file's SHA-256, size and newline count, and the SHA-256 of each asked-for prefix that
    ends with a newline (by prefix length)."""

    sha256: str
    size: int
    newlines: int
    prefixes: dict[int, str] = field(default_factory=dict)


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def digest_file(path: Path, prefix_sizes: Iterable[int] = ()) -> Digest:
    """One pass over the file: its hash, size and newlines, and the hashes of the prefixes of the
    given sizes that end just after a newline (the earlier versions of a file that grew)."""
    wanted = sorted(set(s for s in prefix_sizes if s > 0))
    digest = hashlib.sha256()
    prefixes: dict[int, str] = {}
    size = newlines = 0
    with path.open("rb") as handle:
        while block := handle.read(_HASH_BLOCK):
            end = size + len(block)
            start = 0
            while wanted and wanted[0] <= end:  # a prefix is cut in the block holding its last byte: cut >= 1
                cut = wanted.pop(0) - size
                digest.update(block[start:cut])
                start = cut
                if block[cut - 1:cut] == b"\n":
                    prefixes[size + cut] = digest.copy().hexdigest()
            digest.update(block[start:])
            newlines += block.count(b"\n")
            size = end
    return Digest(digest.hexdigest(), size, newlines, prefixes)


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call `write(tmp)` on a temporary path beside `path`, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_path(path)
    try:
        write(tmp)
        with tmp.open("rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_parquet(path: Path, table: pa.Table) -> None:
    atomic_write(path, lambda tmp: pq.write_table(table, tmp, compression="zstd", row_group_size=ROW_GROUP_ROWS))


def write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_json(path: Path, value: object) -> None:
    write_text(path, json.dumps(value, indent=2, sort_keys=True, default=str) + "\n")


def sync_files(paths: Iterable[Path]) -> None:
    """fsync many files at once (the file system batches their flushes), then their folders."""
    paths = list(paths)

    def sync(path: Path) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(sync, paths))
        list(pool.map(sync, sorted({p.parent for p in paths})))


def remove_temporary(folders: Iterable[Path], shallow: Iterable[Path] = ()) -> list[Path]:
    """Delete the store's own temporary files (`.<name>.tmp-<32 hex>`) left by killed writers,
    under `folders` and directly in `shallow`; call only while holding the store's lock."""
    removed = []
    found = [(folder, folder.rglob) for folder in folders] + [(folder, folder.glob) for folder in shallow]
    for folder, glob in found:
        if not folder.is_dir():
            continue
        for path in glob(".*.tmp-*"):
            if TEMPORARY.match(path.name) and path.is_file():
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed


@contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """One writer at a time per store (advisory lock; readers do not take it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = open_lock_file(path)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing releases the lock
