"""Statistics beyond the core three, registered by the modules that need them.

An `Extra` says which columns of which log kinds it reads, how one unit of work reduces to a
partial value, how two partials merge, how a partial moves into a larger id space, and how the
merged value becomes the statistic handed to methods (indexed like the core statistics: local
agents 0..k-1 for store ids `present`). A method asks for an extra by name in `needs`.

The merge contract: `merge` is exact and order-independent, so that results stay identical
whatever the partitioning, and so that the partials of the units already reduced, cached in the
store, merge with those of newly ingested files into the value a reduction from scratch gives.
Each extra's merge is one of three:
- a sum by key of integer weight units (`annotators`, `game_data` of battles, `battle_features`,
  `pairwise_per_game`), as the core counts;
- a sorted union of rows under a total key (`game_data` of scores, `council_reviews`,
  `ballot_order`);
- an ordered merge (`sequence`): each partial is a run sorted by a total key, merging collects the
  runs, and finalizing interleaves them once by that key (online Elo depends on the order).
`resize` re-embeds a partial in the larger id space of a dictionary that grew (ids only grow):
a cached partial stays valid when a new file brings new agents, so after new files only their
units are read. An extra without `resize` is recomputed from every unit whenever a dictionary grew.
An extra whose statistic is as large as the log (`sequence`, `council_reviews`) also declares
`kept` (`Kept`): a cached reduction keeps its finalized statistic as a snapshot and extends it by
the new units' rows, so that a nightly's cost follows the new rows rather than the whole log. A
snapshot of columns that only grow at their end (`Columns`: `sequence`) is appended to in place on
a local store, so that the nightly neither reads nor rewrites the kept rows.

Partials are cached in the store (`pipeline.stats.cache`) as plain arrays, never pickled: `encode`
turns a partial value into named arrays of numbers, booleans or bytes, and `decode` reads them
back (`pipeline.stats.encoding` has helpers, e.g. Parquet bytes for a table).

Extras hold ids, never names: `finalize` gets the name order of each id space (`IdMap.name_order`
by dictionary: `agents`, and `judges` or `prompts` where the store has them) for what must be
ordered by name, and `pipeline.report` puts the names back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from pipeline.logs import KINDS, log_kind
from pipeline.stats.counts import CORE_STATISTICS
from pipeline.stats.encoding import Arrays

EVERY_KIND = "*"  # a `columns` key: the extra applies to every stored kind, reading these columns


@dataclass(frozen=True)
class Kept:
    """How an extra as large as the log keeps its finalized statistic between reductions (a
    snapshot in the store's cache, `pipeline.stats.cache.Snapshot`), so that a reduction after new
    files finalizes only their rows and extends the snapshot, rather than building the whole
    statistic again from every unit's partial.

    `finalize(merged, present, name_orders)` is `Extra.finalize` that also gives the snapshot's
    arrays (ids that stay valid as `present` grows with new agents). `extend(arrays, merged, present,
    name_orders)` gives the same from a snapshot and the merged partial of the units it lacks
    (None if there are none), equal bit for bit to `finalize` of every unit's partial, or None
    where it cannot (rows of those units that belong before the snapshot's end: late data), and
    the reduction then finalizes every unit's partial."""

    finalize: Callable[[Any, np.ndarray, Mapping[str, np.ndarray]], tuple[Any, Arrays]]
    extend: Callable[[Arrays, Any, np.ndarray, Mapping[str, np.ndarray]], tuple[Any, Arrays] | None]
    columns: Columns | None = None  # a snapshot of columns that only grow at their end: appended in place on a local store
    unit_partials: bool = True  # each unit's partial cached too, for `extend`'s refusal (late data) to merge from the cache;
    # False where `extend` never refuses new rows: a unit is then read for it only while no snapshot holds it
    files: frozenset[str] = frozenset()  # arrays of the snapshot kept as column files on a local store, written whole
    # with each new snapshot and mapped, neither read nor checked, by the next reduction (`pipeline.stats.cache`)

    @property
    def column_files(self) -> frozenset[str]:
        """The arrays of the snapshot kept in column files on a local store: `Columns` appended in place, or `files`."""
        return self.columns.rows if self.columns is not None else self.files


@dataclass(frozen=True)
class Columns:
    """A `Kept` snapshot made of row columns (one value a row, named in `rows`) that only ever grow
    at their end, beside a few small arrays. On a local store each row column is a file appended in
    place and mapped, not read, by the next reduction (`pipeline.stats.cache.append_snapshot`), so
    that a nightly reads and writes only the new rows.

    `appendix(arrays, merged, present, name_orders)` gives what the merged partial of the units a
    snapshot lacks (None if there are none) appends to it: for each row column of the snapshot its
    new rows, a row column the snapshot lacks whole, and the next small arrays; or None where the
    rows cannot be appended (as `Kept.extend`: then every unit's partial is finalized).
    `statistic(arrays, present)` is the statistic of a whole snapshot, without a pass over its rows;
    `appended` joins a snapshot and an appendix in memory (a snapshot held whole: object storage)."""

    rows: frozenset[str]
    appendix: Callable[[Arrays, Any, np.ndarray, Mapping[str, np.ndarray]], Arrays | None]
    statistic: Callable[[Arrays, np.ndarray], Any]

    def appended(self, arrays: Arrays, appendix: Arrays) -> Arrays:
        """The snapshot `arrays` followed by `appendix`, in memory: each row column the snapshot has,
        then its new rows; every other array (a row column the snapshot lacks included), the appendix's."""
        return appendix | {name: np.concatenate([arrays[name], appendix[name]]) for name in self.rows & arrays.keys()}

    def extend(self, arrays: Arrays, merged: Any, present: np.ndarray, name_orders: Mapping[str, np.ndarray]) -> tuple[Any, Arrays] | None:
        """`Kept.extend` of a snapshot held whole in memory."""
        appendix = self.appendix(arrays, merged, present, name_orders)
        if appendix is None:
            return None
        whole = self.appended(arrays, appendix)
        return self.statistic(whole, present), whole


@dataclass(frozen=True)
class Extra:
    name: str
    columns: Mapping[str, tuple[str, ...]]  # log kind (or EVERY_KIND) -> stored columns read
    partial: Callable[[pa.Table, str, int], Any]  # (unit table, kind, size of the id space)
    merge: Callable[[Any, Any], Any]
    finalize: Callable[[Any, np.ndarray, Mapping[str, np.ndarray]], Any]  # (merged, store ids present, name orders by dictionary);
    # a merged value is finalized once: finalize may take its contents out, to release them as it builds the statistic
    encode: Callable[[Any], Arrays]  # a partial value as named arrays (no objects: read with allow_pickle=False)
    decode: Callable[[Arrays], Any]  # the inverse of `encode`
    fallbacks: Mapping[str, str] = field(default_factory=dict)  # a column -> the column it stands in for: read only from files without that one
    resize: Callable[[Any, int], Any] | None = None  # (partial, n): the same partial in an id space of size n >= its own;
    # None: recomputed, not re-embedded, when the id space grew (`same_ids` for a partial that does not depend on its size)
    subtract: Callable[[Any, Any], Any] | None = None  # (x, y): the partial of x's units that y (of a subset of them) lacks;
    # None where a partial cannot be subtracted. Backtests count a training set as the whole log minus the held-out units.
    kept: Kept | None = None  # a statistic as large as the log: kept finalized between reductions through the cache

    def __post_init__(self) -> None:
        for kind in self.columns:
            if kind != EVERY_KIND and not log_kind(kind).stored:
                raise ValueError(f"statistic {self.name!r}: {kind} logs are not stored")

    @property
    def kinds(self) -> frozenset[str]:
        if EVERY_KIND in self.columns:
            return frozenset(name for name, kind in KINDS.items() if kind.stored)
        return frozenset(self.columns)

    def columns_of(self, kind: str) -> tuple[str, ...]:
        """The stored columns this statistic reads from `kind` logs."""
        if kind not in self.kinds:
            raise ValueError(f"statistic {self.name!r} cannot be computed from {kind} logs")
        return self.columns.get(kind, self.columns.get(EVERY_KIND, ()))


EXTRAS: dict[str, Extra] = {}


def same_ids(partial: Any, n: int) -> Any:
    """`Extra.resize` of a partial that holds store ids as they are (no array sized by the id space)."""
    return partial


def register_extra(extra: Extra) -> Extra:
    if extra.name in EXTRAS or extra.name in CORE_STATISTICS:
        raise ValueError(f"statistic {extra.name!r} registered twice")
    EXTRAS[extra.name] = extra
    return extra


def kind_statistics(kind: str) -> frozenset[str]:
    """Every statistic a reduction of stored `kind` logs can give: the core ones and the extras that read the kind."""
    return CORE_STATISTICS | {name for name, extra in EXTRAS.items() if kind in extra.kinds}


def extra_partials(table: pa.Table, kind: str, n: int, statistics: frozenset[str]) -> dict[str, Any]:
    """The partial of every extra in `statistics`, for one unit of work's rows."""
    return {name: EXTRAS[name].partial(table, kind, n) for name in sorted(statistics & EXTRAS.keys())}


def extra_columns(kind: str, statistics: frozenset[str]) -> list[str]:
    """The stored columns that the extras in `statistics` read from `kind` logs."""
    return [c for name in sorted(statistics & EXTRAS.keys()) for c in EXTRAS[name].columns_of(kind)]


def fallback_columns(kind: str, statistics: frozenset[str]) -> dict[str, str]:
    """The columns read only from files that lack another (`Extra.fallbacks`), by that other
    column: those that the kind's core statistics and every extra asking for them read as fallbacks only."""
    chosen = [EXTRAS[name] for name in sorted(statistics & EXTRAS.keys())]
    needed = {*log_kind(kind).columns} | {c for extra in chosen for c in extra.columns_of(kind) if c not in extra.fallbacks}
    return {c: primary for extra in chosen for c, primary in extra.fallbacks.items() if c not in needed}
