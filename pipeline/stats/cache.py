"""A cache of per-unit partial statistics inside the store, for incremental recomputation.

A unit's rows never change (partition files are written once per source content hash), so its
partial is stored under a key of (kind, statistics asked, dense or sparse, the unit's files)
and reused by later reductions: after a new file is ingested, only its units are read. When
the id dictionary has grown since, a cached partial is re-embedded in the larger id space;
partials that carry extra statistics are recomputed instead. Partials are exact integers, so a
reduction from the cache equals one from scratch bit for bit.
"""

from __future__ import annotations

import hashlib
import json
import pickle
from pathlib import Path

from pipeline.stats.partials import Partial
from pipeline.store.files import atomic_write

FORMAT = 2  # 2: extras' partials moved modules (stats.games -> stats.game_data); files of format 1 are not read


def cache_path(root: Path, kind: str, want: frozenset[str], dense: bool, unit) -> Path:
    files = [str(Path(p).relative_to(root.resolve())) for p in unit.paths]
    key = json.dumps([FORMAT, kind, sorted(want), dense, unit.source, files, unit.row_groups])
    return root / "cache" / kind / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.pkl"


def load(path: Path, n: int) -> Partial | None:
    """The cached partial in an id space of size n, or None if absent or not re-embeddable."""
    if not path.exists():
        return None
    with path.open("rb") as handle:
        partial: Partial = pickle.load(handle)
    if partial.n == n:
        return partial
    if partial.n < n and not partial.extra:
        return partial.resized(n)
    return None


def store(path: Path, partial: Partial) -> None:
    atomic_write(path, lambda tmp: tmp.write_bytes(pickle.dumps(partial, protocol=pickle.HIGHEST_PROTOCOL)))
