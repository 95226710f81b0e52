"""Log files: formats, validation and quarantine, and the log kinds (`pipeline.logs.kinds`).

`read_log(path, kind)` reads a whole file: it picks the format from the file suffix and the
normaliser from the kind, and returns a `ReadResult` whose row accounting always balances.
`read_batches` is the same, batch by batch in bounded memory, for ingest (kinds whose rows are
independent are read in batches; the others whole). Both take `columns`, a mapping from a
canonical column name to the file's name for it (`{"model_a": "left"}`), which wins over the
kind's own aliases. Every module of this package is imported here, so that the kinds registered
with `register_kind` exist wherever `pipeline.logs` is imported (including on Dask workers).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator, Mapping
from pathlib import Path

from pipeline.logs.formats import batches, read_records
from pipeline.logs.identity import SeenIds, drop_seen
from pipeline.logs.kinds import KINDS, LogKind, log_kind, register_kind
from pipeline.logs.names import check_names
from pipeline.logs.records import FileStart, RawRecords, UnreadableFile, internal
from pipeline.logs.triage import QUARANTINE_SCHEMA, ReadResult
from pipeline.overlap import read_ahead

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")


def _raw_batches(path: Path, chosen: LogKind, start: FileStart | None) -> Iterator[RawRecords]:
    suffix = path.suffix.lower()
    if suffix in chosen.formats:
        if not path.is_file():
            raise UnreadableFile(path, "no such file")
        return iter([chosen.formats[suffix](path)])
    if owners := [k.name for k in KINDS.values() if suffix in k.formats]:
        raise UnreadableFile(path, f"{suffix} files hold {', '.join(owners)}, not {chosen.name}")
    return batches(path, start=start)


def rename_columns(raw: RawRecords, columns: Mapping[str, str], source: str) -> RawRecords:
    """The file's columns renamed to canonical names as `columns` maps them (canonical -> file's
    name); a column of the file already bearing a mapped canonical name steps aside."""
    if not columns or not raw.frame.width:
        return raw
    present = set(raw.columns)
    if missing := [f"{canonical}={name}" for canonical, name in columns.items() if name not in present]:
        raise UnreadableFile(source, f"no column named as mapped: {', '.join(missing)} (the file has {', '.join(sorted(present))})")
    lowered = {c.lower() for c in columns}
    aside = {c: f"{c} (unmapped)" for c in raw.columns if c.lower() in lowered and c not in columns.values()}
    renames = aside | {name: canonical for canonical, name in columns.items()}
    markers = {m: m[: -len(old)] + new for m in raw.frame.columns if internal(m)
               for old, new in renames.items() if m.endswith(":" + old)}
    return RawRecords(raw.frame.rename(renames | markers), raw.unparsable)


def read_batches(path: str | Path, kind: str, *, columns: Mapping[str, str] | None = None,
                 start: FileStart | None = None) -> Iterator[ReadResult]:
    """The file read as `kind`, in batches; names and ids checked (`pipeline.logs.names`), but
    duplicate ids across batches not (see `read_log` and `pipeline.logs.identity`). `start`
    resumes a line-based file where an earlier version of it ended."""
    chosen = log_kind(kind)
    if not chosen.stored:
        raise ValueError(f"{kind} files are rated directly, not stored")
    path = Path(path)
    raws = (rename_columns(raw, columns or {}, str(path)) for raw in _raw_batches(path, chosen, start))
    if chosen.independent_rows:  # the next batch parsed on a thread while this one is validated
        raws = read_ahead(raws)
    else:  # a game, a task, a query spans rows anywhere in the file
        raws = iter([RawRecords.concat(list(raws))])
    for raw in raws:
        yield check_names(chosen.read(raw, str(path)), dict(chosen.ids), chosen.record_id)


def read_log(path: str | Path, kind: str, *, columns: Mapping[str, str] | None = None) -> ReadResult:
    """A whole file read as `kind`, ids checked for duplicates across the whole file."""
    chosen = log_kind(kind)
    seen = SeenIds()
    results = [drop_seen(result, chosen.record_id if result.keyed else (), seen, 0, str, chosen.unit_column is not None)
               for result in read_batches(path, kind, columns=columns)]
    return ReadResult.concat(results, kind, str(path), chosen.schema)


__all__ = ["KINDS", "QUARANTINE_SCHEMA", "FileStart", "LogKind", "ReadResult", "UnreadableFile", "log_kind", "read_batches",
           "read_log", "read_records", "register_kind"]
