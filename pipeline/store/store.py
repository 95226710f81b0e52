"""The partitioned Parquet store: layout, manifest, id dictionaries; how each kind is encoded is
declared by its `LogKind` (`pipeline.logs.kinds`).

```
<root>/manifest.json                       the commit point: ingested files and their partitions
<root>/dictionaries/<name>.parquet         name -> dense id (agents, judges, prompts)
<root>/<kind>/date=YYYY-MM-DD/<sha>.parquet rows with a timestamp, by UTC date (hive style)
<root>/<kind>/source=<sha>/part.parquet    rows without one, by source file
<root>/quarantine/<kind>/<sha>.parquet     rejected rows: file, line, field, reason, record
<root>/ids/<kind>/run-<hex>.npy            the id index: every record id stored (`pipeline.store.index`)
```
`<sha>` is the first 16 hex digits of the input's key: the source file's SHA-256, or, for a file read
through a mapping (`pipeline.logs.mapping`), the hash of that and the mapping (`IngestReport.key`). Ingest reads a file batch by batch
and writes its partitions under temporary names (`pipeline.store.partitions`); the commit renames
them into place, then writes the id index, the dictionaries and last the manifest, each
atomically; readers list partitions from the manifest only, so an interrupted ingest leaves nothing
visible, and re-running it rewrites the same names (temporary files of a killed ingest, and the
partition files of a commit killed before its manifest, which no manifest lists, are deleted by the
next one). An ingest of many files commits every `COMMIT_EVERY` files, so a killed ingest of a big
folder keeps what it committed and the next run goes on from there. A file whose content hash (and
mapping) is in the manifest is skipped, whatever its name.

Exactly once across files: a record whose id (`LogKind.record_id`) is in the index, from an
earlier file or earlier in the same one, is quarantined as a duplicate naming where it was first
seen, so the same battles under another name or in another format, or partially overlapping
files, are stored once. A CSV, TSV or JSONL file that starts with the bytes of a file already
ingested (a log that grew) is read from where that file ended: only its new rows are read and
counted, with their true line numbers (rows without ids, whose ids of content count identical
rows over the whole file, are read from its start, and only the new ones counted). A file that cannot be read at all is refused whole with one line
naming the file (and the line and field where known), recorded in the manifest with that reason
(not read again until its content changes), and the other files go on. A file of the store
itself that cannot be read (damaged from outside) raises `DamagedStore` naming it; a damaged id
index is rebuilt like a missing one.

Ingest order: the rows of kinds with record ids (battles, games, ballots) carry an
`ingest_position` column, their file's ordinal in the id index (files numbered in the order they
were ingested, never reused) << 40 | their line (`pipeline.logs.identity.INGEST_POSITION`). The
new rows of a file that grew get the new file's ordinal and their true lines, so positions keep
increasing. Stores written before the column lack it (`pipeline.stats.sequence` says what then).
"""

from __future__ import annotations

import bisect
import dataclasses
import datetime as dt
import hashlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.logs import KINDS, FileStart, Mapping, UnreadableFile, log_kind, read_batches
from pipeline.logs.records import LINE_SUFFIXES, check_regular_file
from pipeline.logs.identity import INGEST_POSITION, drop_seen, ingest_positions
from pipeline.logs.kinds import DICTIONARIES, TIMESTAMP, LogKind
from pipeline.logs.names import NAME_DICTIONARIES, LookAlikes
from pipeline.overlap import Behind, read_ahead
from pipeline.paths import UnsafePath, below
from pipeline.store.dictionary import IdMap
from pipeline.store.files import (DamagedStore, StoreDiskFull, digest_file, disk_full, exclusive_lock, reading_store_file,
                                  remove_temporary, sync_files, write_json)
from pipeline.store.index import FOLDER, FileIds, KindIndex, garbage, load_index, rebuild
from pipeline.store.partitions import PartitionWriter, QuarantineWriter, Written
from pipeline.terminal import visible

MANIFEST = "manifest.json"
COMMIT_EVERY = 1_000  # files ingested between two commits of one ingest (each commit saves the whole manifest)
log = logging.getLogger(__name__)


def is_store(folder: Path) -> bool:
    """Whether `folder` holds a vase store (a manifest and its dictionaries)."""
    return (folder / MANIFEST).is_file() and (folder / "dictionaries").is_dir()


@dataclass(frozen=True)
class Partition:
    path: str  # relative to the store root
    rows: int


@dataclass(frozen=True)
class IngestReport:
    source: str
    kind: str
    sha256: str
    status: str  # "ingested", "skipped" (already in the store), "unreadable", or "read" (a kind rated directly, not stored)
    rows_in: int = 0
    rows_accepted: int = 0
    rows_quarantined: int = 0
    partitions: tuple[Partition, ...] = ()
    quarantine: str | None = None
    error: str | None = None
    ingested_at: str | None = None
    look_alikes: tuple[str, ...] = ()  # new names that look like known ones (`pipeline.logs.names.LookAlikes`)
    size: int = 0  # bytes, and newlines, of the file: a later file that starts with it continues it
    lines: int = 0
    continues: str | None = None  # the sha256 of the earlier file this one grew from (only the rows after it were read)
    mapping: dict | None = None  # how it was read (`pipeline.logs.mapping.Mapping.record`), if not as it is

    @property
    def key(self) -> str:
        """What names this input in the store: its content hash, or, read through a mapping, the
        hash of that and the mapping (the same bytes under another mapping are another input)."""
        if not self.mapping or not self.sha256:
            return self.sha256
        return hashlib.sha256(f"{self.sha256}\n{json.dumps(self.mapping, sort_keys=True)}".encode()).hexdigest()

    @classmethod
    def from_json(cls, entry: dict) -> IngestReport:
        return cls(**entry | {"partitions": tuple(Partition(**p) for p in entry["partitions"]),
                              "look_alikes": tuple(entry.get("look_alikes", ()))})


@dataclass
class Manifest:
    files: dict[str, IngestReport] = field(default_factory=dict)  # by key (`IngestReport.key`)
    ids: dict[str, dict] = field(default_factory=dict)  # per kind: its id index (`pipeline.store.index`)

    @classmethod
    def load(cls, path: Path) -> Manifest:
        if not path.exists():
            return cls()
        with reading_store_file(path):
            data = json.loads(path.read_text(encoding="utf-8"))
            manifest = cls({r.key: r for r in map(IngestReport.from_json, data["files"])}, dict(data.get("ids", {})))
            for listed in manifest.listed_paths():
                check_inside_store(listed)
            return manifest

    def listed_paths(self) -> list[str]:
        """Every file of the store the manifest names: partitions, quarantines and id runs (relative to the root)."""
        files = [p.path for r in self.files.values() for p in r.partitions] + [r.quarantine for r in self.files.values() if r.quarantine]
        return files + [run["path"] for entry in self.ids.values() for run in entry["runs"]]

    def save(self, path: Path) -> None:
        write_json(path, {"format": 1, "files": [asdict(r) for r in sorted(self.files.values(), key=lambda r: r.key)],
                          "ids": self.ids})


def check_inside_store(path: str) -> None:
    """A path read from the manifest must name a file inside the store: relative, without '..'
    (a hand-edited manifest could otherwise make readers and deletions reach any file)."""
    relative = PurePosixPath(path)
    if not path or relative.is_absolute() or ".." in relative.parts or "\\" in path:
        raise ValueError(f"it lists {path!r}, a path outside the store (absolute or with '..')")


def _replace(table: pa.Table, name: str, values: pa.Array) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), name, values)


def _distinct_names(values: pa.ChunkedArray) -> tuple[pa.DictionaryArray, pa.Array | None]:
    """A column of names dictionary-encoded (hashed once: its distinct names are the dictionary,
    its ids a take from them; a reader's dictionary array is taken as it is, without the names no
    row uses), with the offsets of a list column (None for a flat one)."""
    values = values.combine_chunks()
    if pa.types.is_dictionary(values.type):
        return used_values(values), None
    if not pa.types.is_list(values.type):
        return pc.dictionary_encode(values), None
    return pc.dictionary_encode(values.flatten()), pc.subtract(values.offsets, values.offsets[0])


def used_values(values: pa.DictionaryArray) -> pa.DictionaryArray:
    """`values` with a dictionary of the values its rows use (a triage's dictionary still holds
    the values of the rows it rejected, which must not become names of the store)."""
    indices = pc.drop_null(values.indices).to_numpy()
    used = np.bincount(indices, minlength=len(values.dictionary)) > 0
    if used.all():
        return values
    kept = np.flatnonzero(used)
    renumbered = np.zeros(len(used), np.int32)
    renumbered[kept] = np.arange(len(kept), dtype=np.int32)
    return pa.DictionaryArray.from_arrays(pc.take(pa.array(renumbered), values.indices), values.dictionary.take(pa.array(kept)))


def label_codes(values: pa.ChunkedArray | pa.Array, labels: tuple[str, ...]) -> pa.Array:
    """Each label's position in `labels`, as int8; the reader has rejected other labels. Of a
    dictionary array, each distinct label is looked up once."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    value_set = pa.array(labels, pa.string())
    if pa.types.is_dictionary(values.type):
        codes = pc.take(pc.index_in(values.dictionary, value_set=value_set), values.indices)
    else:
        codes = pc.index_in(values, value_set=value_set)
    if codes.null_count:
        raise ValueError(f"labels outside {list(labels)}")
    return codes.cast(pa.int8())


def encode(kind: LogKind, table: pa.Table, maps: Mapping[str, IdMap]) -> pa.Table:
    """A read table as the store keeps it: names as ids of the kind's dictionaries, labels as codes.

    Names new to the table get the next ids in sorted order, all the columns of one dictionary at
    once, so the ids do not depend on the order of rows or of columns.
    """
    encoded = {column: _distinct_names(table.column(column)) for column in kind.ids}
    for dictionary in sorted(set(kind.ids.values())):
        maps[dictionary].add(pa.concat_arrays([encoded[c][0].dictionary for c, d in kind.ids.items() if d == dictionary]))
    for column, dictionary in kind.ids.items():
        names, offsets = encoded[column]
        ids = maps[dictionary].lookup_encoded(names)
        table = _replace(table, column, ids if offsets is None else pa.ListArray.from_arrays(offsets, ids))
    for column, labels in kind.codes.items():
        table = _replace(table, column, label_codes(table.column(column), labels))
    for position, column in enumerate(table.schema):  # stored as plain values
        if pa.types.is_dictionary(column.type):
            table = table.set_column(position, column.name, table.column(position).cast(column.type.value_type))
    return kind.canonical(table) if kind.canonical is not None else table


def distinct_columns(kind: LogKind) -> tuple[str, ...]:
    """The stored columns whose values are (nearly) all different, written without a Parquet
    dictionary: the ingest position always; the record id and the timestamp where each row is a
    record of its own (a game's rows share both)."""
    per_row = kind.record_id + ((TIMESTAMP,) if kind.dated else ()) if kind.unit_column is None else ()
    return (INGEST_POSITION, *per_row) if kind.record_id else per_row


class Store:
    """A folder of partitioned Parquet logs with a manifest and id dictionaries."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    @property
    def manifest(self) -> Manifest:
        return Manifest.load(self.root / MANIFEST)

    def dictionary(self, name: str = "agents") -> IdMap:
        return IdMap.load(self.root / "dictionaries" / f"{name}.parquet")

    def partitions(self, kind: str, manifest: Manifest | None = None) -> list[Partition]:
        """The committed partition files of one kind, in a fixed order (as `manifest` lists them, if given)."""
        parts = [p for r in (manifest or self.manifest).files.values() if r.kind == kind for p in r.partitions]
        return sorted(parts, key=lambda p: p.path)

    def inputs(self, kind: str, manifest: Manifest | None = None) -> list[IngestReport]:
        """The files of one kind the store has seen (ingested or refused), by source (as `manifest` lists them, if given)."""
        return sorted((r for r in (manifest or self.manifest).files.values() if r.kind == kind), key=lambda r: r.source)

    def path(self, partition: Partition) -> Path:
        return self.root / partition.path

    def kinds(self) -> list[str]:
        return sorted({r.kind for r in self.manifest.files.values() if r.partitions})

    def ingest(self, sources: list[str | Path], kind: str, mapping: Mapping | None = None) -> list[IngestReport]:
        """Ingest files not yet in the store (read through `mapping`, if given: an input is the
        file and its mapping); one report per source, in the given order. A file
        that cannot be read is refused (status `unreadable`, one line in `error`) and recorded in
        the manifest, so that it is not read again until its content changes; the other files go on."""
        chosen = log_kind(kind)
        with exclusive_lock(self.root / ".lock"):
            self._remove_temporary()
            manifest = self.manifest
            self._remove_unlisted_partitions(manifest)
            maps = {name: self.dictionary(name) for name in DICTIONARIES}
            index = self._id_index(chosen, manifest, maps) if chosen.record_id else None
            pending: list[Written] = []
            looks = {name: LookAlikes(maps[name].names) for name in NAME_DICTIONARIES}
            names = {r.key[:16]: Path(r.source).name for r in manifest.files.values()}  # for duplicates' reasons
            versions = LineVersions.of(manifest)
            reports = []
            changed = 0  # files ingested or newly refused since the last commit
            try:
                for src in sources:
                    report = self._ingest_one(Path(src), chosen, manifest, maps, index, pending, looks, names, versions,
                                              mapping)
                    reports.append(report)
                    names.setdefault(report.key[:16], Path(src).name)
                    changed += bool(report.sha256 and manifest.files.get(report.key) is report)
                    if changed >= COMMIT_EVERY:  # a checkpoint: an ingest of a big folder that is killed keeps these
                        self._commit(manifest, maps, kind, index, pending)
                        pending.clear()
                        changed = 0
            except StoreDiskFull:
                self._remove_temporary()  # the space the files read since the last commit held
                raise
            if changed:
                self._commit(manifest, maps, kind, index, pending)
            return reports

    def _remove_temporary(self) -> None:
        remove_temporary([self.root / k for k in KINDS] + [self.root / "quarantine", self.root / FOLDER],
                         shallow=[self.root, self.root / "dictionaries"])

    def _id_index(self, kind: LogKind, manifest: Manifest, maps: dict[str, IdMap]) -> KindIndex:
        """The kind's id index as committed, or rebuilt from its partitions (missing, damaged, or
        built by another hasher)."""
        entry = manifest.ids.get(kind.name)
        try:
            index = load_index(self.root, kind.name, entry)
        except DamagedStore as error:  # derived data: rebuilt as if it were missing
            log.warning("%s: cannot be read (%s); rebuilding the %s id index from the stored partitions",
                        error.path, error.reason, kind.name)
            index = None
        if index is None:
            stored = sorted((r for r in manifest.files.values() if r.kind == kind.name and r.status == "ingested"),
                            key=lambda r: (r.ingested_at or "", r.key))
            index = rebuild(self.root, kind.name, stored, lambda name: maps[name].names, (entry or {}).get("files", []))
        return index

    def _commit(self, manifest: Manifest, maps: dict[str, IdMap], kind: str, index: KindIndex | None,
                pending: list[Written]) -> None:
        """Partitions into place, then the id index, the dictionaries and last the manifest. If any
        step fails (a full disk), the files it put in place that no manifest lists are removed
        again, so that they do not hold the space a retry needs."""
        try:
            sync_files(w.temporary for w in pending)
            for written in pending:
                os.replace(written.temporary, below(self.root, written.path))
            if index is not None:
                entry, runs = index.commit()
                sync_files(runs)
                manifest.ids[kind] = entry
            for name, idmap in maps.items():
                idmap.save(below(self.root, f"dictionaries/{name}.parquet"))
            manifest.save(below(self.root, MANIFEST))
        except BaseException as error:
            for written in pending:  # new names (a file whose content is listed is never read again)
                written.temporary.unlink(missing_ok=True)
                (self.root / written.path).unlink(missing_ok=True)
            self._remove_unlisted_runs(self.manifest)
            if disk_full(error):
                raise StoreDiskFull(self.root, error) from error
            raise
        self._remove_unlisted_runs(manifest)

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

    def _remove_unlisted_runs(self, manifest: Manifest) -> None:
        listed = {run["path"] for entry in manifest.ids.values() for run in entry["runs"]}
        for path in garbage(self.root, listed):
            path.unlink(missing_ok=True)

    def _ingest_one(self, source: Path, kind: LogKind, manifest: Manifest, maps: dict[str, IdMap],
                    index: KindIndex | None, pending: list[Written], looks: dict[str, LookAlikes],
                    names: dict[str, str], versions: LineVersions, mapping: Mapping | None = None) -> IngestReport:
        record = mapping.record() if mapping else None
        try:
            check_regular_file(source)
            before = _version(source)
            earlier = versions.smaller(source, kind.name, before[0], record)
            digest = digest_file(source, earlier)
        except UnreadableFile as exc:
            return IngestReport(str(source), kind.name, "", "unreadable", error=str(exc), mapping=record)
        except OSError as exc:
            return IngestReport(str(source), kind.name, "", "unreadable", error=f"{source}: {exc.strerror or exc}", mapping=record)
        key = IngestReport(str(source), kind.name, digest.sha256, "", mapping=record).key
        if key in manifest.files and (known := _known(source, kind.name, manifest.files[key])) is not None:
            return known
        grown = [r for size in sorted(digest.prefixes, reverse=True) for r in earlier[size]
                 if r.sha256 == digest.prefixes[size]][:1]
        start = FileStart(grown[0].size, grown[0].lines) if grown else None
        sizes = {name: len(idmap) for name, idmap in maps.items()}
        file_ids = FileIds(index, index.ordinal(key[:16])) if index is not None else None
        writer = PartitionWriter(self.root, kind.name, key[:16], kind.dated, TIMESTAMP,
                                 distinct=distinct_columns(kind))
        quarantine = QuarantineWriter(self.root, kind.name, key[:16])
        behind = Behind(writer.add)  # partitions written while the next batches are read and encoded
        try:
            rows_in = rows_accepted = 0
            for result in read_ahead(read_batches(source, kind.name, mapping=mapping, start=start)):
                if file_ids is not None and result.keyed:
                    result = drop_seen(result, kind.record_id, file_ids, file_ids.file,
                                       lambda ordinal: names.get(index.files[ordinal], index.files[ordinal]),
                                       kind.unit_column is not None)
                table = encode(kind, result.table, maps)
                if file_ids is not None:
                    table = table.append_column(INGEST_POSITION, ingest_positions(file_ids.file, result.lines))
                behind.put(table)
                quarantine.add(result.quarantined)
                rows_in += result.rows_in
                rows_accepted += result.rows_accepted
            if _version(source) != before or digest.size != before[0]:  # a log being written to: what was read is
                raise OSError(f"{source} changed while it was read; ingest it again")  # not what was hashed
            behind.finish()
            written = writer.finish()
            quarantined = quarantine.finish()
        except (Exception, pl.exceptions.PanicException) as exc:  # noqa: BLE001 (one file never stops the others;
            # a panic inside polars is a BaseException)
            behind.cancel()
            writer.discard()
            quarantine.discard()
            if file_ids is not None:
                file_ids.discard()
            for name, size in sizes.items():
                maps[name].truncate(size)
            if isinstance(exc, UnsafePath):  # the store's fault, not the file's: nothing more is written
                raise
            if disk_full(exc):  # every write goes to the store: its disk is full, whatever file was being read
                raise StoreDiskFull(self.root, exc) from exc
            report = IngestReport(str(source), kind.name, digest.sha256, "unreadable", error=_refusal(source, exc), ingested_at=_now(),
                                  mapping=record)
            if isinstance(exc, UnreadableFile):  # the data's fault: not read again until it changes
                manifest.files[key] = report
            return report
        if file_ids is not None:
            index.accept(file_ids)
        pending.extend(written)
        if quarantined is not None:
            pending.append(quarantined)
        look_alikes = tuple(f"{name} {new!r} looks like {known!r}" for name in NAME_DICTIONARIES
                            for new, known in looks[name].add(maps[name].names[sizes[name]:]))
        report = IngestReport(str(source), kind.name, digest.sha256, "ingested", rows_in, rows_accepted, quarantine.rows,
                              tuple(Partition(w.path, w.rows) for w in written),
                              quarantined.path if quarantined else None, ingested_at=_now(), look_alikes=look_alikes,
                              size=digest.size, lines=digest.newlines, continues=grown[0].sha256 if grown else None,
                              mapping=record)
        manifest.files[key] = report
        versions.add(report)
        return report


def _version(path: Path) -> tuple[int, int]:
    status = path.stat()
    return status.st_size, status.st_mtime_ns


class LineVersions:
    """The manifest's ingested files of line-based formats by kind, suffix and size: the earlier
    versions a file may have grown from (`digest_file` hashes its prefixes of those sizes). Built
    once per ingest and kept up to date as files are ingested, so that the work of a file does not
    grow with the number of files in the store (scanning the manifest per file cost 37.7 ms a file
    at 9,000 files; `benchmarks/bench_ingest_files.py`)."""

    def __init__(self) -> None:
        self._sizes: dict[tuple[str, str], list[int]] = {}  # sorted, distinct
        self._files: dict[tuple[str, str], dict[int, list[IngestReport]]] = {}

    @classmethod
    def of(cls, manifest: Manifest) -> LineVersions:
        versions = cls()
        for report in manifest.files.values():
            versions.add(report)
        return versions

    def add(self, report: IngestReport) -> None:
        suffix = Path(report.source).suffix.lower()
        if report.status != "ingested" or not report.size or suffix not in LINE_SUFFIXES:
            return
        key = (report.kind, suffix)
        by_size = self._files.setdefault(key, {})
        if report.size not in by_size:
            bisect.insort(self._sizes.setdefault(key, []), report.size)
        by_size.setdefault(report.size, []).append(report)

    def smaller(self, source: Path, kind: str, size: int, mapping: dict | None = None) -> dict[int, list[IngestReport]]:
        """By size, the ingested files of `kind` in `source`'s line-based format shorter than `size`
        bytes, read through `mapping` (a file grows from one read the same way)."""
        key = (kind, source.suffix.lower())
        sizes = self._sizes.get(key, [])
        found = {s: [r for r in self._files[key][s] if r.mapping == mapping] for s in sizes[: bisect.bisect_left(sizes, size)]}
        return {s: reports for s, reports in found.items() if reports}


def _known(source: Path, kind: str, seen: IngestReport) -> IngestReport | None:
    """The report for a file whose bytes the manifest knows, or None to read it (a file refused
    as another kind or format)."""
    if seen.status == "unreadable":
        if seen.kind != kind or Path(seen.source).suffix.lower() != source.suffix.lower():
            return None
        reason = seen.error.removeprefix(f"{visible(seen.source)}: ")  # UnreadableFile's message names it so
        return dataclasses.replace(seen, source=str(source), error=f"{source}: {reason} (refused on {seen.ingested_at}; "
                                   "not read again until the file changes)")
    if seen.kind != kind:
        return IngestReport(str(source), kind, seen.sha256, "unreadable", error=f"{source}: already ingested as {seen.kind}",
                            mapping=seen.mapping)
    return IngestReport(str(source), kind, seen.sha256, "skipped", seen.rows_in, seen.rows_accepted, seen.rows_quarantined,
                        mapping=seen.mapping)


def _refusal(source: Path, exc: BaseException) -> str:
    """One line: the reader's reason, a system error, or a bug of ours (which the user should report)."""
    first_line = next(iter(str(exc).splitlines()), "")
    if isinstance(exc, UnreadableFile):
        return first_line
    if isinstance(exc, OSError):
        return f"{source}: {exc.strerror}" if exc.strerror else first_line
    return f"{source}: could not be read ({type(exc).__name__}: {first_line}); this is a bug of vase, please report it"


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
