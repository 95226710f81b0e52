"""How an ingest's files become part of a store: one interface, a local folder's way and object storage's.

`Store.ingest` does the same work for both: it reads the newest manifest, the dictionaries and
the kind's id index, writes each file's partitions under temporary names in a local folder
(`Commit.root`), and hands them to `Commit.commit` with the manifest that lists them, every
`COMMIT_EVERY` files (a checkpoint) and at its end. Only the commit differs:

- `FolderCommit` (a local store, as before): one writer at a time by `flock`; the partition files
  are renamed into place inside the store, then the id runs, the dictionaries and last
  `manifest.json` are written atomically (rename). Files that no manifest lists (a commit killed
  before its manifest) are deleted by the next writer before it starts. A full disk is
  `StoreDiskFull`, and the attempt's temporary files are removed.
- `ObjectCommit` (`s3://`, `gs://`, `az://`): one writer at a time by a lease object; the ingest
  works in a local scratch folder, and its commit uploads every partition, quarantine, id run
  and changed dictionary under a name of its own, then creates the next manifest only if it does
  not exist yet (`pipeline.store.objects`). A checkpoint is such a commit: the lease is renewed,
  manifest n+1 created, and the next checkpoint builds on it (n+2); a dictionary that changed gets
  a new object each time, since the manifest before keeps naming the last one. Orphans of a
  killed or beaten writer are deleted by the next writer after its commit.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Protocol

from pipeline.logs import KINDS
from pipeline.paths import below
from pipeline.store.dictionary import IdMap
from pipeline.store.files import StoreDiskFull, disk_full, exclusive_lock, remove_temporary, sync_files
from pipeline.store.index import FOLDER, KindIndex, garbage
from pipeline.store.location import address
from pipeline.store.objects import ObjectStore, lease_seconds
from pipeline.store.partitions import Written

MANIFEST = "manifest.json"
log = logging.getLogger(__name__)


class Manifest(Protocol):
    """What a commit needs of `pipeline.store.store.Manifest` (which is built on this module)."""

    files: dict
    ids: dict[str, dict]
    dictionaries: dict[str, str]

    def data(self) -> dict: ...

    def save(self, path: Path) -> None: ...


def listed_runs(manifest: Manifest) -> set[str]:
    return {run["path"] for entry in manifest.ids.values() for run in entry["runs"]}


def dictionary_path(name: str, tag: str = "") -> str:
    return f"dictionaries/{name}{tag}.parquet"


class FolderCommit:
    """The commit of a local store: flock, rename into place, the manifest written last."""

    tag = ""  # partition names as they always were: `<sha>.parquet`

    def __init__(self, root: Path):
        self.root = root
        self._stack = ExitStack()

    def __enter__(self) -> FolderCommit:
        self._stack.enter_context(exclusive_lock(self.root / ".lock"))
        self._remove_temporary()
        return self

    def __exit__(self, kind, error, traceback) -> None:
        try:
            if isinstance(error, StoreDiskFull):
                self._remove_temporary()  # the space the files read since the last commit held
        finally:
            self._stack.close()

    def _remove_temporary(self) -> None:
        remove_temporary([self.root / k for k in KINDS] + [self.root / "quarantine", self.root / FOLDER],
                         shallow=[self.root, self.root / "dictionaries"])

    def out_of_space(self, error: OSError) -> StoreDiskFull:
        """What a write that found the disk full raises: every write of an ingest goes to the store."""
        return StoreDiskFull(self.root, error)

    def begin(self, manifest: Manifest) -> None:
        self._remove_unlisted_partitions(manifest)

    def dictionary(self, name: str, manifest: Manifest) -> IdMap:
        return IdMap.load(self.root / dictionary_path(name))

    def fetch(self, relatives: list[str]) -> None:
        """Local files are where the ingest reads them."""

    def keep_alive(self) -> None:
        """A flock holds as long as the process does."""

    def commit(self, manifest: Manifest, maps: dict[str, IdMap], kind: str, index: KindIndex | None,
               pending: list[Written]) -> None:
        """Partitions into place, then the id index, the dictionaries and last the manifest. If any
        step fails (a full disk), the files it put in place that no manifest lists are removed
        again, so that they do not hold the space a retry needs."""
        committed = listed_runs(manifest)  # its id runs are set below, by this commit only
        try:
            sync_files(w.temporary for w in pending)
            for written in pending:
                os.replace(written.temporary, below(self.root, written.path))
            if index is not None:
                entry, runs = index.commit()
                sync_files(runs)
                manifest.ids[kind] = entry
            for name, idmap in maps.items():
                idmap.save(below(self.root, dictionary_path(name)))
            manifest.save(below(self.root, MANIFEST))
        except BaseException as error:
            for written in pending:  # new names (a file whose content is listed is never read again)
                written.temporary.unlink(missing_ok=True)
                (self.root / written.path).unlink(missing_ok=True)
            self._remove_unlisted_runs(committed)
            if disk_full(error):
                raise self.out_of_space(error) from error
            raise
        self._remove_unlisted_runs(listed_runs(manifest))

    def finish(self, manifest: Manifest) -> None:
        """Nothing to commit: nothing to do."""

    def _remove_unlisted_partitions(self, manifest: Manifest) -> None:
        """Delete the partition and quarantine files that no manifest lists, and the folders they
        leave empty: a commit killed (SIGKILL, power) between putting them in place and saving its
        manifest leaves them, invisible to readers, holding their space until the same file is
        ingested again, which a log that grew meanwhile never is. Symbolic links are left alone (and
        folders behind them unread): writing through one is refused (`paths.below`), loudly."""
        listed = {p.path for r in manifest.files.values() for p in r.partitions}
        listed |= {r.quarantine for r in manifest.files.values() if r.quarantine}
        removed = 0
        for folder in [self.root / k for k in KINDS] + [self.root / "quarantine"]:
            for path in sorted(folder.rglob("*.parquet")) if folder.is_dir() and not folder.is_symlink() else ():
                if path.relative_to(self.root).as_posix() not in listed and not path.is_symlink() and path.is_file():
                    path.unlink()
                    removed += 1
                    if not any(path.parent.iterdir()):
                        path.parent.rmdir()
        if removed:
            log.warning("%s: removed %d partition file(s) that no manifest lists (left by an interrupted ingest)",
                        self.root, removed)

    def _remove_unlisted_runs(self, listed: set[str]) -> None:
        for path in garbage(self.root, listed):
            path.unlink(missing_ok=True)


class ObjectCommit:
    """The commit of a store in object storage: a lease, uploads under unique names, the next
    manifest created only if absent. The ingest works in a local scratch folder (`root`)."""

    def __init__(self, objects: ObjectStore):
        self.objects = objects
        self.sequence, self.data = 0, {}  # the manifest the ingest builds on
        self.tag = f"-{objects.token}"
        self._stack = ExitStack()
        self._renewed = 0.0
        self._loaded: dict[str, int] = {}  # each dictionary's size as committed

    def __enter__(self) -> ObjectCommit:
        self.objects.newest()  # an unreachable or damaged store is refused before the lease is written
        self.objects.acquire()
        self._stack.callback(self.objects.release)
        try:
            self.sequence, self.data = self.objects.newest()  # as read under the lease
            self._renewed = time.monotonic()
            self.root = Path(self._stack.enter_context(tempfile.TemporaryDirectory(prefix="vase-ingest-")))
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()  # the scratch folder too

    def out_of_space(self, error: OSError) -> StoreDiskFull:
        """What a write that found the disk full raises: the ingest writes to its scratch folder."""
        return StoreDiskFull(self.root, error, disk=f"the disk of the local scratch folder of the ingest into {self.objects.url}",
                             remedy="set TMPDIR to a folder on a disk with room")

    def begin(self, manifest: Manifest) -> None:
        """Orphans are removed after a commit (`finish`, `commit`), when they are fenced off."""

    def dictionary(self, name: str, manifest: Manifest) -> IdMap:
        listed = manifest.dictionaries.get(name)
        idmap = IdMap.load(address(self.objects.url, listed)) if listed else IdMap()
        self._loaded[name] = len(idmap)
        return idmap

    def fetch(self, relatives: list[str]) -> None:
        """Download objects the ingest reads as local files (the id runs, memory-mapped)."""
        for relative in relatives:
            self.objects.download(relative, below(self.root, relative))

    def keep_alive(self) -> None:
        """Renew the lease a third of its time after the last renewal."""
        if time.monotonic() - self._renewed > lease_seconds() / 3:
            self.objects.renew()
            self._renewed = time.monotonic()

    def commit(self, manifest: Manifest, maps: dict[str, IdMap], kind: str, index: KindIndex | None,
               pending: list[Written]) -> None:
        self.objects.renew()
        uploaded: list[str] = []
        try:
            for written in pending:
                self.objects.upload(written.temporary, written.path)
                uploaded.append(written.path)
            if index is not None:
                entry, runs = index.commit()
                for run in runs:
                    relative = run.relative_to(self.root).as_posix()
                    self.objects.upload(run, relative)
                    uploaded.append(relative)
                manifest.ids[kind] = entry
            for name, idmap in maps.items():
                if name in manifest.dictionaries and len(idmap) == self._loaded.get(name):
                    continue  # unchanged: the object the manifest names already holds it
                relative = dictionary_path(name, f"{self.tag}-{self.sequence + 1}")  # never one an earlier checkpoint listed
                idmap.save(below(self.root, relative))
                self.objects.upload(self.root / relative, relative)
                uploaded.append(relative)
                manifest.dictionaries[name] = relative
            self.objects.create_manifest(self.sequence + 1, manifest.data())
        except BaseException as error:
            self.objects.remove(uploaded)  # what a killed process leaves instead, the next writer removes
            if disk_full(error):
                raise self.out_of_space(error) from error
            raise
        self.sequence += 1
        self._loaded = {name: len(idmap) for name, idmap in maps.items()}
        for written in pending:  # uploaded: the scratch folder holds one checkpoint's files at most
            written.temporary.unlink(missing_ok=True)
        self._collect()

    def finish(self, manifest: Manifest) -> None:
        """Nothing new to commit; orphans left by a killed writer are removed after an unchanged
        manifest is committed over them, so that writer can never commit what is removed."""
        if self.sequence and self.objects.orphans(self.sequence):
            self.objects.create_manifest(self.sequence + 1, manifest.data())
            self.sequence += 1
            self._collect()

    def _collect(self) -> None:
        orphans = self.objects.orphans(self.sequence)
        if orphans:
            log.warning("%s: removing %d object(s) that no manifest lists (left by an interrupted or beaten writer)",
                        self.objects.url, len(orphans))
        self.objects.remove(orphans)
        self.objects.prune_manifests(self.sequence)
