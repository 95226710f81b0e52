"""Log files: formats, validation and quarantine, and the log kinds (`pipeline.logs.kinds`).

`read_log(path, kind)` is the one entry point: it picks the format from the file suffix and the
normaliser from the kind, and returns a `ReadResult` whose row accounting always balances.
Every module of this package is imported here, so that the kinds registered with
`register_kind` exist wherever `pipeline.logs` is imported (including on Dask workers).
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from pipeline.logs.kinds import KINDS, LogKind, log_kind, register_kind
from pipeline.logs.records import UnreadableFile, read_records
from pipeline.logs.triage import QUARANTINE_SCHEMA, ReadResult

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")


def read_log(path: str | Path, kind: str) -> ReadResult:
    chosen = log_kind(kind)
    if not chosen.stored:
        raise ValueError(f"{kind} files are rated directly, not stored")
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in chosen.formats:
        raw = chosen.formats[suffix](path)
    elif owners := [k.name for k in KINDS.values() if suffix in k.formats]:
        raise UnreadableFile(path, f"{suffix} files hold {', '.join(owners)}, not {kind}")
    else:
        raw = read_records(path)
    return chosen.read(raw, str(path))


__all__ = ["KINDS", "QUARANTINE_SCHEMA", "LogKind", "ReadResult", "UnreadableFile", "log_kind", "read_log", "register_kind"]
