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
from collections.abc import Iterator
from pathlib import Path

from pipeline.logs.formats import batches, read_records
from pipeline.logs.identity import ContentIds, SeenIds, drop_seen
from pipeline.logs.kinds import KINDS, LogKind, log_kind, register_kind
from pipeline.logs.mapping import Mapping, MappingError
from pipeline.logs.names import check_names
from pipeline.logs.records import FileStart, RawRecords, UnreadableFile
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


def read_batches(path: str | Path, kind: str, *, mapping: Mapping | None = None,
                 start: FileStart | None = None) -> Iterator[ReadResult]:
    """The file read as `kind` through `mapping` (`pipeline.logs.mapping`), in batches; names and
    ids checked (`pipeline.logs.names`), records without ids given ids of their content
    (`pipeline.logs.identity.ContentIds`), but duplicate ids across batches not checked (see
    `read_log` and `pipeline.logs.identity`). `start` resumes a line-based file where an earlier
    version of it ended."""
    chosen = log_kind(kind)
    if not chosen.stored:
        raise ValueError(f"{kind} files are rated directly, not stored")
    path = Path(path)
    contents = ContentIds()
    results = _read(path, chosen, mapping or Mapping(), start, contents)
    first = next(results, None)
    if start is not None and contents.used:
        # Ids of content count identical records over the whole source: the earlier rows are read
        # again for their counts, and only the new ones handed on.
        results.close()
        results = (result.after(start.lines) for result in _read(path, chosen, mapping or Mapping(), None, ContentIds()))
        first = next(results, None)
    if first is not None:
        yield first
        yield from results


def _read(path: Path, chosen: LogKind, mapping: Mapping, start: FileStart | None, contents: ContentIds) -> Iterator[ReadResult]:
    raws = (mapping.apply(raw, chosen, str(path)) for raw in _raw_batches(path, chosen, start))
    if chosen.independent_rows:  # the next batch parsed on a thread while this one is validated
        raws = read_ahead(raws)
    else:  # a game, a task, a query spans rows anywhere in the file
        raws = iter([RawRecords.concat(list(raws))])
    for raw in raws:
        result = chosen.read(raw, str(path))
        if chosen.record_id and not result.keyed:
            result = contents.assign(result, chosen.record_id)
        yield check_names(result, dict(chosen.ids), chosen.record_id)


def read_log(path: str | Path, kind: str, *, mapping: Mapping | None = None) -> ReadResult:
    """A whole file read as `kind`, ids checked for duplicates across the whole file."""
    chosen = log_kind(kind)
    seen = SeenIds()
    results = [drop_seen(result, chosen.record_id if result.keyed else (), seen, 0, str, chosen.unit_column is not None)
               for result in read_batches(path, kind, mapping=mapping)]
    return ReadResult.concat(results, kind, str(path), chosen.schema)


__all__ = ["KINDS", "QUARANTINE_SCHEMA", "FileStart", "LogKind", "Mapping", "MappingError", "ReadResult", "UnreadableFile", "log_kind", "read_batches",
           "read_log", "read_records", "register_kind"]
