"""Atomic file writes and content hashes for the store.

Every file the store writes first goes to a hidden temporary name in the same folder and is then
renamed over its final name (`os.replace` is atomic on POSIX), so a reader never sees a half file.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.paths import open_lock_file

ROW_GROUP_ROWS = 250_000  # big files can be split into units of work by row group


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call `write(tmp)` on a temporary path beside `path`, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex}")
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
