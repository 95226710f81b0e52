"""Log kinds: one `LogKind` per kind says everything the pipeline needs to know about it.

A kind is declared once, in its own module, with `register_kind`, the way methods are declared
with `@method` (`pipeline.methods.registry`) and extra statistics with `register_extra`
(`pipeline.stats.extras`). Ingest reads it to normalise and encode files, the store to lay them
out, the reductions to read the right columns and turn rows into weak orders or comparisons, the
backtests to split units, and the boards to rate kinds that are not stored. No other module
branches on a kind's name.

The stored kinds live in `pipeline/logs/` (`battles`, `games`, `scores`, `ballots`, `reviews`);
`nfg` (normal-form games, rated directly and never stored) lives with the games, in
`pipeline/games/nfg.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from pipeline.arrays import unit_codes
from pipeline.logs.orders import Comparisons, WeakOrders
from pipeline.logs.records import TABULAR_SUFFIXES, RawRecords
from pipeline.logs.triage import ReadResult

DICTIONARIES = ("agents", "judges", "prompts")
TIMESTAMP = "timestamp"  # the time column of every kind that has one: rows are partitioned by its UTC date
ROWS_PER_TASK = 2_000_000


@dataclass(frozen=True)
class LogKind:
    """One log kind. Stored kinds give `read`, `schema`, the store encoding and one row builder
    (`weak_orders` or `comparisons`); kinds rated directly give `load` instead."""

    name: str
    holds: str  # what a file of this kind holds, for help texts
    unit: str  # the independent record that statistics count and backtests split: "a battle", "a game", ...
    # Reading: raw records of one file -> canonical columns (names, not ids) and the quarantine.
    read: Callable[[RawRecords, str], ReadResult] | None = None
    schema: pa.Schema | None = None
    suffixes: tuple[str, ...] = TABULAR_SUFFIXES  # file suffixes of this kind (folders are scanned for them)
    formats: Mapping[str, Callable[[Path], RawRecords]] = field(default_factory=dict)  # suffix -> reader of a non-tabular format
    # Storing: names become ids of a store dictionary, labels become int8 codes.
    ids: Mapping[str, str] = field(default_factory=dict)  # column -> dictionary (list columns: every element)
    codes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # column -> its labels; code = position
    canonical: Callable[[pa.Table], pa.Table] | None = None  # run after encoding, e.g. to order list members by id
    record_id: tuple[str, ...] = ()  # columns naming a record (a unit) across files: one seen before is a duplicate
    # Reducing: the stored columns the core statistics read, and what the rows mean.
    columns: tuple[str, ...] = ()
    weak_orders: Callable[[pa.Table], WeakOrders] | None = None  # one ballot per unit, in unit order
    comparisons: Callable[[pa.Table], Comparisons] | None = None  # one comparison per row, counted as pairs
    unit_column: str | None = None  # the column naming a unit (within one source file); None: a row is a unit
    independent_rows: bool = False  # rows reduce apart: big partition files may be split by row group
    rows_per_task: int = ROWS_PER_TASK  # rows per unit of work of a reduction
    # Per-category boards (`vase rate --by category`): the stored text column naming a row's
    # category, the same for every row of a unit; None: the kind's logs have none.
    category: str | None = None
    # Rated directly (not stored): a file -> (its `Statistics`, agent names in id order), and the
    # statistics that gives (methods that need others cannot rate the kind).
    load: Callable[[Path], tuple[Any, list[str]]] | None = None
    statistics: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.load is not None:
            if self.read is not None:
                raise ValueError(f"log kind {self.name!r}: either stored (read) or rated directly (load), not both")
            return
        if self.read is None or self.schema is None:
            raise ValueError(f"log kind {self.name!r} needs a reader and its schema (or `load` for a kind rated directly)")
        if (self.weak_orders is None) == (self.comparisons is None):
            raise ValueError(f"log kind {self.name!r} needs exactly one of weak_orders and comparisons")
        known = set(self.schema.names)
        declared = [*self.columns, *self.ids, *self.codes, *self.record_id] + [c for c in (self.unit_column, self.category) if c]
        if unknown := sorted(set(declared) - known):
            raise ValueError(f"log kind {self.name!r}: columns {unknown} are not in its schema")
        if wrong := sorted(set(self.ids.values()) - set(DICTIONARIES)):
            raise ValueError(f"log kind {self.name!r}: unknown dictionaries {wrong}; expected some of {', '.join(DICTIONARIES)}")

    @property
    def stored(self) -> bool:
        return self.read is not None

    @property
    def dated(self) -> bool:
        """Whether rows carry a `timestamp` (partitions by date, temporal backtests)."""
        return self.schema is not None and TIMESTAMP in self.schema.names

    def unit_orders(self, table: pa.Table) -> tuple[np.ndarray, WeakOrders]:
        """The unit of each row (dense indices) and one weak order per unit, in unit order: what a backtest splits."""
        if self.comparisons is not None:
            return np.arange(table.num_rows, dtype=np.int64), self.comparisons(table).weak_orders()
        if self.unit_column is None:
            row_unit = np.arange(table.num_rows, dtype=np.int64)
        else:  # `weak_orders` lists ballots in code order, so units are numbered in code order too
            row_unit = np.unique(unit_codes(table, self.unit_column), return_inverse=True)[1].ravel().astype(np.int64)
        orders = self.weak_orders(table)
        units = int(row_unit.max(initial=-1)) + 1
        if len(orders) != units:
            raise ValueError(f"{self.name} logs have {units} units but {len(orders)} weak orders "
                             f"(some {self.unit} ranks no one): they cannot be split by unit")
        return row_unit, orders


KINDS: dict[str, LogKind] = {}


def register_kind(kind: LogKind) -> LogKind:
    if kind.name in KINDS:
        raise ValueError(f"log kind {kind.name!r} registered twice")
    KINDS[kind.name] = kind
    return kind


def log_kind(name: str) -> LogKind:
    if name not in KINDS:
        raise ValueError(f"unknown log kind {name!r}; expected one of {', '.join(KINDS)}")
    return KINDS[name]


def stored_kinds() -> list[str]:
    return [name for name, kind in KINDS.items() if kind.stored]
