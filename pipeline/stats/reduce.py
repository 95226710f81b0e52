"""Dask reductions from the store to sufficient statistics (DESIGN.md, "Sufficient statistics").

Each unit of work reads one partition file (or a slice of row groups of a big one, for kinds whose
rows are independent, or a batch of small files), reduces it to a `Partial`, and the partials are
added in a binary tree. Partials add exactly (integer units), so the result is the same bit for
bit whatever the partitioning and the number of workers. Battles reduce straight to pair counts;
games (each game a weak order over its players), score tables (each task a voter), ballots and
council reviews (each review that does not abstain a ballot) go through `WeakOrders`.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import dask
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from dask.delayed import Delayed

from pipeline.stats.counts import Statistics
from pipeline.stats.extras import EXTRAS
from pipeline.stats.partials import DENSE_MAX_AGENTS, Partial, WeakOrders, battle_partial, finalize, weak_order_partial
from pipeline.store import Store

STATISTICS = frozenset({"pairwise", "positions", "histogram"})
TARGET_ROWS = 2_000_000  # rows per unit of work
_ROW_KINDS = ("battles", "ballots")  # rows are independent: big files may be split by row group
_COLUMNS = {
    "battles": ["model_a", "model_b", "winner", "weight"],
    "games": ["game_id", "player", "score", "place", "weight"],
    "scores": ["task", "agent", "score", "higher_is_better", "task_weight"],
    "ballots": ["agents", "levels", "weight"],
    "reviews": ["reviewer", "order"],
}


@dataclass(frozen=True)
class Unit:
    """A piece of the store reduced by one task: files, or row groups of a single file."""

    paths: tuple[str, ...]
    row_groups: tuple[int, ...] | None = None


def plan_units(store: Store, kind: str, target_rows: int = TARGET_ROWS) -> list[Unit]:
    units: list[Unit] = []
    batch: list[str] = []
    rows = 0
    for part in store.partitions(kind):
        path = str(store.path(part).resolve())
        if part.rows > target_rows and kind in _ROW_KINDS:
            groups = pq.ParquetFile(path).metadata.num_row_groups
            step = max(1, groups * target_rows // part.rows)
            units += [Unit((path,), tuple(range(g, min(g + step, groups)))) for g in range(0, groups, step)]
            continue
        batch.append(path)
        rows += part.rows
        if rows >= target_rows:
            units.append(Unit(tuple(batch)))
            batch, rows = [], 0
    if batch:
        units.append(Unit(tuple(batch)))
    return units


def _read(unit: Unit, kind: str, want: frozenset[str]) -> pa.Table:
    columns = list(dict.fromkeys(_COLUMNS[kind] + [c for name in sorted(want & EXTRAS.keys()) for c in EXTRAS[name].columns[kind]]))
    if unit.row_groups is not None:
        return pq.ParquetFile(unit.paths[0]).read_row_groups(list(unit.row_groups), columns=columns)
    return pa.concat_tables([pq.read_table(p, columns=columns) for p in unit.paths])


def _codes(column: pa.ChunkedArray) -> np.ndarray:
    return pc.dictionary_encode(column.combine_chunks()).indices.to_numpy()


def _numpy(table: pa.Table, name: str, fill: float | None = None) -> np.ndarray:
    column = table.column(name)
    if fill is not None:
        column = pc.fill_null(column, fill)
    return column.to_numpy()


def weak_orders(table: pa.Table, kind: str) -> WeakOrders:
    """The ballots of one unit of games, score tables or ballots."""
    if kind == "games":
        place = table.column("place")
        level = np.where(pc.is_null(place).to_numpy(zero_copy_only=False), -_numpy(table, "score", 0.0), _numpy(table, "place", 0.0))
        return WeakOrders.from_rows(_codes(table.column("game_id")), _numpy(table, "player"), level, _numpy(table, "weight"))
    if kind == "scores":
        score = _numpy(table, "score")
        level = np.where(table.column("higher_is_better").to_numpy(zero_copy_only=False).astype(bool), -score, score)
        return WeakOrders.from_rows(_codes(table.column("task")), _numpy(table, "agent"), level, _numpy(table, "task_weight"))
    if kind == "ballots":
        agents = table.column("agents").combine_chunks()
        offsets = agents.offsets.to_numpy().astype(np.int64)
        levels = table.column("levels").combine_chunks().flatten().to_numpy().astype(np.float64)
        return WeakOrders(offsets, agents.flatten().to_numpy().astype(np.int64), levels, _numpy(table, "weight"))
    if kind == "reviews":
        return review_orders(table)
    raise ValueError(f"{kind} logs do not reduce through weak orders")


def review_orders(table: pa.Table) -> WeakOrders:
    """Each review that does not abstain: a strict order over the models it ranks, weight 1.

    Self-votes are excluded, as [Council] does by default: the reviewer's own model is left out of
    its ranking, so it gains no pairwise wins and no positions from its own review (the others keep
    their order). A review left with no model is no ballot. Abstentions have an empty `order`.
    """
    order = table.column("order").combine_chunks()
    lengths = pc.list_value_length(order).fill_null(0).to_numpy().astype(np.int64)
    ballot = np.repeat(np.arange(len(order)), lengths)
    agent = order.flatten().to_numpy().astype(np.int64)
    position = np.arange(len(agent)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    keep = agent != _numpy(table, "reviewer").astype(np.int64)[ballot]
    return WeakOrders.from_rows(ballot[keep], agent[keep], position[keep].astype(np.float64), np.ones(int(keep.sum())))


def reduce_unit(unit: Unit, kind: str, n: int, want: frozenset[str], dense: bool) -> Partial:
    table = _read(unit, kind, want)
    if kind == "battles":
        partial = battle_partial(
            _numpy(table, "model_a").astype(np.int64), _numpy(table, "model_b").astype(np.int64),
            _numpy(table, "winner"), _numpy(table, "weight"), n, dense,
        )
    else:
        partial = weak_order_partial(weak_orders(table, kind), n, want, dense)
    partial.extra = {name: EXTRAS[name].partial(table, kind, n) for name in sorted(want & EXTRAS.keys())}
    return partial


def tree_sum(items: list[Delayed]) -> Delayed:
    while len(items) > 1:
        items = [dask.delayed(operator.add)(*items[i: i + 2]) if i + 1 < len(items) else items[i] for i in range(0, len(items), 2)]
    return items[0]


def reduce_store(store: Store, kind: str, want: set[str] | frozenset[str] = STATISTICS, *, client=None,
                 dense: bool | None = None, target_rows: int = TARGET_ROWS) -> Statistics:
    """Sufficient statistics of one log kind, computed on `client` (a distributed Client) or locally."""
    want = frozenset(want)
    if unknown := want - STATISTICS - EXTRAS.keys():
        raise ValueError(f"unknown statistics {sorted(unknown)}; expected some of {sorted(STATISTICS | EXTRAS.keys())}")
    if wrong := sorted(name for name in want & EXTRAS.keys() if kind not in EXTRAS[name].kinds):
        raise ValueError(f"statistics {wrong} cannot be computed from {kind} logs")
    units = plan_units(store, kind, target_rows)
    if not units:
        raise ValueError(f"the store at {store.root} holds no {kind}")
    n = len(store.dictionary("agents"))
    dense = n <= DENSE_MAX_AGENTS if dense is None else dense
    partials = [dask.delayed(reduce_unit)(u, kind, n, want, dense) for u in units]
    total = tree_sum(partials)
    partial = client.compute(total).result() if client is not None else total.compute(scheduler="threads")
    return finalize(kind, partial, want, store)
