"""The store's id index: per log kind, every record id already stored, so that a record seen in an
earlier file is quarantined as a duplicate without scanning the store (`pipeline.logs.identity`).

```
<root>/ids/<kind>/run-<32 hex>.npy    a sorted run: uint64 rows (hash high, hash low, file << 40 | line)
```
The manifest lists, per kind, the hasher, the files (sha256 prefixes, by ordinal) and the runs.
Runs are `.npy` files (never pickles), memory-mapped for lookups. A lookup asks the id filter
first (`pipeline.logs.identity`: built from the runs on the first lookup, not stored; 10 to 20
bits per id in memory, and as much again for the file being ingested), so that only duplicates
and the filter's ~1% false positives walk the runs, and a batch of new ids touches few of their
pages. Still, a long ingest would keep every page it ever touched, so once the mapped runs pass
`RESIDENT` bytes their pages are handed back to the page cache after each batch's lookup (read
again from it, not from disk), and the memory of a big ingest stays flat instead of growing by 8
bytes per id stored. Ingest adds a file's ids as new runs (its own ids are checked against its
earlier batches as it goes, in runs that spill to disk past `SPILL` ids, merged straight into
files from then on); the commit writes them, merges runs of similar size (at most `MAX_RUN` ids
per run, so memory stays bounded), and lists them in the manifest; runs no longer listed are
deleted after the commit. An index built by another hasher (another polars version), or missing
(a store from before the index), is rebuilt from the stored partitions.
"""

from __future__ import annotations

import mmap
import os
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from pipeline.logs import log_kind
from pipeline.logs.identity import HASHER, NOT_FOUND, Run, SeenIds, key_hashes, key_text, merge, where
from pipeline.store.files import reading_store_file, temporary_path
from pipeline.store.location import read_table

FOLDER = "ids"
SPILL = 1 << 20  # ids of one file kept in memory before its runs go to disk
RESIDENT = 256 << 20  # bytes of memory-mapped runs past which their pages are released after a lookup
_RUN = re.compile(r"^run-[0-9a-f]{32}\.npy$")


def _load(path: Path) -> Run:
    with reading_store_file(path):
        return Run(np.load(path, mmap_mode="r", allow_pickle=False))


def release_mapped(runs: list[Run]) -> None:
    """Hand the pages of memory-mapped runs back to the page cache when together they pass
    `RESIDENT` bytes (they stay cached: the next lookup faults them in without reading the disk)."""
    mappings = [run.data.base for run in runs if isinstance(run.data.base, mmap.mmap)]
    if sum(len(m) for m in mappings) > RESIDENT:
        for mapping in mappings:
            mapping.madvise(mmap.MADV_DONTNEED)


@dataclass
class KindIndex:
    """The committed runs of one kind, the runs of files ingested since, and their files."""

    root: Path
    kind: str
    files: list[str] = field(default_factory=list)  # sha256 prefix of each file ordinal
    ids: SeenIds = field(default_factory=SeenIds)  # the runs, and the filter over them built on the first lookup
    paths: list[str | None] = field(default_factory=list)  # per run: its file relative to the root, None if not written yet

    @property
    def runs(self) -> list[Run]:
        return self.ids.runs

    def find(self, high: np.ndarray, low: np.ndarray) -> np.ndarray:
        return self.ids.find(high, low)

    def append(self, run: Run, path: str | None) -> None:
        self.ids.append(run)
        self.paths.append(path)

    def ordinal(self, short: str) -> int:
        self.files.append(short)
        return len(self.files) - 1

    def accept(self, seen: FileIds) -> None:
        """Add a file's runs (its ids were new) to the index."""
        for run, path in zip(seen.runs, seen.paths):
            self.append(run, path)
        release_mapped(self.runs)  # the filter read the file's runs

    def commit(self) -> tuple[dict, list[Path]]:
        """Write new runs, merge runs of similar size; the manifest entry and the files written."""
        runs = list(zip(self.runs, self.paths))
        merged: list[tuple[Run, str | None]] = []
        for run in runs:  # the binary counter: merge the newest while it is at least half the one before
            merged.append(run)
            while len(merged) > 1 and 2 * len(merged[-1][0]) >= len(merged[-2][0]) and \
                    len(merged[-1][0]) + len(merged[-2][0]) <= SeenIds.max_run:
                merged[-2:] = [(merge(merged[-2][0], merged[-1][0]), None)]
        written = []
        for path in set(self.paths) - {path for _, path in merged}:  # merged away: spilled ones go now, the
            if path is not None and Path(path).name.startswith("."):  # committed ones once the manifest no longer lists them
                (self.root / path).unlink(missing_ok=True)
        self.ids.runs, self.paths = [], []  # the same ids in fewer runs: the filter stays
        for run, path in merged:
            if path is None or Path(path).name.startswith("."):  # in memory, or spilled under a temporary name
                final = f"{FOLDER}/{self.kind}/run-{uuid.uuid4().hex}.npy"
                target = self.root / final
                target.parent.mkdir(parents=True, exist_ok=True)
                if path is None:
                    np.save(target, np.asarray(run.data))
                else:
                    os.replace(self.root / path, target)
                written.append(target)
                run, path = _load(target), final
            self.runs.append(run)
            self.paths.append(path)
        entry = {"hasher": HASHER, "files": self.files, "runs": [{"path": p, "ids": len(r)} for r, p in zip(self.runs, self.paths)]}
        return entry, written


class FileIds(SeenIds):
    """The ids of one file being ingested: checked against the store's and against its own
    earlier batches; runs past `SPILL` ids go to temporary files in the index folder."""

    def __init__(self, index: KindIndex, file: int):
        super().__init__()
        self.index, self.file = index, file
        self.paths: list[str | None] = []

    def find(self, high: np.ndarray, low: np.ndarray) -> np.ndarray:
        found = super().find(high, low)
        missing = np.flatnonzero(found == NOT_FOUND)
        if len(missing):
            found[missing] = self.index.find(high[missing], low[missing])
        release_mapped(self.runs + self.index.runs)
        return found

    def add(self, high: np.ndarray, low: np.ndarray, where_: np.ndarray) -> None:
        if len(high):
            self.append(Run.of(high, low, where_))
            self.paths.append(None)
            self.compact()

    def compact(self) -> None:
        """Merge runs as `SeenIds.compact` does; a merge of `SPILL` ids or more is written straight
        to a temporary file, so that memory does not grow with the file."""
        while len(self.runs) > 1 and 2 * len(self.runs[-1]) >= len(self.runs[-2]) and \
                len(self.runs[-1]) + len(self.runs[-2]) <= self.max_run:
            old = self.paths[-2:]
            older, newer = self.runs[-2:]
            if len(older) + len(newer) >= SPILL:
                target = self._temporary()
                merged = np.lib.format.open_memmap(target, mode="w+", dtype=np.uint64, shape=(3, len(older) + len(newer)))
                merge(older, newer, merged)
                del merged  # no flush: the run is read back through the page cache; the commit fsyncs it
                self.runs[-2:], self.paths[-2:] = [_load(target)], [str(target.relative_to(self.index.root))]
            else:
                self.runs[-2:], self.paths[-2:] = [merge(older, newer)], [None]
            for path in old:
                if path is not None:
                    (self.index.root / path).unlink(missing_ok=True)
        if self.paths[-1] is None and len(self.runs[-1]) >= SPILL:
            self.runs[-1], self.paths[-1] = self._spill(self.runs[-1])

    def _temporary(self) -> Path:
        target = temporary_path(self.index.root / FOLDER / self.index.kind / "run.npy")
        target.parent.mkdir(parents=True, exist_ok=True)
        return target

    def _spill(self, run: Run) -> tuple[Run, str]:
        target = self._temporary()
        with target.open("wb") as handle:
            np.save(handle, np.asarray(run.data))
        return _load(target), str(target.relative_to(self.index.root))

    def discard(self) -> None:
        for path in self.paths:
            if path is not None:
                (self.index.root / path).unlink(missing_ok=True)
        self.runs, self.paths, self.id_filter = [], [], None


def load_index(root: Path, kind: str, entry: dict | None) -> KindIndex | None:
    """The committed index of a kind, or None if it is missing or was built by another hasher."""
    if not entry or entry.get("hasher") != HASHER:
        return None
    index = KindIndex(root, kind, list(entry["files"]))
    for run in entry["runs"]:
        index.append(_load(root / run["path"]), run["path"])
    return index


def rebuild(root: Path, kind: str, reports: list, dictionary: Callable[[str], list[str]],
            files: list[str] = (), locate: Callable[[str], str] | None = None) -> KindIndex:
    """The index of a kind from its stored partitions (reports: the kind's ingested files, oldest
    first). Ids a reader made up (`<file name>:<line>`) are left out; lines are unknown (0).
    `files`: the ordinals of the index being replaced, kept (the rows' ingest positions hold
    them), so that files ingested later still get higher ordinals. `locate`: a partition's
    address (`Store.locate`; by default under `root`)."""
    locate = locate or (lambda relative: str(root / relative))
    chosen = log_kind(kind)
    index = KindIndex(root, kind, list(files))
    known = {short: ordinal for ordinal, short in enumerate(files)}
    decode = {c: dictionary(d) for c, d in chosen.ids.items() if c in chosen.record_id}
    for report in reports:
        short = report.key[:16]
        file = known[short] if short in known else index.ordinal(short)
        if not chosen.record_id or not report.partitions:
            continue
        frames = []
        for part in report.partitions:
            with reading_store_file(locate(part.path)):
                frame = pl.from_arrow(read_table(locate(part.path), columns=list(chosen.record_id)))
            for column, names in decode.items():
                frame = frame.with_columns(pl.Series(names, dtype=pl.String).gather(frame.get_column(column)).alias(column))
            frames.append(frame)
        frame = pl.concat(frames)
        keys = key_text(frame.to_arrow(), chosen.record_id).unique(maintain_order=True)
        made_up = re.escape(Path(report.source).name) + r":\d+"
        keys = keys.filter(~keys.str.contains(f"^{made_up}$"))
        high, low = key_hashes(keys)
        found = index.find(high, low)
        new = found == NOT_FOUND
        if new.any():
            index.append(Run.of(high[new], low[new], where(file, np.zeros(int(new.sum()), np.int64))), None)
    return index


def garbage(root: Path, listed: set[str]) -> list[Path]:
    """Run files of the index folder that the manifest does not list (`listed`): merged away, or
    written by an ingest that was killed before its commit."""
    folder = root / FOLDER
    if not folder.is_dir():
        return []
    return [p for p in folder.glob("*/run-*.npy") if _RUN.match(p.name) and str(p.relative_to(root)) not in listed]
