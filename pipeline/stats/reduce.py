"""Dask reductions from the store to sufficient statistics.

Each unit of work reads one partition file (or a slice of row groups of a big one, for kinds whose
rows are independent, or a batch of small files), reduces it to a `Partial`, and the partials are
added in a binary tree. Partials add exactly (integer units), so the result is the same bit for
bit whatever the partitioning and the number of workers. What a kind's rows mean comes from its
`LogKind` (`pipeline.logs.kinds`): the columns to read, and either comparisons counted straight
into pairs (battles) or one weak order per unit (a game, a task, a ballot, a review).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import json
import operator
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import dask.threaded  # passed as the scheduler: its name, "threads", would make dask import distributed (~1 s)
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from dask.delayed import Delayed

from pipeline.arrays import SOURCE
from pipeline.logs import log_kind
from pipeline.logs.kinds import DICTIONARIES, ROWS_PER_TASK, TIMESTAMP
from pipeline.progress import local_tasks_advance, stage
from pipeline.stats import cache
from pipeline.stats.counts import CORE_STATISTICS, Statistics
from pipeline.stats.extras import EXTRAS, extra_columns, extra_partials, fallback_columns
from pipeline.stats.partials import DENSE_MAX_AGENTS, Partial, comparison_partial, finalize, weak_order_partial
from pipeline.stats.recency import HALF_LIFE, NO_DECAY, Decay, newest_timestamp, partition_day
from pipeline.stats.sequence import return_freed_memory
from pipeline.store import Store
from pipeline.store.files import reading_store_file
from pipeline.store.location import parquet_file, read_table


UNITS_PER_BATCH = 4  # at most, per task: a batch's partial is held by its worker until the client has it, and
# crosses in one message (the `sequence` runs of 4 units of 2e6 battles: 200 MB)


@dataclass(frozen=True)
class Unit:
    """A piece of one source file's rows reduced by one task: some of its partition files, or
    row groups of one big partition. Units never mix sources, so a newly ingested file only
    adds units and the partials of the others can be reused (see `pipeline.stats.cache`)."""

    source: str  # the sha256 of the ingested file
    paths: tuple[str, ...]
    row_groups: tuple[int, ...] | None = None
    category: str | None = None  # only the rows of this category (`LogKind.category`), for a per-category board
    decay: Decay | None = None  # each row weighed by its age (`pipeline.stats.recency`)


class AsOfError(ValueError):
    """An `--as-of` date the store's records cannot be rated as of (a usage error)."""


def check_dated(store: Store, kind: str, as_of: dt.date | None, half_life_days: float = NO_DECAY) -> None:
    """Refuse, from the manifest alone, a reduction as of a date or weighed by age over records without a
    timestamp, and a date before the first record (`AsOfError`)."""
    if as_of is None and half_life_days == NO_DECAY:
        return
    asked = f"--as-of {as_of}" if as_of is not None else f"{HALF_LIFE}={half_life_days:g}"
    days = []
    for report in store.manifest.files.values():
        if report.kind != kind:
            continue
        if any(partition_day(p.path) is None for p in report.partitions):
            raise AsOfError(f"{asked} needs every record dated, and {report.source} has {kind} without a timestamp")
        days += [partition_day(p.path) for p in report.partitions]
    if as_of is not None and days and as_of < min(days):
        raise AsOfError(f"--as-of {as_of} is before the first record ({min(days)}): nothing to rate")


def stored_rows(store: Store, kind: str, as_of: dt.date | None = None) -> int:
    """The rows of `kind` the store's manifest lists (dated `as_of` or before, given a date): no file is read."""
    return sum(part.rows for report in store.manifest.files.values() if report.kind == kind for part in report.partitions
               if as_of is None or (day := partition_day(part.path)) is not None and day <= as_of)


def plan_units(store: Store, kind: str, target_rows: int = ROWS_PER_TASK, category: str | None = None,
               as_of: dt.date | None = None) -> list[Unit]:
    """The units of work over the store's `kind` partitions (those dated `as_of` or before, given a date)."""
    split_rows = log_kind(kind).independent_rows
    units: list[Unit] = []
    for sha, report in sorted(store.manifest.files.items()):
        if report.kind != kind:
            continue
        batch: list[str] = []
        rows = 0
        for part in sorted(report.partitions, key=lambda p: p.path):
            if as_of is not None and partition_day(part.path) > as_of:  # dated rows are partitioned by UTC date
                continue
            path = store.locate(part)
            if part.rows > target_rows and split_rows:
                with reading_store_file(path):
                    groups = parquet_file(path).metadata.num_row_groups
                step = max(1, groups * target_rows // part.rows)
                units += [Unit(sha, (path,), tuple(range(g, min(g + step, groups))), category) for g in range(0, groups, step)]
                continue
            batch.append(path)
            rows += part.rows
            if rows >= target_rows:
                units.append(Unit(sha, tuple(batch), category=category))
                batch, rows = [], 0
        if batch:
            units.append(Unit(sha, tuple(batch), category=category))
    return units


def _stored(file: pq.ParquetFile, columns: list[str], fallbacks: dict[str, str] | None = None) -> list[str]:
    """The columns a partition file holds: a column added to a kind later (battles' `features`, the
    `ingest_position` of every row) is absent from files stored before, and the statistic reading
    it says what it does without it; a fallback column (by the column it stands in for) only if
    the file lacks that one (battle ids order online Elo only in stores without ingest positions)."""
    names = set(file.schema_arrow.names)
    fallbacks = fallbacks or {}
    return [c for c in columns if c in names and fallbacks.get(c) not in names]


def _read(unit: Unit, kind: str, statistics: frozenset[str]) -> pa.Table:
    """The unit's rows, in the columns the statistics read that each file holds (see `_stored`)."""
    dated = (TIMESTAMP,) if unit.decay is not None else ()
    columns = list(dict.fromkeys([*log_kind(kind).columns, *extra_columns(kind, statistics), *dated]))
    fallbacks = fallback_columns(kind, statistics)
    tables = []
    for i, path in enumerate(unit.paths):
        with reading_store_file(path):  # a damaged partition is named
            file = parquet_file(path)
            stored = _stored(file, columns, fallbacks)
            if unit.category is not None:
                table = category_rows(path, kind, stored, unit.category, unit.row_groups)
            elif unit.row_groups is not None:
                table = file.read_row_groups(list(unit.row_groups), columns=stored)
            else:
                table = file.read(columns=stored)
        tables.append(table.append_column(SOURCE, pa.array(np.full(table.num_rows, i, np.int32))))
    return pa.concat_tables(tables, promote_options="default")  # files stored before a column was added lack it


def category_rows(path: str, kind: str, columns: list[str], category: str, row_groups: tuple[int, ...] | None = None) -> pa.Table:
    """The `columns` of one partition file's rows of `category` (of some row groups only, if given).

    The predicate goes into the Parquet read, which skips row groups whose statistics exclude the
    category; a file written before its kind had a category column has no rows of any category."""
    name = log_kind(kind).category
    if name is None:
        raise ValueError(f"{kind} logs have no category column")
    file = parquet_file(path)
    if name not in file.schema_arrow.names:
        return file.schema_arrow.empty_table().select(columns)
    if row_groups is None:
        return read_table(path, columns=columns, filters=pc.field(name) == category)
    table = file.read_row_groups(list(row_groups), columns=list(dict.fromkeys([*columns, name])))
    return table.filter(pc.field(name) == category).select(columns)


def reduce_table(table: pa.Table, kind: str, n: int, statistics: frozenset[str], dense: bool,
                 decay: Decay | None = None) -> Partial:
    """The partial statistics of one unit of work's stored rows, in an id space of size n (each
    comparison weighed by its age, given a `decay`)."""
    chosen = log_kind(kind)
    if decay is not None and chosen.comparisons is None:
        raise ValueError(f"{HALF_LIFE} weighs comparisons (battles), not {kind}")
    if chosen.comparisons is not None:
        comparisons = chosen.comparisons(table)
        if decay is not None:
            comparisons = dataclasses.replace(comparisons, weights=comparisons.weights * decay.factors(table.column(TIMESTAMP)))
        partial = comparison_partial(comparisons, n, dense)
    else:
        partial = weak_order_partial(chosen.weak_orders(table), n, statistics, dense)
    partial.extra = extra_partials(table, kind, n, statistics)
    return partial


def reduce_unit(unit: Unit, kind: str, n: int, statistics: frozenset[str], dense: bool) -> Partial:
    return reduce_table(_read(unit, kind, statistics), kind, n, statistics, dense, unit.decay)


def cached_reduce_unit(root: str, unit: Unit, kind: str, n: int, statistics: frozenset[str], dense: bool,
                       kept: frozenset[str] = frozenset(), skip: frozenset[str] = frozenset()) -> Partial:
    """`reduce_unit`, through the store's cache of partials. Each extra of `kept` (kept finalized
    between reductions, `Extra.kept`) is cached in a file of its own, so that a unit whose rows
    their snapshot holds already is read without those in `skip` (its partial then lacks them);
    or not cached at all (`Kept.unit_partials`: the snapshot is all the next reduction reads of it)."""
    uncached = frozenset(name for name in kept - skip if not EXTRAS[name].kept.unit_partials)
    parts = [statistics - kept, *(frozenset({name}) for name in sorted(kept - skip - uncached))]
    places = [(cache.cache_path(root, kind, key), key) for key in (cache.cache_key(root, kind, part, dense, unit) for part in parts)]
    loaded = [cache.load(path, key, n) for path, key in places]
    if not uncached and all(partial is not None for partial in loaded):
        partial = loaded[0]
        partial.extra |= {name: value for other in loaded[1:] for name, value in other.extra.items()}
        return partial
    partial = reduce_unit(unit, kind, n, statistics - skip, dense)
    rest = dataclasses.replace(partial, extra={name: value for name, value in partial.extra.items() if name not in kept})
    for part, (path, key) in zip(parts, places):
        cache.store(path, key, rest if part is parts[0] else Partial(n, partial.appearances, extra={name: partial.extra[name] for name in part}))
    return partial


def reduce_batch(units: list[tuple[Unit, frozenset[str]]], kind: str, n: int, statistics: frozenset[str], dense: bool,
                 root: str | None, kept: frozenset[str] = frozenset()) -> Partial:
    """The sum of several units' partials (each unit with the kept statistics its snapshot holds:
    see `cached_reduce_unit`), added where they are computed: dense partials are n*n arrays, and
    shipping one per unit between worker processes cost more than computing it."""
    total = None
    for unit, skip in units:
        partial = (reduce_unit(unit, kind, n, statistics, dense) if root is None
                   else cached_reduce_unit(root, unit, kind, n, statistics, dense, kept, skip))
        total = partial if total is None else total + partial
        return_freed_memory()  # the unit's temporaries: its partial is smaller
    return total


def tree_sum(items: list[Delayed]) -> Delayed:
    while len(items) > 1:
        items = [dask.delayed(operator.add)(*items[i: i + 2]) if i + 1 < len(items) else items[i] for i in range(0, len(items), 2)]
    return items[0]


def check_statistics(kind: str, statistics: Iterable[str]) -> frozenset[str]:
    """The names of statistics asked of `kind` logs, checked: known, and computable from that kind."""
    statistics = frozenset(statistics)
    if unknown := statistics - CORE_STATISTICS - EXTRAS.keys():
        raise ValueError(f"unknown statistics {sorted(unknown)}; expected some of {sorted(CORE_STATISTICS | EXTRAS.keys())}")
    if wrong := sorted(name for name in statistics & EXTRAS.keys() if kind not in EXTRAS[name].kinds):
        raise ValueError(f"statistics {wrong} cannot be computed from {kind} logs")
    return statistics


def reduce_store(store: Store, kind: str, statistics: Iterable[str] = CORE_STATISTICS, *, client=None,
                 dense: bool | None = None, target_rows: int = ROWS_PER_TASK, use_cache: bool = False,
                 category: str | None = None, as_of: dt.date | None = None, half_life_days: float = NO_DECAY) -> Statistics:
    """The named statistics of one log kind, computed on `client` (a distributed Client) or locally.

    Given a `category`, only its rows are read (a per-category board): the same statistics as a
    store holding only those rows would give, whatever the partitioning. Given `as_of`, only the
    records dated that day or before; given a finite `half_life_days`, each comparison weighed by its
    age from the newest record read (`pipeline.stats.recency`). Both are refused, before any row is
    read, over records without a timestamp, and a date before the first record (`check_dated`).

    With `use_cache`, per-unit partials are kept in `<store>/cache/` and reused by later calls,
    so that only newly ingested files are read (the workers must be able to write to the store);
    the extras as large as the log (`Extra.kept`) are kept there finalized too, and extended by
    the new units' rows where these come after them (`keep_extra`); so is the sum of the units'
    other partials, which the next call adds to the new units' (`load_summed`).
    """
    statistics = check_statistics(kind, statistics)
    check_dated(store, kind, as_of, half_life_days)
    units = plan_units(store, kind, min(target_rows, log_kind(kind).rows_per_task), category, as_of)
    if not units:
        raise ValueError(f"the store at {store.url} holds no {kind}")
    decay = None
    if half_life_days != NO_DECAY:
        paths = [path for unit in units for path in unit.paths]
        last = max(partition_day(path) for path in paths)
        decay = Decay(newest_timestamp([path for path in paths if partition_day(path) == last]), half_life_days)
        units = [dataclasses.replace(unit, decay=decay) for unit in units]
    agents = store.dictionary("agents")
    n = len(agents)
    dense = n <= DENSE_MAX_AGENTS if dense is None else dense
    root = (store.url if store.objects else store.locate(".")) if use_cache else None
    names = {space: store.dictionary(space).name_order() for space in DICTIONARIES}
    kept = frozenset(name for name in statistics & EXTRAS.keys() if EXTRAS[name].kept is not None) if root else frozenset()
    keys = {name: [cache.cache_key(root, kind, frozenset({name}), dense, unit) for unit in units] for name in kept}
    with contextlib.ExitStack() as locks:  # a snapshot's column files are appended in place: one reduction at a time
        places = {name: cache.SnapshotPlace(root, kind, name, dense, category) for name in sorted(kept)}
        for place in places.values():
            locks.enter_context(cache.snapshot_lock(place))
        snapshots = {name: cache.load_snapshot(place) for name, place in places.items()}
        snapshots = {name: s for name, s in snapshots.items() if s is not None and s.units <= set(keys[name])}  # else a unit left
        skips = [frozenset(name for name, s in snapshots.items() if keys[name][i] in s.units) for i in range(len(units))]
        core_keys = [cache.cache_key(root, kind, statistics - kept, dense, unit) for unit in units] if root else []
        summed_at = cache.SnapshotPlace(root, kind, summed_name(statistics - kept, decay), dense, category) if root else None
        summed = load_summed(summed_at, n, core_keys, skips, kept) if root else None
        pending = [(unit, skip) for unit, skip, key in zip(units, skips, core_keys or [None] * len(units))
                   if summed is None or key not in summed[0]]
        with stage("reduce units", len(pending)) as advance:
            parts = [sum_units(client, pending, kind, n, statistics, dense, root, kept, advance)] if pending else []
            total = functools.reduce(operator.add, parts + ([summed[1]] if summed is not None else []))
            tails = {name: total.extra.pop(name, None) for name in kept}
            if root and (summed is None or summed[0] != set(core_keys)):
                cache.store_snapshot(summed_at, cache.Snapshot(frozenset(core_keys), total.to_arrays()))
            reduced = finalize(kind, total, statistics - kept, names)
            extra = dict(reduced.extra)

            def every_unit(name: str) -> object:  # late data: every unit's partial, from the cache
                with stage(f"reduce units again (rows before the kept {name})", len(units)) as again:
                    return sum_units(client, [(unit, frozenset()) for unit in units], kind, n, statistics, dense, root, kept,
                                     again).extra[name]

            for name in sorted(kept):
                extra[name] = keep_extra(places[name], snapshots.get(name), frozenset(keys[name]),
                                         tails[name], reduced.agents, names, every_unit)
    return dataclasses.replace(reduced, extra=dict(sorted(extra.items())), decay=decay)


def summed_name(core: frozenset[str], decay: Decay | None) -> str:
    """What a summed snapshot holds, naming its file: the statistics of the units' cached partials
    (the kept ones apart) and the weighing of their comparisons."""
    return json.dumps(["sum", sorted(core), *(decay.key() if decay is not None else [])])


def load_summed(place: cache.SnapshotPlace, n: int, core_keys: list[str], skips: list[frozenset[str]],
                kept: frozenset[str]) -> tuple[frozenset[str], Partial] | None:
    """The sum of the cached partials of some units (their keys, among `core_keys`, and the partial in an id space
    of size n) at `place`, kept from the last reduction so that a nightly reads one file for the units it
    reduced rather than one per unit; None where it does not hold: a unit it counted has left the
    store (a category's or an as-of's selection changed), or a kept statistic's snapshot lacks the
    rows of a unit it counted (that unit's own files are then read for it)."""
    snapshot = cache.load_snapshot(place)
    if snapshot is None or not snapshot.units <= set(core_keys):
        return None
    if any(key in snapshot.units and skip != kept for key, skip in zip(core_keys, skips)):
        return None
    partial = cache.partial_of(snapshot.arrays, n, place.path)
    return None if partial is None else (snapshot.units, partial)


def keep_extra(place: cache.SnapshotPlace, snapshot: cache.Snapshot | None, units: frozenset[str], tail: object, present: np.ndarray,
               names: Mapping[str, np.ndarray], every_unit: Callable[[str], object]) -> object:
    """Kept statistic `place.name` of `units`, its snapshot brought up to them: the snapshot extended by
    the merged partial of the units it lacks (`tail`), or, without a snapshot, `tail` (then of every
    unit) finalized; where the tail's rows cannot extend it (late data), `every_unit(name)` finalized.
    A snapshot in column files (`Columns`, on a local store) is appended to in place: its rows are
    neither read nor written again; one of `Kept.files` is mapped, extended in memory and written whole."""
    kept = EXTRAS[place.name].kept
    built = None
    if snapshot is not None and snapshot.files is not None and kept.columns is not None:
        appendix = kept.columns.appendix(snapshot.arrays, tail, present, names)
        if appendix is not None:
            arrays = snapshot.arrays if snapshot.units == units else cache.append_snapshot(place, snapshot, appendix, units, kept.columns.rows)
            return kept.columns.statistic(arrays, present)
    elif snapshot is not None:
        built = kept.extend(snapshot.arrays, tail, present, names)
    else:
        built = kept.finalize(tail, present, names)
    rebuilt = built is None
    if rebuilt:
        built = kept.finalize(every_unit(place.name), present, names)
    statistic, arrays = built
    if snapshot is None or rebuilt or snapshot.units != units:
        cache.store_snapshot(place, cache.Snapshot(units, arrays), kept.column_files)
    return statistic


def sum_units(client, units: list[tuple[Unit, frozenset[str]]], kind: str, n: int, statistics: frozenset[str], dense: bool,
              root: str | None, kept: frozenset[str], advance: Callable[..., None]) -> Partial:
    """The sum of the units' partials (each unit with the kept statistics to leave out), computed
    on `client`'s workers or on local threads in batches, `advance(units)` as each batch ends."""
    slots = sum(client.nthreads().values()) if client is not None else (os.cpu_count() or 1)
    count = max(min(len(units), 2 * slots), -(-len(units) // UNITS_PER_BATCH))
    batches = [[units[i] for i in chosen] for chosen in np.array_split(np.arange(len(units)), count)]
    reduced = [dask.delayed(reduce_batch)(batch, kind, n, statistics, dense, root, kept) for batch in batches]
    units_of = {task.key: len(batch) for task, batch in zip(reduced, batches)}
    if client is None:
        with local_tasks_advance(advance, units_of):
            return tree_sum(reduced).compute(scheduler=dask.threaded.get)
    return gathered_sum(client, reduced, lambda key: advance(units_of[key]))


def gathered_sum(client, reduced: list[Delayed], ended: Callable[[object], None] = lambda key: None) -> Partial:
    """The sum of the batches' partials, computed on `client`'s workers and added here as they are
    ready (`ended(key)` then), each released on its worker as soon as it has arrived.

    The sum is finalized here, where the statistics are wanted, not on a worker: the `sequence`
    runs (25 bytes a battle) then travel once, each column in a message buffer of its own (below
    `distributed.comm.shard`, so never copied into one), are never held by two processes, and the
    workers hold nothing once the last batch has left. Finalized on the worker holding the sum,
    half the runs crossed to it and stayed on their own worker until the end, and the sequence
    (16 bytes a battle) was then held by that worker and the client: 7.2 GB summed over the
    processes for 1e8 battles on 2 workers, against 4.6 GB now (benchmarks/bench_scale.py)."""
    from distributed import as_completed

    total = None
    for future in as_completed(client.compute(reduced)):
        partial = future.result()
        ended(future.key)
        del future
        total = partial if total is None else total + partial  # exact and order-free (`pipeline.stats.extras`)
        del partial
        client.run(return_freed_memory)  # an idle worker's allocators keep the pages of the partial it sent
    # and, in the thread that ran the tasks, what Arrow's pool keeps for that thread
    client.gather([client.submit(return_freed_memory, workers=[worker], pure=False) for worker in client.nthreads()])
    return total
