"""A store's log held in memory for backtesting, indexed by unit: each unit a weak order, plus the rows.

A backtest splits *units*, the independent records of the log's kind (`LogKind.unit`): the games
of a games log (each a weak order over its players, [VasE] section 4.3), the battles of a battles
log (each a weak order over two models: the winner ahead, or both tied), the tasks of a score
table, the ballots of a ballots log. `orders` has one weak order per unit, in unit order
(`LogKind.unit_orders`); `row_unit` maps each row of `table` to its unit, so that a split's
training rows can be handed to extra statistics (`pipeline.stats.extras`) in store order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import SOURCE
from pipeline.logs import log_kind
from pipeline.logs.kinds import DICTIONARIES, TIMESTAMP
from pipeline.logs.orders import WeakOrders
from pipeline.stats.extras import extra_columns
from pipeline.store import IngestReport, Store
from pipeline.store.files import reading_store_file
from pipeline.store.location import read_schema, read_table

NO_TIME = np.iinfo(np.int64).min


@dataclass(frozen=True, eq=False)
class UnitLog:
    """One log kind of a store, in memory, indexed by unit."""

    kind: str
    n: int  # size of the store's id space
    name_orders: dict[str, np.ndarray]  # per dictionary, each id's position in name order (`IdMap.name_order`)
    table: pa.Table  # the rows, in store order
    row_unit: np.ndarray  # unit of each row
    orders: WeakOrders  # one weak order per unit
    times: np.ndarray  # per unit: timestamp in microseconds since the epoch, or NO_TIME if unknown
    inputs: tuple[IngestReport, ...] = ()  # the manifest's files of the kind when the log was read, by source

    @property
    def units(self) -> int:
        return len(self.orders)

    def rows_of(self, units: np.ndarray) -> pa.Table:
        """The rows of the given units, in store order."""
        chosen = np.zeros(self.units, bool)
        chosen[units] = True
        return self.table.filter(pa.array(chosen[self.row_unit]))


def _unit_times(table: pa.Table, row_unit: np.ndarray, units: int) -> np.ndarray:
    times = np.full(units, NO_TIME, np.int64)
    if TIMESTAMP not in table.column_names:
        return times
    column = pc.cast(table.column(TIMESTAMP), pa.timestamp("us", tz="UTC")).cast(pa.int64())
    known = ~pc.is_null(column).to_numpy(zero_copy_only=False)
    values = pc.fill_null(column, 0).to_numpy()
    times[row_unit[known]] = values[known]  # the rows of a unit agree on its timestamp (readers check)
    return times


def load_units(store: Store, kind: str, statistics: frozenset[str] = frozenset()) -> UnitLog:
    """Read every partition of `kind` with the columns that the core and the extra `statistics` need."""
    chosen = log_kind(kind)
    if not chosen.stored:
        raise ValueError(f"{kind} files are rated directly, not stored: there is nothing to backtest")
    manifest = store.manifest  # read once: files that an ingest commits meanwhile are neither in the log nor in its inputs
    parts = store.partitions(kind, manifest)
    if not parts:
        raise ValueError(f"the store at {store.url} holds no {kind}")
    unit = [chosen.unit_column] if chosen.unit_column else []
    columns = list(dict.fromkeys([*chosen.columns, *unit, *extra_columns(kind, statistics), TIMESTAMP]))
    tables = []
    for i, part in enumerate(parts):  # a game lies in one partition file: the same id in two files is two games
        path = store.locate(part)
        with reading_store_file(path):
            names = read_schema(path).names
            table = read_table(path, columns=[c for c in columns if c in names])
        tables.append(table.append_column(SOURCE, pa.array(np.full(table.num_rows, i, np.int32))))
    table = pa.concat_tables(tables, promote_options="default").combine_chunks()  # one chunk: a split filters it 50 times
    row_unit, orders = chosen.unit_orders(table)
    agents = store.dictionary("agents")
    inputs = tuple(store.inputs(kind, manifest))
    return UnitLog(kind, len(agents), {space: store.dictionary(space).name_order() for space in DICTIONARIES}, table, row_unit, orders,
                   _unit_times(table, row_unit, len(orders)), inputs)
