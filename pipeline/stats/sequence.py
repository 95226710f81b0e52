"""The time-ordered pairwise comparisons of battles and games: the input of online Elo [Elo78].

Online Elo depends on the order of the comparisons, so this statistic keeps every comparison
(it is as large as the log, unlike the counts). The order is a total key:
1. the timestamp, rows without one first;
2. the ingest position (`pipeline.logs.identity.INGEST_POSITION`): the file's ordinal in the order
   files were ingested, then the line in the file; a game is at its first row's position. So a
   log without timestamps runs in file order, then the next file's order, whatever its ids;
3. only for rows without a position (stores written before positions were stored): the battle
   or game id, as text; such rows come before every row with a position at the same timestamp;
4. the pair's position within its game, then the agents, outcome and weight.
Rows equal on the whole key are interchangeable, so the sequence is the same whatever the
partitioning of the store.

Cost: each partial is one *run*, sorted by the whole key once, and compact: agents as int32,
and a column whose every value is its default (`DEFAULTS`: no timestamp, no id, pair 0, weight
1, 2 players) is not stored, so a run of battles with positions keeps 25 bytes a row (17
without timestamps); the battle id column is read only from files without positions
(`Extra.fallbacks`). Merging two partials only collects their runs (no copy); `_finalize`
interleaves all k runs once by their integer keys (timestamp, position) with a compiled heap
merge (`pipeline.stats.sorted_runs`, O(n log k), no string) that reads each run's columns in place
(no concatenated copy) and also marks the rows tied with the row before. Rows of different runs
equal on (timestamp, position) (rows without a position) may then be out of key order;
`_finalize` restores the whole key inside only those blocks that hold more than one battle or
game (or a game's pairs out of order), so the result is the same bytes as one sort of
everything, whatever the partitioning. The finalized sequence is compact too (int32 agents and
groups, float32 scores, weights and players stored once when every row has the same), 16 bytes a
battle, each column gathered straight from the runs; finalizing takes the runs out of the partial
(`Runs.take`) and releases each of their columns once it is gathered, so the live memory of
`_finalize` peaks at the runs and the int32 order (about 30 bytes a battle with timestamps).
Arrow's allocator keeps freed pages for Arrow's next allocations, while the finalized columns are
numpy's, so `_finalize` hands them back to the OS as it releases the runs: the peak RSS measured
is 33 bytes a battle with timestamps and 25 without, input included (54 and 45 before;
benchmarks/bench_elo_memory.py). Under Dask each batch's runs travel to the client once, and the
client finalizes their sum (`pipeline.stats.reduce.gathered_sum`): no worker holds them then.

Between nightlies (`Extra.kept`, `Columns`) the finalized sequence is kept in the store's cache
as its own columns (16 bytes a battle) with its agents and its last (timestamp, position): new
rows that all come after it are finalized alone and appended (`_appendix`); on a local store in
place, the kept rows mapped rather than read (`pipeline.stats.cache.append_snapshot`), so that
the reduction's cost follows the new rows (online Elo itself still replays every row). A new row
at or before that end (late data), or an agent whose store id falls before one already present
(the kept local ids would shift), makes the reduction finalize every unit's runs, as from scratch.

A game of L players gives its L(L-1)/2 pairs, listed by the players' order in the game (place,
then id); they form one *group*, which online Elo updates simultaneously. A battle is a group
of its own.
"""

from __future__ import annotations

import ctypes
import platform
from collections.abc import Iterable, Mapping
from dataclasses import InitVar, dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import is_uniform, uniform, unit_codes
from pipeline.logs import LogKind, log_kind
from pipeline.logs.identity import INGEST_POSITION
from pipeline.logs.orders import A_WINS, B_WINS, TIE
from pipeline.stats.encoding import Arrays, table_from_array, table_to_array
from pipeline.stats.extras import Columns, Extra, Kept, register_extra, same_ids
from pipeline.weights import UNIT, to_units

SORT_KEY = ["timestamp", "position", "group_id", "sub", "a", "b", "outcome", "units"]
# group_id is null where the position is known: it orders (and tells apart) only rows without one
SCHEMA = pa.schema([("timestamp", pa.int64()), ("position", pa.int64()), ("group_id", pa.string()), ("sub", pa.int32()),
                    ("a", pa.int32()), ("b", pa.int32()), ("outcome", pa.int8()), ("units", pa.int64()),
                    ("players", pa.int32())])
DEFAULTS = {"timestamp": None, "group_id": None, "sub": 0, "units": UNIT, "players": 2}  # a run stores none of these columns
# whose every value is the default (None: null): battles with positions and unit weights keep 25 bytes a row
UNKNOWN = np.iinfo(np.int64).min  # a missing timestamp or position as a merge key: first
ID_COLUMNS = {"battles": "battle_id", "games": "game_id"}  # the column naming a comparison's group, per kind
SCORES = np.full(max(A_WINS, B_WINS, TIE) + 1, 0.5, np.float32)  # a's score by outcome code (exact in float32)
SCORES[[A_WINS, B_WINS]] = 1.0, 0.0

@dataclass(frozen=True, eq=False)
class ComparisonSequence:
    """Comparisons in order: local agents `a`, `b`, `score` of a (1 win, 0.5 tie, 0 loss),
    `weight`, `players` in the comparison's game (2 for battles), `group` (nondecreasing).
    Columns may be compact (int32 agents and groups, float32 scores, exact) and `weight` or
    `players` a read-only view of one value (`pipeline.arrays.uniform`) when every row has it."""

    agents: np.ndarray
    a: np.ndarray
    b: np.ndarray
    score: np.ndarray
    weight: np.ndarray
    players: np.ndarray
    group: np.ndarray
    checked: InitVar[int] = 0  # the first rows, whose groups are known nondecreasing (a kept snapshot's: checked as it was built)

    def __post_init__(self, checked: int) -> None:
        m = len(self.a)
        if any(len(x) != m for x in (self.b, self.score, self.weight, self.players, self.group)):
            raise ValueError("one value per comparison in every column")
        first = max(checked, 1)  # a snapshot's rows are mapped from the cache: checking them would read them
        if m > first and np.any(self.group[first:] < self.group[first - 1:-1]):
            raise ValueError("groups must be nondecreasing")

    def __len__(self) -> int:
        return len(self.a)

    def __reduce__(self):
        """Pickled (sent from a Dask worker) with each `uniform` column as its one value: numpy
        would pickle a view of one value as a copy as long as the log."""
        columns = (self.a, self.b, self.score, self.weight, self.players, self.group)
        return _sequence, (self.agents, *((x[:1].copy(), len(x)) if is_uniform(x) else (x, None) for x in columns))


def _sequence(agents: np.ndarray, *columns: tuple[np.ndarray, int | None]) -> ComparisonSequence:
    """The inverse of `ComparisonSequence.__reduce__`."""
    return ComparisonSequence(agents, *(x if length is None else uniform(x[0], length) for x, length in columns))


def _timestamps(table: pa.Table) -> pa.Array:
    return pc.cast(table.column("timestamp").combine_chunks(), pa.int64())


def _positions(table: pa.Table) -> pa.Array:
    """Each row's ingest position; null for rows of files stored before positions were."""
    if INGEST_POSITION not in table.column_names:
        return pa.nulls(table.num_rows, pa.int64())
    return pc.cast(table.column(INGEST_POSITION).combine_chunks(), pa.int64())


def _ids_without_position(table: pa.Table, kind: LogKind, position: pa.Array, rows: pa.Array | None = None) -> pa.Array:
    """The group ids (of `rows`, if given) where the position is missing (the fallback order), null
    elsewhere; the id column is read only from files without positions (`Extra.fallbacks`)."""
    if not position.null_count:
        return pa.nulls(len(position), pa.string())
    ids = table.column(ID_COLUMNS[kind.name]).combine_chunks()
    ids = ids if rows is None else ids.take(rows)
    return pc.if_else(pc.is_null(position), pc.cast(ids, pa.string()), pa.scalar(None, pa.string()))


def _comparisons(table: pa.Table, kind: LogKind) -> pa.Table:
    """Each comparison its own group, agents as stored (a, b)."""
    rows = kind.comparisons(table)
    position = _positions(table)
    return pa.table([_timestamps(table), position, _ids_without_position(table, kind, position),
                     pa.array(np.zeros(len(rows), np.int32)), pa.array(rows.a.astype(np.int32)),
                     pa.array(rows.b.astype(np.int32)), pa.array(rows.outcome.astype(np.int8)), pa.array(to_units(rows.weights)),
                     pa.array(np.full(len(rows), 2, np.int32))], schema=SCHEMA)


def _first_per_unit(values: pa.Array, row_unit: np.ndarray, units: int) -> pa.Array:
    """The smallest non-null value of each unit's rows (null if it has none)."""
    known = ~pc.is_null(values).to_numpy(zero_copy_only=False)
    first = np.full(units, np.iinfo(np.int64).max)
    np.minimum.at(first, row_unit[known], values.to_numpy(zero_copy_only=False)[known].astype(np.int64))
    return pa.array(first, mask=first == np.iinfo(np.int64).max)


def _ballots(table: pa.Table, kind: LogKind) -> pa.Table:
    """The pairs of each ballot (a game) as one group, at the ballot's earliest timestamp and first position."""
    ident = ID_COLUMNS[kind.name]
    units, first_row, row_unit = np.unique(unit_codes(table, ident), return_index=True, return_inverse=True)
    row_unit = row_unit.ravel()
    orders = kind.weak_orders(table)  # ballot i is unit units[i]: weak orders list ballots in code order
    stamp = _first_per_unit(_timestamps(table), row_unit, len(units))
    position = _first_per_unit(_positions(table), row_unit, len(units))
    names = _ids_without_position(table, kind, position, pa.array(first_row))
    lengths = np.diff(orders.offsets)
    parts = []
    for length in np.unique(lengths[lengths > 1]):
        chosen = np.flatnonzero(lengths == length)
        i, j = np.triu_indices(int(length), 1)
        idx = orders.offsets[chosen][:, None] + np.arange(int(length))
        players, levels = orders.agents[idx], orders.levels[idx]
        outcome = np.where(levels[:, i] == levels[:, j], TIE, A_WINS).astype(np.int8)  # members sorted by level
        game = pa.array(np.repeat(chosen, len(i)))
        parts.append(pa.table([
            stamp.take(game), position.take(game), names.take(game),
            pa.array(np.tile(np.arange(len(i), dtype=np.int32), len(chosen))), pa.array(players[:, i].ravel().astype(np.int32)),
            pa.array(players[:, j].ravel().astype(np.int32)), pa.array(outcome.ravel()),
            pa.array(np.repeat(to_units(orders.weights[chosen]), len(i))),
            pa.array(np.full(len(game), length, np.int32))], schema=SCHEMA))
    return pa.concat_tables(parts) if parts else SCHEMA.empty_table()


def _sort(table: pa.Table) -> pa.Table:
    """By the whole key; the ids (all null where every row has a position) only where some row has none."""
    keys = SORT_KEY if table.column("position").null_count else [k for k in SORT_KEY if k != "group_id"]
    return table.take(pc.sort_indices(table, sort_keys=[(k, "ascending", "at_start") for k in keys]))


def _compact(table: pa.Table) -> pa.Table:
    """The run without the columns whose every value is their default (`DEFAULTS`)."""
    def is_default(name: str, value) -> bool:
        column = table.column(name)
        if value is None:
            return column.null_count == len(column)
        return len(column) == 0 or (column.null_count == 0 and pc.all(pc.equal(column, pa.scalar(value, column.type))).as_py())
    return table.drop_columns([name for name, value in DEFAULTS.items() if is_default(name, value)])


class Runs:
    """The partial: sorted runs (tables in `SCHEMA` order, without default columns), interleaved
    only when finalized. Merging collects the runs of both partials and leaves them usable;
    finalizing takes the runs out (`take`), so that their columns are released while the sequence
    is built: a partial is finalized once."""

    __slots__ = ("_tables",)

    def __init__(self, tables: Iterable[pa.Table]) -> None:
        self._tables: tuple[pa.Table, ...] | None = tuple(tables)

    @property
    def tables(self) -> tuple[pa.Table, ...]:
        if self._tables is None:
            raise ValueError("these sequence runs were finalized already")
        return self._tables

    def take(self) -> tuple[pa.Table, ...]:
        """The runs, which this partial then no longer holds."""
        tables, self._tables = self.tables, None
        return tables


def as_run(table: pa.Table) -> Runs:
    """The partial of comparisons in the full layout (`SCHEMA`): one run, sorted by the whole key, without default columns."""
    return Runs([_compact(_sort(table))])


def _partial(table: pa.Table, kind: str, n: int) -> Runs:
    chosen = log_kind(kind)
    return as_run(_comparisons(table, chosen) if chosen.comparisons is not None else _ballots(table, chosen))


def _merge(x: Runs, y: Runs) -> Runs:
    """The runs of both: they are interleaved once, by `_finalize`, which orders rows by the whole
    key, so the result does not depend on the order of the runs."""
    return Runs(x.tables + y.tables)


def _encode(runs: Runs) -> Arrays:
    return {f"run{i}": table_to_array(run, steps=("timestamp", "position")) for i, run in enumerate(runs.tables)}


def _decode(arrays: Arrays) -> Runs:
    return Runs(table_from_array(arrays[f"run{i}"]) for i in range(len(arrays)))


class _Columns:
    """The runs' columns as the compiled loops read them (`pipeline.stats.sorted_runs`): per name,
    one numpy array per run (zero-copy where Arrow allows; one value where the run does not store
    the column), rows numbered across the runs by `starts`; `release` drops a column for good."""

    def __init__(self, tables: list[pa.Table]) -> None:
        from pipeline.stats.sorted_runs import run_columns  # numba is imported on first use only

        self.starts = np.r_[0, np.cumsum([table.num_rows for table in tables])].astype(np.int64)
        self.rows = int(self.starts[-1])
        self.columns = {name: run_columns([self._values(table, name) for table in tables]) for name in SCHEMA.names if name != "group_id"}
        stored_ids = [table.column("group_id") if "group_id" in table.column_names else None for table in tables]
        self.ids = None if all(ids is None for ids in stored_ids) else pa.chunked_array(
            [pa.nulls(table.num_rows, pa.string()) if ids is None else ids for ids, table in zip(stored_ids, tables)], pa.string())

    @staticmethod
    def _values(table: pa.Table, name: str) -> np.ndarray:
        """A column as numpy, one default value where the run does not store it; keys with missing values first."""
        dtype = SCHEMA.field(name).type.to_pandas_dtype()
        if name not in table.column_names:
            default = DEFAULTS[name]
            return np.full(1, UNKNOWN if default is None else default, dtype)
        column = table.column(name)
        if column.null_count and name in ("timestamp", "position"):  # filling copies: only where some value is missing
            column = column.fill_null(UNKNOWN)
        return np.asarray(column.to_numpy(), dtype)

    def at(self, name: str, rows: np.ndarray, lookup: np.ndarray | None = None, dtype=None) -> np.ndarray:
        """The column's values of `rows`, mapped by `lookup` if given."""
        from pipeline.stats.sorted_runs import gather

        dtype = dtype or (lookup.dtype if lookup is not None else SCHEMA.field(name).type.to_pandas_dtype())
        out = np.empty(len(rows), dtype)
        gather(self.columns[name], self.starts, rows, np.zeros(0, out.dtype) if lookup is None else lookup, out)
        return out

    def extremes(self, name: str) -> set:
        return {value for run in self.columns[name] if len(run) for value in (run.min().item(), run.max().item())}

    def release(self, *names: str) -> None:
        for name in names:
            if name == "group_id":
                self.ids = None
            else:
                del self.columns[name]
        return_freed_memory()


def return_freed_memory() -> None:
    """Hand freed pages back to the OS: Arrow's and, with glibc, the C heap's. Arrow's allocator
    keeps them for Arrow's next allocations, but the finalized sequence is allocated by numpy:
    without this, the released runs and the reduction's temporaries stay resident beside it (peak
    RSS 54 -> 33 bytes a battle). glibc keeps freed blocks below its mmap threshold (up to 32 MB)
    in its heaps: Dask receives each buffer of a message (a run's column: 8-16 MB) in a block of
    its own, so a client that received the runs would otherwise keep about 14 bytes a battle."""
    pa.default_memory_pool().release_unused()
    if _GLIBC is not None:
        _GLIBC.malloc_trim(0)


def _glibc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libc.so.6") if platform.libc_ver()[0] == "glibc" else None
    except OSError:
        return None


_GLIBC = _glibc()


def _table(columns: _Columns, rows: np.ndarray) -> pa.Table:
    """The key columns that order rows equal on (timestamp, position), of `rows`, for the few rows whose order needs them."""
    return pa.table({name: (columns.ids.take(rows) if columns.ids is not None else pa.nulls(len(rows), pa.string()))
                     if name == "group_id" else pa.array(columns.at(name, rows)) for name in SORT_KEY[2:]})


def _same_group(columns: _Columns, order: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """For rows tied with the row before on (timestamp, position): the same battle or game as it:
    always for rows with a position; for rows without one, the same id (two missing ids are the same)."""
    cur, prev = order[rows], order[rows - 1]
    known = columns.at("position", cur) != UNKNOWN
    if known.all() or columns.ids is None:
        return np.ones(len(rows), bool)
    now, before = columns.ids.take(cur), columns.ids.take(prev)
    same_id = pc.equal(now, before).fill_null(False).to_numpy(zero_copy_only=False)
    same_id |= pc.is_null(now).to_numpy(zero_copy_only=False) & pc.is_null(before).to_numpy(zero_copy_only=False)
    return known | same_id


def _restore_key_order(columns: _Columns, order: np.ndarray, tied: np.ndarray) -> None:
    """Sort by the whole key, in place, the blocks of equal (timestamp, position) whose rows are
    not one unit's in order: only rows without a position can form such blocks."""
    rows = np.flatnonzero(tied)
    if not len(rows):
        return
    out_of_order = ~_same_group(columns, order, rows) | (columns.at("sub", order[rows]) <= columns.at("sub", order[rows - 1]))
    if not out_of_order.any():
        return
    block_starts = np.flatnonzero(~tied)
    block_ends = np.r_[block_starts[1:], len(order)]
    chosen = np.unique(np.searchsorted(block_starts, rows[out_of_order], side="right") - 1)
    lengths = block_ends[chosen] - block_starts[chosen]
    mixed = np.repeat(block_starts[chosen] - np.r_[0, np.cumsum(lengths)[:-1]], lengths) + np.arange(lengths.sum())
    table = _table(columns, order[mixed]).append_column("block", pa.array(np.repeat(np.arange(len(chosen)), lengths)))
    by_key = pc.sort_indices(table, sort_keys=[("block", "ascending")] + [(k, "ascending", "at_start") for k in SORT_KEY[2:]])
    order[mixed] = order[mixed][by_key.to_numpy()]


def _gathered(columns: _Columns, name: str, order: np.ndarray) -> np.ndarray:
    """A column in the merged order; a view of one value (no memory per row) if every row has the same."""
    values = columns.extremes(name)
    if len(values) == 1:
        return uniform(np.array(values.pop(), SCHEMA.field(name).type.to_pandas_dtype()), len(order))
    return columns.at(name, order)


def _local_agents(columns: _Columns, present: np.ndarray) -> np.ndarray:
    """Local agent (int32) by store id, for every id up to the largest in the runs: its index in `present`."""
    largest = max((value for name in ("a", "b") for value in columns.extremes(name)), default=-1)
    return np.searchsorted(present, np.arange(largest + 1)).astype(np.int32)


def _finalize(runs: Runs, present: np.ndarray, name_orders: Mapping[str, np.ndarray]) -> ComparisonSequence:
    from pipeline.stats.sorted_runs import merge_order  # numba is imported on first use only

    columns = _Columns([run for run in runs.take() if run.num_rows] or [_compact(SCHEMA.empty_table())])
    return_freed_memory()  # what reducing the runs left behind
    m = columns.rows
    index = np.int32 if m < 2**31 else np.int64
    order, tied = np.empty(m, index), np.zeros(m, bool)
    merge_order(columns.columns["timestamp"], columns.columns["position"], columns.starts, order, tied)
    columns.release("timestamp")
    _restore_key_order(columns, order, tied)
    players = _gathered(columns, "players", order)
    same = np.zeros(m, bool)
    rows = np.flatnonzero(tied)
    same[rows] = _same_group(columns, order, rows) & (players[rows] > 2)
    columns.release("position", "group_id", "sub")
    group = np.cumsum(~same, dtype=index) - 1
    del same, tied, rows
    units = _gathered(columns, "units", order)
    columns.release("units", "players")
    weight = uniform(units[0] / UNIT, m) if m and is_uniform(units) else units / UNIT
    del units
    score = columns.at("outcome", order, SCORES)
    columns.release("outcome")
    local = _local_agents(columns, present)
    a = columns.at("a", order, local)
    columns.release("a")
    b = columns.at("b", order, local)
    del columns, order
    return ComparisonSequence(present, a, b, score, weight, players, group)


def _key_at(run: pa.Table, row: int) -> tuple[int, int]:
    """A run's (timestamp, position) at `row`, missing values as `UNKNOWN` (first)."""
    values = [run.column(name)[row].as_py() if name in run.column_names else None for name in ("timestamp", "position")]
    return tuple(UNKNOWN if value is None else value for value in values)


def _ends(runs: Iterable[pa.Table]) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """The smallest and largest (timestamp, position) of the runs' rows (each run is sorted by
    the whole key, whose first two columns these are); None without rows."""
    runs = [run for run in runs if run.num_rows]
    if not runs:
        return None
    return min(_key_at(run, 0) for run in runs), max(_key_at(run, run.num_rows - 1) for run in runs)


ROW_COLUMNS = frozenset({"a", "b", "score", "group", "weight", "players"})  # the snapshot's columns of one value a row
OF_ONE_VALUE = {"weight": np.float64, "players": np.int32}  # kept as their one value (`<name>.value`) while every row has it


def _same(values: np.ndarray) -> bool:
    return bool(len(values)) and (is_uniform(values) or values.min() == values.max())


def _snapshot(seq: ComparisonSequence, end: tuple[int, int] | None) -> Arrays:
    """The snapshot of a finalized sequence (`Kept`): its columns as they are (local agents, the
    groups numbered), weight and players as their one value while every row has the same, the
    agents, the number of groups and the (timestamp, position) of the last row. Local agents stay
    valid while the agents of later reductions begin with these (store ids only grow): 16 bytes a
    battle, appended to in place on a local store, and mapped, not read, by the next reduction."""
    arrays = {"a": seq.a, "b": seq.b, "score": seq.score, "group": seq.group, "agents": seq.agents,
              "groups": np.asarray(int(seq.group[-1]) + 1 if len(seq) else 0, np.int64), "end": np.asarray(end or (), np.int64)}
    for name in OF_ONE_VALUE:
        values = getattr(seq, name)
        if len(values):
            arrays |= {f"{name}.value": values[:1].copy()} if _same(values) else {name: np.ascontiguousarray(values)}
    return arrays


def _finalize_kept(runs: Runs, present: np.ndarray, name_orders: Mapping[str, np.ndarray]) -> tuple[ComparisonSequence, Arrays]:
    ends = _ends(runs.tables)
    seq = _finalize(runs, present, name_orders)
    return seq, _snapshot(seq, ends and ends[1])


def _appendix(kept: Arrays, tail: Runs | None, present: np.ndarray, name_orders: Mapping[str, np.ndarray]) -> Arrays | None:
    """What the tail's rows append to a snapshot (`Columns.appendix`), when they all come after its
    last row by (timestamp, position) (an ordered append: a new file of later battles, or without
    timestamps, any new file) and its agents begin `present`; None otherwise (late data, or an agent
    new to these logs but not to the store, which shifts the local ids). No row is then tied with
    one across the boundary, so `_finalize` of all the rows would give the same."""
    head_rows, agents = len(kept["a"]), kept["agents"]
    if len(present) < len(agents) or not np.array_equal(present[:len(agents)], agents):
        return None
    tail = tail if tail is not None else Runs([])
    ends, end = _ends(tail.tables), tuple(kept["end"].tolist())
    if head_rows and ends is not None and ends[0] <= end:
        return None
    new = _finalize(tail, present, name_orders)
    index = np.int32 if head_rows + len(new) < 2**31 else np.int64
    if kept["group"].dtype != index:  # past 2**31 rows the groups widen: every row again
        return None
    groups = int(kept["groups"])
    appendix = {"a": new.a, "b": new.b, "score": new.score, "group": new.group.astype(index) + index(groups), "agents": present,
                "groups": np.asarray(groups + (int(new.group[-1]) + 1 if len(new) else 0), np.int64),
                "end": np.asarray(ends[1] if ends else end, np.int64)}
    for name, dtype in OF_ONE_VALUE.items():
        values, value = getattr(new, name), kept.get(f"{name}.value")
        if name in kept:
            appendix[name] = np.ascontiguousarray(values)
        elif not len(values) or (value is not None and _same(values) and values[0] == value[0]):
            appendix |= {} if value is None else {f"{name}.value": value}
        elif not head_rows:
            appendix |= {f"{name}.value": values[:1].copy()} if _same(values) else {name: np.ascontiguousarray(values)}
        else:  # the first row of another value: from now on a column, written whole once
            appendix[name] = np.concatenate([np.broadcast_to(value, (head_rows,)), values]).astype(dtype)
    return appendix


def _statistic(kept: Arrays, present: np.ndarray) -> ComparisonSequence:
    """The sequence of a whole snapshot (`Columns.statistic`): its columns as they are (mapped from
    the cache, not read), the groups checked as the snapshot was built."""
    rows = len(kept["a"])

    def column(name: str) -> np.ndarray:
        if name in kept:
            return kept[name]
        if f"{name}.value" in kept:
            return uniform(kept[f"{name}.value"][0], rows)
        if rows:
            raise ValueError(f"the snapshot has neither the {name} of each row nor their one value")
        return np.zeros(0, OF_ONE_VALUE[name])

    return ComparisonSequence(present, kept["a"], kept["b"], kept["score"], column("weight"), column("players"), kept["group"],
                              checked=rows)


COLUMNS = Columns(ROW_COLUMNS, _appendix, _statistic)


SEQUENCE = register_extra(Extra(
    "sequence", {kind: (column, "timestamp", INGEST_POSITION) for kind, column in ID_COLUMNS.items()}, _partial, _merge, _finalize,
    _encode, _decode, fallbacks={column: INGEST_POSITION for column in ID_COLUMNS.values()}, resize=same_ids,
    kept=Kept(_finalize_kept, COLUMNS.extend, COLUMNS),
))
