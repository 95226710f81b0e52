"""A log held in memory for backtesting: its units (games or battles) as weak orders, plus the rows.

A backtest splits *units*: the games of a games log (each a weak order over its players, [VasE]
section 4.3), the battles of a battles log (each a weak order over two models: the winner ahead,
or both tied), the tasks of a score table or the ballots of a ballots log. `orders` has one weak
order per unit, in unit order; `row_unit` maps each row of `table` to its unit, so that a split's
training rows can be handed to extra statistics (`pipeline.stats.extras`) in store order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.stats.extras import EXTRAS
from pipeline.stats.partials import WeakOrders
from pipeline.stats.reduce import _COLUMNS, SOURCE, _codes, _numpy, weak_orders
from pipeline.store import Store

_UNIT_COLUMN = {"games": "game_id", "scores": "task"}


@dataclass(frozen=True, eq=False)
class UnitLog:
    """One log kind of a store, in memory, indexed by unit."""

    kind: str
    n: int  # size of the store's id space
    table: pa.Table  # the rows, in store order
    row_unit: np.ndarray  # unit of each row
    orders: WeakOrders  # one weak order per unit
    times: np.ndarray  # per unit: timestamp in microseconds since the epoch, or INT64_MIN if unknown

    @property
    def units(self) -> int:
        return len(self.orders.offsets) - 1

    def rows_of(self, units: np.ndarray) -> pa.Table:
        """The rows of the given units, in store order."""
        chosen = np.zeros(self.units, bool)
        chosen[units] = True
        return self.table.filter(pa.array(chosen[self.row_unit]))


NO_TIME = np.iinfo(np.int64).min


def select(orders: WeakOrders, units: np.ndarray) -> WeakOrders:
    """The weak orders of some units (indices into `orders`), in the order given."""
    units = np.asarray(units, dtype=np.int64)
    lengths = np.diff(orders.offsets)[units]
    offsets = np.r_[0, np.cumsum(lengths)].astype(np.int64)
    rows = np.repeat(orders.offsets[units] - offsets[:-1], lengths) + np.arange(offsets[-1])
    return WeakOrders(offsets, orders.agents[rows], orders.levels[rows], orders.weights[units])


def _battle_orders(table: pa.Table) -> tuple[np.ndarray, WeakOrders]:
    """Each battle as a ballot of two: the winner at level 0 and the loser at 1, a tie both at 0."""
    a, b = _numpy(table, "model_a").astype(np.int64), _numpy(table, "model_b").astype(np.int64)
    winner = _numpy(table, "winner")
    unit = np.arange(table.num_rows, dtype=np.int64)
    level = np.column_stack([(winner == 1).astype(float), (winner == 0).astype(float)]).ravel()
    weight = _numpy(table, "weight")
    orders = WeakOrders.from_rows(np.repeat(unit, 2), np.column_stack([a, b]).ravel(), level, np.repeat(weight, 2))
    return unit, orders


def _unit_times(table: pa.Table, row_unit: np.ndarray, units: int) -> np.ndarray:
    times = np.full(units, NO_TIME, np.int64)
    if "timestamp" not in table.column_names:
        return times
    column = pc.cast(table.column("timestamp"), pa.timestamp("us", tz="UTC")).cast(pa.int64())
    known = ~pc.is_null(column).to_numpy(zero_copy_only=False)
    values = pc.fill_null(column, 0).to_numpy()
    times[row_unit[known]] = values[known]  # the rows of a unit agree on its timestamp (readers check)
    return times


def load_log(store: Store, kind: str, want: frozenset[str] = frozenset()) -> UnitLog:
    """Read every partition of `kind` with the columns that the core and the extra statistics in `want` need."""
    if kind not in _COLUMNS:
        raise ValueError(f"unknown log kind {kind!r}")
    parts = store.partitions(kind)
    if not parts:
        raise ValueError(f"the store at {store.root} holds no {kind}")
    extra = [c for name in sorted(want & EXTRAS.keys()) for c in EXTRAS[name].columns[kind]]
    wanted = list(dict.fromkeys(_COLUMNS[kind] + extra + ["timestamp"]))
    tables = []
    for i, part in enumerate(parts):  # a game lies in one partition file: the same id in two files is two games
        path = store.path(part)
        names = pq.read_schema(path).names
        table = pq.read_table(path, columns=[c for c in wanted if c in names])
        tables.append(table.append_column(SOURCE, pa.array(np.full(table.num_rows, i, np.int32))))
    table = pa.concat_tables(tables, promote_options="default")
    if kind == "battles":
        row_unit, orders = _battle_orders(table)
    elif kind == "ballots":
        row_unit, orders = np.arange(table.num_rows, dtype=np.int64), weak_orders(table, kind)
    else:
        codes = _codes(table, _UNIT_COLUMN[kind])
        row_unit = np.unique(codes, return_inverse=True)[1].astype(np.int64)  # dense unit ids, in code order
        orders = weak_orders(table, kind)  # ballot i is the i-th code: `from_rows` sorts by code
    units = len(orders.offsets) - 1
    return UnitLog(kind, len(store.dictionary("agents")), table, row_unit, orders, _unit_times(table, row_unit, units))
