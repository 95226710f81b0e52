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
mapping) is in the manifest is skipped, whatever its name. That is a local folder's commit; a store
in object storage (a URL) is ingested the same way and committed by a lease, uniquely named objects
and a manifest created only if absent, each checkpoint a manifest of its own (`pipeline.store.commit`,
`pipeline.store.objects`), and read through the same `Store` (`locate`, `pipeline.store.location`).

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

Each ingested file's manifest entry carries its footprint (`pipeline.store.footprint`): the distinct agents,
pairs, tasks and ballots of its accepted rows, from which a rating's cost is judged before any row is read.

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
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.logs import FileStart, Mapping, UnreadableFile, log_kind, read_batches
from pipeline.logs.records import LINE_SUFFIXES, check_regular_file
from pipeline.logs.identity import HASHER, INGEST_POSITION, drop_seen, ingest_positions
from pipeline.logs.kinds import DICTIONARIES, TIMESTAMP, LogKind
from pipeline.logs.names import NAME_DICTIONARIES, LookAlikes
from pipeline.overlap import Behind, read_ahead
from pipeline.paths import UnsafePath, is_url
from pipeline.store.dictionary import IdMap
from pipeline.store.commit import MANIFEST, FolderCommit, ObjectCommit, dictionary_path
from pipeline.store.footprint import Footprint, FootprintCounter
from pipeline.store.files import DamagedStore, StoreDiskFull, digest_file, disk_full, reading_store_file, write_json
from pipeline.store.index import FileIds, KindIndex, load_index, rebuild
from pipeline.store.location import StorageError, address, fetched
from pipeline.store.objects import ObjectStore
from pipeline.store.partitions import PartitionWriter, QuarantineWriter, Written
from pipeline.terminal import visible

COMMIT_EVERY = 1_000  # files ingested between two commits of one ingest (each commit saves the whole manifest)
log = logging.getLogger(__name__)


def is_store(folder: Path) -> bool:
    """Whether a local `folder` holds a vase store (a manifest and its dictionaries)."""
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
    footprint: dict | None = None  # what its accepted rows hold (`pipeline.store.footprint.Footprint`); None before it was kept

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
    dictionaries: dict[str, str] = field(default_factory=dict)  # in object storage: each dictionary's object

    @classmethod
    def load(cls, path: Path) -> Manifest:
        if not path.exists():
            return cls()
        with reading_store_file(path):
            return cls.from_data(json.loads(path.read_text(encoding="utf-8")))

    @classmethod
    def from_data(cls, data: dict) -> Manifest:
        """A manifest from its JSON (empty for `{}`, a store nothing was committed to); ValueError
        if it lists a path outside the store (`check_inside_store`)."""
        manifest = cls({r.key: r for r in map(IngestReport.from_json, data.get("files", []))}, dict(data.get("ids", {})),
                       dict(data.get("dictionaries", {})))
        for listed in manifest.listed_paths():
            check_inside_store(listed)
        return manifest

    def listed_paths(self) -> list[str]:
        """Every file of the store the manifest names, relative to its root: partitions, quarantines,
        id runs and (in object storage) dictionaries."""
        files = [p.path for r in self.files.values() for p in r.partitions] + [r.quarantine for r in self.files.values() if r.quarantine]
        return files + [run["path"] for entry in self.ids.values() for run in entry["runs"]] + list(self.dictionaries.values())

    def data(self) -> dict:
        data = {"format": 1, "files": [asdict(r) for r in sorted(self.files.values(), key=lambda r: r.key)], "ids": self.ids}
        return data | ({"dictionaries": self.dictionaries} if self.dictionaries else {})

    def save(self, path: Path) -> None:
        write_json(path, self.data())


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
    """Partitioned Parquet logs with a manifest and id dictionaries, in a local folder or in object
    storage (a URL: `pipeline.store.location`); both are read the same way and written by the same
    ingest, and differ only in how a commit is made (`pipeline.store.commit`)."""

    def __init__(self, root: str | Path):
        self.url = str(root).rstrip("/") if is_url(root) else str(Path(root))  # a URL, or a local path as given
        self.objects = ObjectStore(self.url) if is_url(root) else None
        self._root = None if self.objects else Path(root)

    @property
    def root(self) -> Path:
        """The folder of a local store (a store in object storage has none: `url`, `locate`)."""
        if self._root is None:
            raise StorageError(f"{self.url}: a store in object storage has no local folder")
        return self._root

    def exists(self) -> bool:
        """Whether a manifest was committed (anything was ever ingested)."""
        return bool(self.objects.sequences()) if self.objects else (self.root / MANIFEST).exists()

    @property
    def manifest(self) -> Manifest:
        if self.objects:
            return self._object_manifest(*self.objects.newest())
        return Manifest.load(self.root / MANIFEST)

    def dictionary(self, name: str = "agents", manifest: Manifest | None = None) -> IdMap:
        if self.objects:
            listed = (manifest or self.manifest).dictionaries.get(name)
            return IdMap.load(self.locate(listed)) if listed else IdMap()
        return IdMap.load(self.root / dictionary_path(name))

    def partitions(self, kind: str, manifest: Manifest | None = None) -> list[Partition]:
        """The committed partition files of one kind, in a fixed order (as `manifest` lists them, if given)."""
        parts = [p for r in (manifest or self.manifest).files.values() if r.kind == kind for p in r.partitions]
        return sorted(parts, key=lambda p: p.path)

    def inputs(self, kind: str, manifest: Manifest | None = None) -> list[IngestReport]:
        """The files of one kind the store has seen (ingested or refused), by source (as `manifest` lists them, if given)."""
        return sorted((r for r in (manifest or self.manifest).files.values() if r.kind == kind), key=lambda r: r.source)

    def footprint(self, kind: str, manifest: Manifest | None = None) -> Footprint | None:
        """What is certain of the kind's stored rows, from the manifest alone (`pipeline.store.footprint`):
        exact for one file, a lower bound for several; None if a file was stored before footprints were kept."""
        stored = [r for r in self.inputs(kind, manifest) if r.status == "ingested"]
        if not stored or any(r.footprint is None for r in stored):
            return None
        return Footprint.merged(Footprint(**r.footprint) for r in stored)

    def path(self, partition: Partition) -> Path:
        return self.root / partition.path

    def locate(self, relative: Partition | str) -> str:
        """The address a reader (a Dask worker too) opens a store file by: a local absolute path, or a URL."""
        relative = relative.path if isinstance(relative, Partition) else relative
        return address(self.url, relative) if self.objects else str((self.root / relative).resolve())

    def kinds(self) -> list[str]:
        return sorted({r.kind for r in self.manifest.files.values() if r.partitions})

    def _writing(self) -> FolderCommit | ObjectCommit:
        if self.objects:
            return ObjectCommit(self.objects)
        return FolderCommit(self.root)

    def _object_manifest(self, sequence: int, data: dict) -> Manifest:
        """Manifest `sequence` of a store in object storage; `DamagedStore` naming it if it lists a
        path outside the store (its checksum holds for a hand edit that recomputed it)."""
        with reading_store_file(self.objects.manifest_url(sequence)):
            return Manifest.from_data(data)

    def ingest(self, sources: list[str | Path], kind: str, mapping: Mapping | None = None) -> list[IngestReport]:
        """Ingest files not yet in the store (read through `mapping`, if given: an input is the
        file and its mapping); one report per source, in the given order. A file
        that cannot be read is refused (status `unreadable`, one line in `error`) and recorded in
        the manifest, so that it is not read again until its content changes; the other files go on."""
        chosen = log_kind(kind)
        with self._writing() as writing:
            manifest = self._object_manifest(writing.sequence, writing.data) if self.objects else self.manifest
            writing.begin(manifest)
            maps = {name: writing.dictionary(name, manifest) for name in DICTIONARIES}
            index = self._id_index(writing, chosen, manifest, maps) if chosen.record_id else None
            pending: list[Written] = []
            looks = {name: LookAlikes(maps[name].names) for name in NAME_DICTIONARIES}
            names = {r.key[:16]: Path(r.source).name for r in manifest.files.values()}  # for duplicates' reasons
            versions = LineVersions.of(manifest)
            reports = []
            changed = 0  # files ingested or newly refused since the last commit
            for src in sources:
                writing.keep_alive()
                report = self._ingest_fetched(writing, src, chosen, manifest, maps, index, pending, looks, names, versions,
                                              mapping)
                reports.append(report)
                names.setdefault(report.key[:16], Path(str(src)).name)
                changed += bool(report.sha256 and manifest.files.get(report.key) is report)
                if changed >= COMMIT_EVERY:  # a checkpoint: an ingest of a big folder that is killed keeps these
                    writing.commit(manifest, maps, kind, index, pending)
                    pending.clear()
                    changed = 0
            if changed:
                writing.commit(manifest, maps, kind, index, pending)
            else:
                writing.finish(manifest)
            return reports

    def _id_index(self, writing: FolderCommit | ObjectCommit, kind: LogKind, manifest: Manifest,
                  maps: dict[str, IdMap]) -> KindIndex:
        """The kind's id index as committed, or rebuilt from its partitions (missing, damaged, or
        built by another hasher)."""
        entry = manifest.ids.get(kind.name)
        try:
            if entry and entry.get("hasher") == HASHER:
                writing.fetch([run["path"] for run in entry["runs"]])
            index = load_index(writing.root, kind.name, entry)
        except DamagedStore as error:  # derived data: rebuilt as if it were missing
            log.warning("%s: cannot be read (%s); rebuilding the %s id index from the stored partitions",
                        error.path, error.reason, kind.name)
            index = None
        if index is None:
            stored = sorted((r for r in manifest.files.values() if r.kind == kind.name and r.status == "ingested"),
                            key=lambda r: (r.ingested_at or "", r.key))
            index = rebuild(writing.root, kind.name, stored, lambda name: maps[name].names, (entry or {}).get("files", []),
                            locate=self.locate)
        return index

    def _ingest_fetched(self, writing: FolderCommit | ObjectCommit, source: str | Path, kind: LogKind, manifest: Manifest,
                        *rest) -> IngestReport:
        """`_ingest_one` of a local file, or of an object downloaded first; the report (and the
        manifest) name the object's URL."""
        if not is_url(source):
            return self._ingest_one(writing, Path(source), kind, manifest, *rest)
        try:
            with fetched(source) as local:
                report = self._ingest_one(writing, local, kind, manifest, *rest)
        except StoreDiskFull:  # the disk written to, not the object read
            raise
        except (OSError, StorageError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else next(iter(str(exc).splitlines()), "")
            return IngestReport(str(source), kind.name, "", "unreadable", error=f"{source}: {reason.removeprefix(f'{source}: ')}")
        named = dataclasses.replace(report, source=str(source),
                                    error=report.error.replace(str(local), str(source)) if report.error else None)
        if manifest.files.get(report.key) is report:
            manifest.files[report.key] = named
        return named

    def _ingest_one(self, writing: FolderCommit | ObjectCommit, source: Path, kind: LogKind, manifest: Manifest, maps: dict[str, IdMap],
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
        writer = PartitionWriter(writing.root, kind.name, key[:16], kind.dated, TIMESTAMP,
                                 distinct=distinct_columns(kind), tag=writing.tag)
        quarantine = QuarantineWriter(writing.root, kind.name, key[:16], writing.tag)
        behind = Behind(writer.add)  # partitions written while the next batches are read and encoded
        counter = FootprintCounter(kind)
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
                counter.add(table)
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
            if disk_full(exc):  # every write goes to the store (or its scratch folder): that disk is full, whatever file was read
                raise writing.out_of_space(exc) from exc
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
                              mapping=record, footprint=counter.footprint(len(maps["agents"]) - sizes["agents"]).record())
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
