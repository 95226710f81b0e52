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

Cost: each partial is sorted by the whole key once. Merges interleave two sorted runs by their
integer keys only (no string): by timestamp (a linear merge by binary search), then, inside the
blocks of equal timestamp where the runs' rows interleave, by position (a stable sort of two
sorted runs, which is a linear merge too), so the merge tree costs O(n log P) integer work for
P partials; a merge holds its two runs and their interleaving (about twice the rows merged,
at ~50 bytes a row). Rows of different partials equal on (timestamp, position) (rows without a position)
may then be out of key order; `_finalize` restores the whole key inside only those blocks that
hold more than one battle or game (or a game's pairs out of order), so the result is the same
bytes as one sort of everything, whatever the partitioning.

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

from pipeline.arrays import unit_codes
from pipeline.logs import LogKind, log_kind
from pipeline.logs.identity import INGEST_POSITION
from pipeline.logs.orders import A_WINS, B_WINS, TIE
from pipeline.stats.encoding import arrays_table, table_arrays
from pipeline.stats.extras import Extra, register_extra
from pipeline.weights import UNIT, to_units

SORT_KEY = ["timestamp", "position", "group_id", "sub", "a", "b", "outcome", "units"]
# group_id is null where the position is known: it orders (and tells apart) only rows without one
SCHEMA = pa.schema([("timestamp", pa.int64()), ("position", pa.int64()), ("group_id", pa.string()), ("sub", pa.int32()),
                    ("a", pa.int64()), ("b", pa.int64()), ("outcome", pa.int8()), ("units", pa.int64()),
                    ("players", pa.int32())])
UNKNOWN = np.iinfo(np.int64).min  # a missing timestamp or position as a merge key: first
ID_COLUMNS = {"battles": "battle_id", "games": "game_id"}  # the column naming a comparison's group, per kind


@dataclass(frozen=True, eq=False)
class ComparisonSequence:
    """Comparisons in order: local agents `a`, `b`, `score` of a (1 win, 0.5 tie, 0 loss),
    `weight`, `players` in the comparison's game (2 for battles), `group` (nondecreasing)."""

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
        if m and np.any(np.diff(self.group) < 0):
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


def _ids_without_position(ids: pa.Array, position: pa.Array) -> pa.Array:
    """The group ids where the position is missing (the fallback order), null elsewhere."""
    if not position.null_count:
        return pa.nulls(len(ids), pa.string())
    return pc.if_else(pc.is_null(position), pc.cast(ids, pa.string()), pa.scalar(None, pa.string()))


def _comparisons(table: pa.Table, kind: LogKind) -> pa.Table:
    """Each comparison its own group, agents as stored (a, b)."""
    rows = kind.comparisons(table)
    position = _positions(table)
    ids = _ids_without_position(table.column(ID_COLUMNS[kind.name]).combine_chunks(), position)
    return pa.table([_timestamps(table), position, ids, pa.array(np.zeros(len(rows), np.int32)), pa.array(rows.a),
                     pa.array(rows.b), pa.array(rows.outcome.astype(np.int8)), pa.array(to_units(rows.weights)),
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
    names = _ids_without_position(table.column(ident).combine_chunks().take(pa.array(first_row)), position)
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
            pa.array(np.tile(np.arange(len(i), dtype=np.int32), len(chosen))), pa.array(players[:, i].ravel()),
            pa.array(players[:, j].ravel()), pa.array(outcome.ravel()),
            pa.array(np.repeat(to_units(orders.weights[chosen]), len(i))),
            pa.array(np.full(len(game), length, np.int32))], schema=SCHEMA))
    return pa.concat_tables(parts) if parts else SCHEMA.empty_table()


def _sort(table: pa.Table) -> pa.Table:
    """By the whole key; the ids (all null where every row has a position) only where some row has none."""
    keys = SORT_KEY if table.column("position").null_count else [k for k in SORT_KEY if k != "group_id"]
    return table.take(pc.sort_indices(table, sort_keys=[(k, "ascending", "at_start") for k in keys]))


def _partial(table: pa.Table, kind: str, n: int) -> pa.Table:
    chosen = log_kind(kind)
    return _sort(_comparisons(table, chosen) if chosen.comparisons is not None else _ballots(table, chosen))


def _key(table: pa.Table, column: str) -> np.ndarray:
    """An integer key column as the merge sees it: missing values first."""
    return table.column(column).fill_null(UNKNOWN).to_numpy()


def _merge(x: pa.Table, y: pa.Table) -> pa.Table:
    """Two sorted runs interleaved by (timestamp, position), x's rows first among equal keys (see `_finalize`)."""
    tx, ty = _key(x, "timestamp"), _key(y, "timestamp")
    order = np.empty(len(tx) + len(ty), np.int64)
    order[np.arange(len(tx)) + np.searchsorted(ty, tx, side="left")] = np.arange(len(tx))
    order[np.arange(len(ty)) + np.searchsorted(tx, ty, side="right")] = np.arange(len(tx), len(tx) + len(ty))
    both = pa.concat_tables([x, y])  # not combined: `take` gathers across the chunks, without a copy of both runs
    stamp, position = _key(both, "timestamp")[order], _key(both, "position")[order]
    backwards = (stamp[1:] == stamp[:-1]) & (position[1:] < position[:-1])
    if backwards.any():  # blocks of one timestamp where the runs interleave: each is two sorted runs of positions,
        block = np.cumsum(np.r_[True, stamp[1:] != stamp[:-1]]) - 1  # which a stable sort merges in linear time
        rows = np.flatnonzero(np.isin(block, block[1:][backwards]))
        order[rows] = order[rows[np.lexsort((position[rows], block[rows]))]]
    return both.take(order)


def _same_group_as_previous(table: pa.Table) -> np.ndarray:
    """Per row after the first: the same battle or game as the row before: the same position, or
    for rows without one, the same id (two missing ids are the same)."""
    position, value = table.column("position"), _key(table, "position")
    if not position.null_count:
        return value[1:] == value[:-1]
    m = len(position)
    known = ~pc.is_null(position).to_numpy(zero_copy_only=False)
    ident = table.column("group_id")
    same_id = pc.equal(ident.slice(1), ident.slice(0, m - 1)).fill_null(False).to_numpy()
    same_id |= pc.is_null(ident.slice(1)).to_numpy() & pc.is_null(ident.slice(0, m - 1)).to_numpy()
    return np.where(known[1:] & known[:-1], value[1:] == value[:-1], same_id & ~known[1:] & ~known[:-1])


def _restore_key_order(table: pa.Table) -> pa.Table:
    """Sort by the whole key inside the blocks of equal (timestamp, position) whose rows are not
    one unit's in order: only rows without a position can form such blocks."""
    if table.num_rows < 2:
        return table
    stamp, position, sub = _key(table, "timestamp"), _key(table, "position"), table.column("sub").to_numpy()
    tied = (stamp[1:] == stamp[:-1]) & (position[1:] == position[:-1])
    out_of_order = tied & (~_same_group_as_previous(table) | (sub[1:] <= sub[:-1]))
    if not out_of_order.any():
        return table
    block = np.cumsum(np.r_[True, ~tied]) - 1
    rows = np.flatnonzero(np.isin(block, block[1:][out_of_order]))
    mixed = table.take(pa.array(rows)).append_column("block", pa.array(block[rows]))
    order = np.arange(table.num_rows)
    order[rows] = rows[pc.sort_indices(mixed, sort_keys=[("block", "ascending")] + [
        (k, "ascending", "at_start") for k in SORT_KEY[2:]]).to_numpy()]
    return table.take(pa.array(order))


def _finalize(table: pa.Table, present: np.ndarray, name_orders: Mapping[str, np.ndarray]) -> ComparisonSequence:
    table = _restore_key_order(table)
    a, b = np.searchsorted(present, table.column("a").to_numpy()), np.searchsorted(present, table.column("b").to_numpy())
    outcome = table.column("outcome").to_numpy()
    players = table.column("players").to_numpy().astype(np.int64)
    stamp = _key(table, "timestamp")
    same = np.zeros(len(a), bool)
    if len(a) > 1:
        same[1:] = (stamp[1:] == stamp[:-1]) & _same_group_as_previous(table) & (players[1:] > 2)
    score = np.select([outcome == A_WINS, outcome == B_WINS], [1.0, 0.0], 0.5)
    return ComparisonSequence(present, a.astype(np.int64), b.astype(np.int64), score,
                              table.column("units").to_numpy() / UNIT, players, np.cumsum(~same) - 1)


SEQUENCE = register_extra(Extra(
    "sequence", {kind: (column, "timestamp", INGEST_POSITION) for kind, column in ID_COLUMNS.items()}, _partial, _merge, _finalize,
    table_arrays, arrays_table,
))
