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
merge (`pipeline.stats.sorted_runs`, O(n log k), no string), which also marks the rows tied with
the row before. Rows of different runs equal on (timestamp, position) (rows without a position)
may then be out of key order; `_finalize` restores the whole key inside only those blocks that
hold more than one battle or game (or a game's pairs out of order), so the result is the same
bytes as one sort of everything, whatever the partitioning. The finalized sequence is compact
too (int32 agents and groups, float32 scores, weights and players stored once when every row has
the same), 16 bytes a battle; the peak of `_finalize` is the runs, their two int64 keys, the
int32 order and the output (about 60 bytes a battle with timestamps; benchmarks/bench_elo_memory.py).

A game of L players gives its L(L-1)/2 pairs, listed by the players' order in the game (place,
then id); they form one *group*, which online Elo updates simultaneously. A battle is a group
of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import is_uniform, uniform, unit_codes
from pipeline.logs import LogKind, log_kind
from pipeline.logs.identity import INGEST_POSITION
from pipeline.logs.orders import A_WINS, B_WINS, TIE
from pipeline.stats.encoding import Arrays, table_from_array, table_to_array
from pipeline.stats.extras import Extra, register_extra
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

Runs = tuple[pa.Table, ...]  # the partial: sorted runs, merged only when finalized


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

    def __post_init__(self) -> None:
        m = len(self.a)
        if any(len(x) != m for x in (self.b, self.score, self.weight, self.players, self.group)):
            raise ValueError("one value per comparison in every column")
        if m and np.any(self.group[1:] < self.group[:-1]):
            raise ValueError("groups must be nondecreasing")

    def __len__(self) -> int:
        return len(self.a)


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


def as_run(table: pa.Table) -> Runs:
    """The partial of comparisons in the full layout (`SCHEMA`): one run, sorted by the whole key, without default columns."""
    return (_compact(_sort(table)),)


def _partial(table: pa.Table, kind: str, n: int) -> Runs:
    chosen = log_kind(kind)
    return as_run(_comparisons(table, chosen) if chosen.comparisons is not None else _ballots(table, chosen))


def _merge(x: Runs, y: Runs) -> Runs:
    """The runs of both: they are interleaved once, by `_finalize`, which orders rows by the whole
    key, so the result does not depend on the order of the runs."""
    return x + y


def _encode(runs: Runs) -> Arrays:
    return {f"run{i}": table_to_array(run) for i, run in enumerate(runs)}


def _decode(arrays: Arrays) -> Runs:
    return tuple(table_from_array(arrays[f"run{i}"]) for i in range(len(arrays)))


def _values(run: pa.Table, name: str) -> np.ndarray:
    """A column of a run as numpy, its default where the run does not store it; keys with missing values first."""
    if name not in run.column_names:
        default = DEFAULTS[name]
        return np.full(run.num_rows, UNKNOWN if default is None else default, SCHEMA.field(name).type.to_pandas_dtype())
    column = run.column(name)
    return (column.fill_null(UNKNOWN) if name in ("timestamp", "position") else column).to_numpy()


def _concatenated(runs: Runs, name: str) -> np.ndarray:
    return np.concatenate([_values(run, name) for run in runs])


def _group_ids(runs: Runs) -> pa.ChunkedArray:
    return pa.chunked_array([run.column("group_id") if "group_id" in run.column_names else pa.nulls(run.num_rows, pa.string())
                             for run in runs], pa.string())


def _table(runs: Runs, rows: np.ndarray) -> pa.Table:
    """The key columns of `rows` (indices into the concatenated runs), for the few rows whose order needs them."""
    return pa.table({name: _group_ids(runs).take(rows) if name == "group_id" else pa.array(_concatenated(runs, name)[rows])
                     for name in SORT_KEY})


def _same_group(runs: Runs, order: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """For rows tied with the row before on (timestamp, position): the same battle or game as it:
    always for rows with a position; for rows without one, the same id (two missing ids are the same)."""
    cur, prev = order[rows], order[rows - 1]
    known = _concatenated(runs, "position")[cur] != UNKNOWN
    if known.all():
        return known
    ids = _group_ids(runs)
    now, before = ids.take(cur), ids.take(prev)
    same_id = pc.equal(now, before).fill_null(False).to_numpy(zero_copy_only=False)
    same_id |= pc.is_null(now).to_numpy(zero_copy_only=False) & pc.is_null(before).to_numpy(zero_copy_only=False)
    return known | same_id


def _restore_key_order(runs: Runs, order: np.ndarray, tied: np.ndarray) -> None:
    """Sort by the whole key, in place, the blocks of equal (timestamp, position) whose rows are
    not one unit's in order: only rows without a position can form such blocks."""
    rows = np.flatnonzero(tied)
    if not len(rows):
        return
    sub = _concatenated(runs, "sub")
    out_of_order = ~_same_group(runs, order, rows) | (sub[order[rows]] <= sub[order[rows - 1]])
    if not out_of_order.any():
        return
    block_starts = np.flatnonzero(~tied)
    block_ends = np.r_[block_starts[1:], len(order)]
    chosen = np.unique(np.searchsorted(block_starts, rows[out_of_order], side="right") - 1)
    lengths = block_ends[chosen] - block_starts[chosen]
    mixed = np.repeat(block_starts[chosen] - np.r_[0, np.cumsum(lengths)[:-1]], lengths) + np.arange(lengths.sum())
    table = _table(runs, order[mixed]).append_column("block", pa.array(np.repeat(np.arange(len(chosen)), lengths)))
    by_key = pc.sort_indices(table, sort_keys=[("block", "ascending")] + [(k, "ascending", "at_start") for k in SORT_KEY[2:]])
    order[mixed] = order[mixed][by_key.to_numpy()]


def _gathered(runs: Runs, name: str, order: np.ndarray) -> np.ndarray:
    """A column in the merged order; a view of one value (no memory per row) if every row has the same."""
    stored = [run.column(name) for run in runs if name in run.column_names]
    values = {DEFAULTS[name]} if len(stored) < len(runs) else set()
    for column in stored:
        extremes = pc.min_max(column)
        values |= {extremes["min"].as_py(), extremes["max"].as_py()}
    if len(values) == 1:
        return uniform(np.array(values.pop(), SCHEMA.field(name).type.to_pandas_dtype()), len(order))
    return _concatenated(runs, name)[order]


def _local(runs: Runs, name: str, present: np.ndarray, order: np.ndarray) -> np.ndarray:
    """An agent column as local agents 0..k-1 (int32) in the merged order."""
    return np.concatenate([np.searchsorted(present, run.column(name).to_numpy()).astype(np.int32) for run in runs])[order]


def _finalize(runs: Runs, present: np.ndarray, name_orders: Mapping[str, np.ndarray]) -> ComparisonSequence:
    from pipeline.stats.sorted_runs import merge_order  # numba is imported on first use only

    runs = tuple(run for run in runs if run.num_rows) or (_compact(SCHEMA.empty_table()),)
    starts = np.r_[0, np.cumsum([run.num_rows for run in runs])].astype(np.int64)
    m = int(starts[-1])
    index = np.int32 if m < 2**31 else np.int64
    order, tied = np.empty(m, index), np.zeros(m, bool)
    merge_order(_concatenated(runs, "timestamp"), _concatenated(runs, "position"), starts, order, tied)
    _restore_key_order(runs, order, tied)
    players = _gathered(runs, "players", order)
    same = np.zeros(m, bool)
    rows = np.flatnonzero(tied)
    same[rows] = _same_group(runs, order, rows) & (players[rows] > 2)
    group = np.cumsum(~same, dtype=index) - 1
    del same, tied
    units = _gathered(runs, "units", order)
    weight = uniform(units[0] / UNIT, m) if m and is_uniform(units) else units / UNIT
    score = SCORES[np.concatenate([run.column("outcome").to_numpy() for run in runs])[order]]
    return ComparisonSequence(present, _local(runs, "a", present, order), _local(runs, "b", present, order), score,
                              weight, players, group)


SEQUENCE = register_extra(Extra(
    "sequence", {kind: (column, "timestamp", INGEST_POSITION) for kind, column in ID_COLUMNS.items()}, _partial, _merge, _finalize,
    _encode, _decode, fallbacks={column: INGEST_POSITION for column in ID_COLUMNS.values()},
))
