"""The time-ordered pairwise comparisons of battles and games: the input of online Elo [Elo78].

Online Elo depends on the order of the comparisons, so this statistic keeps every comparison
(it is as large as the log, unlike the counts). Comparisons are sorted by a total key:
timestamp (rows without one first), then battle or game id, then the pair's position within
its game, then the agents, outcome and weight. Rows equal on the whole key are interchangeable,
so the sequence is the same whatever the partitioning of the store.

Cost: each partial is sorted by the whole key once; merges only interleave two sorted runs by
their integer timestamps (a linear merge by binary search, no sort, no string in the key), so
the merge tree costs O(n log P) integer work for P partials instead of a full multi-key sort
at every level. Rows of different partials with the same timestamp may then be out of key
order; `_finalize` restores the whole key inside only those blocks of equal timestamps that hold
more than one battle or game (or a game's pairs out of order), so the result is the same bytes
as one sort of everything, whatever the partitioning.

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
from pipeline.logs.orders import A_WINS, B_WINS, TIE
from pipeline.stats.encoding import arrays_table, table_arrays
from pipeline.stats.extras import Extra, register_extra
from pipeline.weights import UNIT, to_units

SORT_KEY = ["timestamp", "group_id", "sub", "a", "b", "outcome", "units"]
SCHEMA = pa.schema([("timestamp", pa.int64()), ("group_id", pa.string()), ("sub", pa.int32()), ("a", pa.int64()),
                     ("b", pa.int64()), ("outcome", pa.int8()), ("units", pa.int64()), ("players", pa.int32())])
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


def _comparisons(table: pa.Table, kind: LogKind) -> pa.Table:
    """Each comparison its own group, agents as stored (a, b)."""
    rows = kind.comparisons(table)
    ids = table.column(ID_COLUMNS[kind.name]).combine_chunks()
    return pa.table([_timestamps(table), ids, pa.array(np.zeros(len(rows), np.int32)), pa.array(rows.a), pa.array(rows.b),
                     pa.array(rows.outcome.astype(np.int8)), pa.array(to_units(rows.weights)),
                     pa.array(np.full(len(rows), 2, np.int32))], schema=SCHEMA)


def _ballots(table: pa.Table, kind: LogKind) -> pa.Table:
    """The pairs of each ballot (a game) as one group, at the ballot's earliest timestamp."""
    ident = ID_COLUMNS[kind.name]
    units, first_row, row_unit = np.unique(unit_codes(table, ident), return_index=True, return_inverse=True)
    orders = kind.weak_orders(table)  # ballot i is unit units[i]: weak orders list ballots in code order
    names = table.column(ident).combine_chunks().take(pa.array(first_row))
    stamps = _timestamps(table)
    known = ~pc.is_null(stamps).to_numpy(zero_copy_only=False)
    first = np.full(len(units), np.iinfo(np.int64).max)
    np.minimum.at(first, row_unit.ravel()[known], stamps.to_numpy(zero_copy_only=False)[known].astype(np.int64))
    lengths = np.diff(orders.offsets)
    parts = []
    for length in np.unique(lengths[lengths > 1]):
        chosen = np.flatnonzero(lengths == length)
        i, j = np.triu_indices(int(length), 1)
        idx = orders.offsets[chosen][:, None] + np.arange(int(length))
        players, levels = orders.agents[idx], orders.levels[idx]
        outcome = np.where(levels[:, i] == levels[:, j], TIE, A_WINS).astype(np.int8)  # members sorted by level
        game = np.repeat(chosen, len(i))
        stamp = first[game]
        parts.append(pa.table([
            pa.array(stamp, mask=stamp == np.iinfo(np.int64).max), names.take(pa.array(game)),
            pa.array(np.tile(np.arange(len(i), dtype=np.int32), len(chosen))), pa.array(players[:, i].ravel()),
            pa.array(players[:, j].ravel()), pa.array(outcome.ravel()),
            pa.array(np.repeat(to_units(orders.weights[chosen]), len(i))),
            pa.array(np.full(len(game), length, np.int32))], schema=SCHEMA))
    return pa.concat_tables(parts) if parts else SCHEMA.empty_table()


def _sort(table: pa.Table) -> pa.Table:
    order = pc.sort_indices(table, sort_keys=[(k, "ascending", "at_start") for k in SORT_KEY])
    return table.take(order)


def _partial(table: pa.Table, kind: str, n: int) -> pa.Table:
    chosen = log_kind(kind)
    return _sort(_comparisons(table, chosen) if chosen.comparisons is not None else _ballots(table, chosen))


def _stamps(table: pa.Table) -> np.ndarray:
    """Timestamps as the merge key: rows without one first."""
    return table.column("timestamp").fill_null(np.iinfo(np.int64).min).to_numpy()


def _merge(x: pa.Table, y: pa.Table) -> pa.Table:
    """Two sorted runs interleaved by timestamp (x's rows first among equal timestamps; see `_finalize`)."""
    tx, ty = _stamps(x), _stamps(y)
    order = np.empty(len(tx) + len(ty), np.int64)
    order[np.arange(len(tx)) + np.searchsorted(ty, tx, side="left")] = np.arange(len(tx))
    order[np.arange(len(ty)) + np.searchsorted(tx, ty, side="right")] = np.arange(len(tx), len(tx) + len(ty))
    return pa.concat_tables([x, y]).combine_chunks().take(order)


def _same_group_as_previous(ident: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Per row after the first: the same battle or game id as the row before (two missing ids are the same)."""
    m = len(ident)
    same = pc.equal(ident.slice(1), ident.slice(0, m - 1)).fill_null(False).to_numpy()
    return same | (pc.is_null(ident.slice(1)).to_numpy() & pc.is_null(ident.slice(0, m - 1)).to_numpy())


def _restore_key_order(table: pa.Table) -> pa.Table:
    """Sort by the whole key inside the blocks of equal timestamp whose rows are not one unit's in order."""
    if table.num_rows < 2:
        return table
    stamp, sub = _stamps(table), table.column("sub").to_numpy()
    tied = stamp[1:] == stamp[:-1]
    out_of_order = tied & (~_same_group_as_previous(table.column("group_id")) | (sub[1:] <= sub[:-1]))
    if not out_of_order.any():
        return table
    block = np.cumsum(np.r_[True, ~tied]) - 1
    rows = np.flatnonzero(np.isin(block, block[1:][out_of_order]))
    mixed = table.take(pa.array(rows)).append_column("block", pa.array(block[rows]))
    order = np.arange(table.num_rows)
    order[rows] = rows[pc.sort_indices(mixed, sort_keys=[("block", "ascending")] + [
        (k, "ascending", "at_start") for k in SORT_KEY[1:]]).to_numpy()]
    return table.take(pa.array(order))


def _finalize(table: pa.Table, present: np.ndarray, name_orders: Mapping[str, np.ndarray]) -> ComparisonSequence:
    table = _restore_key_order(table)
    a, b = np.searchsorted(present, table.column("a").to_numpy()), np.searchsorted(present, table.column("b").to_numpy())
    outcome = table.column("outcome").to_numpy()
    players = table.column("players").to_numpy().astype(np.int64)
    stamp = _stamps(table)
    same = np.zeros(len(a), bool)
    if len(a) > 1:
        same[1:] = (stamp[1:] == stamp[:-1]) & _same_group_as_previous(table.column("group_id")) & (players[1:] > 2)
    score = np.select([outcome == A_WINS, outcome == B_WINS], [1.0, 0.0], 0.5)
    return ComparisonSequence(present, a.astype(np.int64), b.astype(np.int64), score,
                              table.column("units").to_numpy() / UNIT, players, np.cumsum(~same) - 1)


SEQUENCE = register_extra(Extra(
    "sequence", {kind: (column, "timestamp") for kind, column in ID_COLUMNS.items()}, _partial, _merge, _finalize,
    table_arrays, arrays_table,
))
