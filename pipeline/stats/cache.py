"""A cache of per-unit partial statistics inside the store, for incremental recomputation.

A unit's rows never change (partition files are written once per source content hash), so its
partial is stored under a key of (kind, statistics asked, dense or sparse, the unit's files)
and reused by later reductions: after a new file is ingested, only its units are read. When
the id dictionary has grown since, a cached partial is re-embedded in the larger id space, its
extra statistics too (`Extra.resize`; one without it is recomputed). Partials are exact (integer
units, sorted unions, sorted runs: the merge contract of `pipeline.stats.extras`), so a reduction
from the cache equals one from scratch bit for bit.

Every Dask worker writes here, so whoever can write into the store can plant files: a cached
partial is data only. It is an `.npz` of plain arrays (`Partial.to_arrays`), read with
`allow_pickle=False`, holding its full key and a SHA-256 of its arrays. A file that does not
load, belongs to another key or fails its checksum (truncated, tampered, of an older format)
is ignored and the unit recomputed; `.pkl` files of earlier versions are never opened. In a store
in object storage the cache is objects under `<store>/cache/`, each put whole in one request.

A statistic as large as the log (`Extra.kept`) is cached per unit in a file of its own, and kept
finalized too: a `Snapshot` (the same kind of checked `.npz`, one per kind, statistic, layout and
category, naming the cache keys of the units whose rows it holds) that the next reduction extends
by the new units' rows rather than merging every unit's partial again (`pipeline.stats.reduce`).
The sum of the units' partials (but the kept extras) is kept as a snapshot too, so that the next
reduction opens one file for the units it holds (`pipeline.stats.reduce.load_summed`).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.paths import below, is_url
from pipeline.stats.encoding import Arrays
from pipeline.stats.partials import Partial
from pipeline.store.files import atomic_write
from pipeline.store.location import address, read_object, write_object

FORMAT = 5  # 3: .npz of arrays with a checksum (1 and 2 were pickles: never read); 4: sequence partials hold ingest
# positions; 5: sequence partials are compact runs (int32 agents, columns of default values left out)
SUFFIX = ".npz"
KEY, CHECKSUM = "cache.key", "cache.sha256"
SNAPSHOT_UNITS = "snapshot.units"  # the cache keys of the units a snapshot holds

log = logging.getLogger(__name__)


def cache_key(root: str, kind: str, want: frozenset[str], dense: bool, unit) -> str:
    """The SHA-256 of what a unit's partial depends on (its files are immutable once written)."""
    files = [p.removeprefix(f"{root}/") if is_url(root) else str(Path(p).relative_to(Path(root).resolve())) for p in unit.paths]
    subset = [unit.category] if unit.category is not None else []  # keys of whole units are as before
    subset += unit.decay.key() if unit.decay is not None else []  # weighed counts never meet unweighed ones
    key = json.dumps([FORMAT, kind, sorted(want), dense, unit.source, files, unit.row_groups, *subset])
    return hashlib.sha256(key.encode()).hexdigest()


def cache_path(root: str, kind: str, key: str) -> Path | str:
    """Where the partial of `key` lives (a store in object storage: its URL); refused if a folder
    or file on the way is a symbolic link."""
    relative = f"cache/{kind}/{key[:32]}{SUFFIX}"
    return address(root, relative) if is_url(root) else below(root, relative)


def checksum(arrays: Arrays) -> str:
    """SHA-256 over every array's name, dtype, shape and bytes, in name order."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(json.dumps([name, array.dtype.str, array.shape]).encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def text(array: np.ndarray) -> str:
    return bytes(array.astype(np.uint8)).decode("ascii")


def load_arrays(path: Path | str, key: str, what: str = "partial") -> Arrays | None:
    """The arrays cached at `path` under `key`; None if absent or refused (another key, a checksum
    that does not match, not an .npz: logged, and the caller recomputes)."""
    if is_url(path):
        try:
            source = io.BytesIO(read_object(path))
        except FileNotFoundError:
            return None
    elif path.exists():
        source = path
    else:
        return None
    try:
        with np.load(source, allow_pickle=False) as stored:
            arrays = {name: stored[name] for name in stored.files}
        found, recorded = text(arrays.pop(KEY)), text(arrays.pop(CHECKSUM))
        if found != key:
            raise ValueError(f"it holds the {what} of another key ({found[:16]}...)")
        if recorded != checksum(arrays):
            raise ValueError("its checksum does not match its content")
    except (OSError, EOFError, KeyError, ValueError, TypeError, zipfile.BadZipFile) as error:
        log.warning("%s: cached %s refused (%s); recomputing it", path, what, error)
        return None
    return arrays


def load(path: Path | str, key: str, n: int) -> Partial | None:
    """The cached partial of `key` in an id space of size n; None if absent, not valid or not re-embeddable."""
    arrays = load_arrays(path, key)
    return None if arrays is None else partial_of(arrays, n, path)


def partial_of(arrays: Arrays, n: int, where: object) -> Partial | None:
    """The partial of cached `arrays` in an id space of size n; None if they do not decode or
    cannot be re-embedded (logged, naming `where`)."""
    try:
        partial = Partial.from_arrays(arrays)
    except (KeyError, ValueError, TypeError) as error:
        log.warning("%s: cached partial refused (%s); recomputing it", where, error)
        return None
    if partial.n == n:
        return partial
    if partial.n < n and partial.resizable:
        return partial.resized(n)
    return None


def store_arrays(path: Path | str, key: str, arrays: Arrays) -> None:
    """`arrays` under `key` at `path`, with their checksum, written whole."""
    marks = {KEY: key, CHECKSUM: checksum(arrays)}
    arrays = arrays | {name: np.frombuffer(value.encode("ascii"), np.uint8) for name, value in marks.items()}

    def write(tmp: Path) -> None:
        with tmp.open("wb") as handle:
            np.savez(handle, **arrays)

    if is_url(path):  # one PUT: an object appears whole (two workers writing one key write the same bytes)
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        write_object(path, buffer.getvalue())
    else:
        atomic_write(path, write)


def store(path: Path | str, key: str, partial: Partial) -> None:
    store_arrays(path, key, partial.to_arrays())


@dataclass(frozen=True)
class Snapshot:
    """A finalized statistic as large as the log (`Extra.kept`), kept between reductions with the
    cache keys of the units whose rows it holds: the next reduction extends it by the other units."""

    units: frozenset[str]
    arrays: Arrays


def snapshot_path(root: str, kind: str, name: str, dense: bool, category: str | None) -> tuple[Path | str, str]:
    """Where the snapshot of extra `name` lives, beside the partials, and its key: one per kind,
    statistic, layout and category (each reduction replaces it with the one holding every unit)."""
    key = hashlib.sha256(json.dumps([FORMAT, "snapshot", kind, name, dense, category]).encode()).hexdigest()
    return cache_path(root, kind, key), key


def load_snapshot(root: str, kind: str, name: str, dense: bool, category: str | None) -> Snapshot | None:
    path, key = snapshot_path(root, kind, name, dense, category)
    arrays = load_arrays(path, key, "snapshot")
    if arrays is None:
        return None
    units = arrays.pop(SNAPSHOT_UNITS, None)
    return None if units is None else Snapshot(frozenset(units.astype(str).tolist()), arrays)


def store_snapshot(root: str, kind: str, name: str, dense: bool, category: str | None, snapshot: Snapshot) -> None:
    path, key = snapshot_path(root, kind, name, dense, category)
    store_arrays(path, key, snapshot.arrays | {SNAPSHOT_UNITS: np.array(sorted(snapshot.units), dtype="S64")})
