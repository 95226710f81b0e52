"""The partitioned Parquet store: layout, manifest, id dictionaries; how each kind is encoded is
declared by its `LogKind` (`pipeline.logs.kinds`).

```
<root>/manifest.json                       the commit point: ingested files and their partitions
<root>/dictionaries/<name>.parquet         name -> dense id (agents, judges, prompts)
<root>/<kind>/date=YYYY-MM-DD/<sha>.parquet rows with a timestamp, by UTC date (hive style)
<root>/<kind>/source=<sha>/part.parquet    rows without one, by source file
<root>/quarantine/<kind>/<sha>.parquet     rejected rows: file, line, field, reason, record
```
`<sha>` is the first 16 hex digits of the source file's SHA-256. Ingest writes partitions, then
dictionaries, then the manifest, each atomically; readers list partitions from the manifest only,
so an interrupted ingest leaves nothing visible, and re-running it rewrites the same names. A file
whose content hash is in the manifest is skipped, whatever its name.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.logs import ReadResult, UnreadableFile, log_kind, read_log
from pipeline.logs.kinds import DICTIONARIES, TIMESTAMP, LogKind
from pipeline.paths import below
from pipeline.store.dictionary import IdMap
from pipeline.store.files import exclusive_lock, sha256_file, write_json, write_parquet

MANIFEST = "manifest.json"


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

    @classmethod
    def from_json(cls, entry: dict) -> IngestReport:
        return cls(**entry | {"partitions": tuple(Partition(**p) for p in entry["partitions"])})


@dataclass
class Manifest:
    files: dict[str, IngestReport] = field(default_factory=dict)  # by sha256

    @classmethod
    def load(cls, path: Path) -> Manifest:
        if not path.exists():
            return cls()
        entries = json.loads(path.read_text(encoding="utf-8"))["files"]
        return cls({e["sha256"]: IngestReport.from_json(e) for e in entries})

    def save(self, path: Path) -> None:
        write_json(path, {"format": 1, "files": [asdict(r) for r in sorted(self.files.values(), key=lambda r: r.sha256)]})


def _replace(table: pa.Table, name: str, values: pa.Array) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), name, values)


def _names(values: pa.ChunkedArray) -> pa.Array:
    """The names in a column, list columns flattened."""
    values = values.combine_chunks()
    return values.flatten() if pa.types.is_list(values.type) else values


def _ids(values: pa.ChunkedArray, idmap: IdMap) -> pa.Array:
    """Ids of a column of names already in the dictionary (a list column element-wise)."""
    values = values.combine_chunks()
    if not pa.types.is_list(values.type):
        return idmap.lookup(values)
    offsets = pc.subtract(values.offsets, values.offsets[0])
    return pa.ListArray.from_arrays(offsets, idmap.lookup(values.flatten()))


def label_codes(values: pa.ChunkedArray | pa.Array, labels: tuple[str, ...]) -> pa.Array:
    """Each label's position in `labels`, as int8; the reader has rejected other labels."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    codes = pc.index_in(values, value_set=pa.array(labels, pa.string()))
    if codes.null_count:
        raise ValueError(f"labels outside {list(labels)}")
    return codes.cast(pa.int8())


def encode(kind: LogKind, table: pa.Table, maps: Mapping[str, IdMap]) -> pa.Table:
    """A read table as the store keeps it: names as ids of the kind's dictionaries, labels as codes.

    Names new to the table get the next ids in sorted order, all the columns of one dictionary at
    once, so the ids do not depend on the order of rows or of columns.
    """
    for dictionary in sorted(set(kind.ids.values())):
        maps[dictionary].add(pa.concat_arrays([_names(table.column(c)) for c, d in kind.ids.items() if d == dictionary]))
    for column, dictionary in kind.ids.items():
        table = _replace(table, column, _ids(table.column(column), maps[dictionary]))
    for column, labels in kind.codes.items():
        table = _replace(table, column, label_codes(table.column(column), labels))
    return kind.canonical(table) if kind.canonical is not None else table


def _partition_keys(kind: LogKind, table: pa.Table) -> pa.Array:
    """`date=YYYY-MM-DD` per row where a timestamp is known, else '' (partitioned by source)."""
    if not kind.dated:
        return pa.array(np.full(table.num_rows, ""), pa.string())
    dates = pc.strftime(table.column(TIMESTAMP), format="%Y-%m-%d").combine_chunks()
    return pc.fill_null(pc.binary_join_element_wise("date=", dates, ""), "")


def _split(table: pa.Table, keys: pa.Array) -> list[tuple[str, pa.Table]]:
    """The rows of each distinct key, keys in sorted order, rows in their order within a key."""
    distinct = pc.unique(keys).sort()
    if len(distinct) == 1:
        return [(distinct[0].as_py(), table)]
    codes = pc.index_in(keys, value_set=distinct).to_numpy()
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(distinct) + 1))
    return [(key, table.take(order[lo:hi])) for key, lo, hi in zip(distinct.to_pylist(), bounds[:-1], bounds[1:])]


class Store:
    """A folder of partitioned Parquet logs with a manifest and id dictionaries."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    @property
    def manifest(self) -> Manifest:
        return Manifest.load(self.root / MANIFEST)

    def dictionary(self, name: str = "agents") -> IdMap:
        return IdMap.load(self.root / "dictionaries" / f"{name}.parquet")

    def partitions(self, kind: str) -> list[Partition]:
        """The committed partition files of one kind, in a fixed order."""
        parts = [p for r in self.manifest.files.values() if r.kind == kind for p in r.partitions]
        return sorted(parts, key=lambda p: p.path)

    def path(self, partition: Partition) -> Path:
        return self.root / partition.path

    def kinds(self) -> list[str]:
        return sorted({r.kind for r in self.manifest.files.values() if r.partitions})

    def ingest(self, sources: list[str | Path], kind: str) -> list[IngestReport]:
        """Ingest files not yet in the store; one report per source, in the given order."""
        with exclusive_lock(self.root / ".lock"):
            manifest = self.manifest
            maps = {name: self.dictionary(name) for name in DICTIONARIES}
            reports = [self._ingest_one(Path(src), kind, manifest, maps) for src in sources]
            if any(r.status == "ingested" for r in reports):
                for name, idmap in maps.items():
                    idmap.save(below(self.root, f"dictionaries/{name}.parquet"))
                manifest.save(below(self.root, MANIFEST))
            return reports

    def _ingest_one(self, source: Path, kind: str, manifest: Manifest, maps: dict[str, IdMap]) -> IngestReport:
        try:
            sha = sha256_file(source)
        except OSError as exc:
            return IngestReport(str(source), kind, "", "unreadable", error=f"{source}: {exc.strerror}")
        if sha in manifest.files:
            seen = manifest.files[sha]
            if seen.kind != kind:
                return IngestReport(str(source), kind, sha, "unreadable", error=f"{source}: already ingested as {seen.kind}")
            return IngestReport(str(source), kind, sha, "skipped", seen.rows_in, seen.rows_accepted, seen.rows_quarantined)
        try:
            result = read_log(source, kind)
        except UnreadableFile as exc:
            return IngestReport(str(source), kind, sha, "unreadable", error=str(exc))
        report = self._write(result, sha, maps)
        manifest.files[sha] = report
        return report

    def _write(self, result: ReadResult, sha: str, maps: dict[str, IdMap]) -> IngestReport:
        short = sha[:16]
        kind = log_kind(result.kind)
        table = encode(kind, result.table, maps)
        partitions = []
        for key, rows in _split(table, _partition_keys(kind, table)):
            rel = f"{result.kind}/{key}/{short}.parquet" if key else f"{result.kind}/source={short}/part.parquet"
            write_parquet(below(self.root, rel), rows)
            partitions.append(Partition(rel, rows.num_rows))
        quarantine = None
        if result.rows_quarantined:
            quarantine = f"quarantine/{result.kind}/{short}.parquet"
            write_parquet(below(self.root, quarantine), result.quarantined)
        return IngestReport(
            result.source, result.kind, sha, "ingested", result.rows_in, result.rows_accepted, result.rows_quarantined,
            tuple(partitions), quarantine, ingested_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        )
