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
import os
from dataclasses import dataclass
from pathlib import Path

import dask
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from dask.delayed import Delayed

from pipeline.stats import cache
from pipeline.stats.counts import Statistics
from pipeline.stats.extras import EXTRAS
from pipeline.stats.partials import DENSE_MAX_AGENTS, Partial, WeakOrders, battle_partial, finalize, weak_order_partial
from pipeline.store import Store

STATISTICS = frozenset({"pairwise", "positions", "histogram", "agent_keys"})  # agent_keys: always filled
TARGET_ROWS = 2_000_000  # rows per unit of work
_TARGET_ROWS_OF = {"ballots": 250_000}  # a ballot row holds a whole ranking
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
    """A piece of one source file's rows reduced by one task: some of its partition files, or
    row groups of one big partition. Units never mix sources, so a newly ingested file only
    adds units and the partials of the others can be reused (see `pipeline.stats.cache`)."""

    source: str  # the sha256 of the ingested file
    paths: tuple[str, ...]
    row_groups: tuple[int, ...] | None = None


def plan_units(store: Store, kind: str, target_rows: int = TARGET_ROWS) -> list[Unit]:
    units: list[Unit] = []
    for sha, report in sorted(store.manifest.files.items()):
        if report.kind != kind:
            continue
        batch: list[str] = []
        rows = 0
        for part in sorted(report.partitions, key=lambda p: p.path):
            path = str(store.path(part).resolve())
            if part.rows > target_rows and kind in _ROW_KINDS:
                groups = pq.ParquetFile(path).metadata.num_row_groups
                step = max(1, groups * target_rows // part.rows)
                units += [Unit(sha, (path,), tuple(range(g, min(g + step, groups)))) for g in range(0, groups, step)]
                continue
            batch.append(path)
            rows += part.rows
            if rows >= target_rows:
                units.append(Unit(sha, tuple(batch)))
                batch, rows = [], 0
        if batch:
            units.append(Unit(sha, tuple(batch)))
    return units


SOURCE = "__file__"  # position of the row's file in its unit: a game or a task belongs to one file


def _read(unit: Unit, kind: str, want: frozenset[str]) -> pa.Table:
    columns = list(dict.fromkeys(_COLUMNS[kind] + [c for name in sorted(want & EXTRAS.keys()) for c in EXTRAS[name].columns[kind]]))
    if unit.row_groups is not None:
        table = pq.ParquetFile(unit.paths[0]).read_row_groups(list(unit.row_groups), columns=columns)
        return table.append_column(SOURCE, pa.array(np.zeros(table.num_rows, np.int32)))
    tables = [pq.read_table(p, columns=columns) for p in unit.paths]
    tables = [t.append_column(SOURCE, pa.array(np.full(t.num_rows, i, np.int32))) for i, t in enumerate(tables)]
    return pa.concat_tables(tables)


def _codes(table: pa.Table, name: str) -> np.ndarray:
    """Ballot codes: the same game id or task name in two source files are two ballots."""
    codes = pc.dictionary_encode(table.column(name).combine_chunks()).indices.to_numpy().astype(np.int64)
    if SOURCE not in table.column_names:  # a table read from one file
        return codes
    return table.column(SOURCE).to_numpy().astype(np.int64) * (codes.max(initial=0) + 1) + codes


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
        return WeakOrders.from_rows(_codes(table, "game_id"), _numpy(table, "player"), level, _numpy(table, "weight"))
    if kind == "scores":
        score = _numpy(table, "score")
        level = np.where(table.column("higher_is_better").to_numpy(zero_copy_only=False).astype(bool), -score, score)
        return WeakOrders.from_rows(_codes(table, "task"), _numpy(table, "agent"), level, _numpy(table, "task_weight"))
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


def cached_reduce_unit(root: str, unit: Unit, kind: str, n: int, want: frozenset[str], dense: bool) -> Partial:
    """`reduce_unit`, through the store's cache of partials."""
    path = cache.cache_path(Path(root), kind, want, dense, unit)
    partial = cache.load(path, n)
    if partial is None:
        partial = reduce_unit(unit, kind, n, want, dense)
        cache.store(path, partial)
    return partial


def reduce_batch(units: list[Unit], kind: str, n: int, want: frozenset[str], dense: bool, root: str | None) -> Partial:
    """The sum of several units' partials, added where they are computed: dense partials are
    n*n arrays, and shipping one per unit between worker processes cost more than computing it."""
    total = None
    for unit in units:
        partial = reduce_unit(unit, kind, n, want, dense) if root is None else cached_reduce_unit(root, unit, kind, n, want, dense)
        total = partial if total is None else total + partial
    return total


def tree_sum(items: list[Delayed]) -> Delayed:
    while len(items) > 1:
        items = [dask.delayed(operator.add)(*items[i: i + 2]) if i + 1 < len(items) else items[i] for i in range(0, len(items), 2)]
    return items[0]


def reduce_store(store: Store, kind: str, want: set[str] | frozenset[str] = STATISTICS, *, client=None,
                 dense: bool | None = None, target_rows: int = TARGET_ROWS, use_cache: bool = False) -> Statistics:
    """Sufficient statistics of one log kind, computed on `client` (a distributed Client) or locally.

    With `use_cache`, per-unit partials are kept in `<store>/cache/` and reused by later calls,
    so that only newly ingested files are read (the workers must be able to write to the store).
    """
    want = frozenset(want)
    if unknown := want - STATISTICS - EXTRAS.keys():
        raise ValueError(f"unknown statistics {sorted(unknown)}; expected some of {sorted(STATISTICS | EXTRAS.keys())}")
    if wrong := sorted(name for name in want & EXTRAS.keys() if kind not in EXTRAS[name].kinds):
        raise ValueError(f"statistics {wrong} cannot be computed from {kind} logs")
    units = plan_units(store, kind, min(target_rows, _TARGET_ROWS_OF.get(kind, target_rows)))
    if not units:
        raise ValueError(f"the store at {store.root} holds no {kind}")
    n = len(store.dictionary("agents"))
    dense = n <= DENSE_MAX_AGENTS if dense is None else dense
    root = str(store.root.resolve()) if use_cache else None
    slots = sum(client.nthreads().values()) if client is not None else (os.cpu_count() or 1)
    batches = [list(b) for b in np.array_split(np.array(units, dtype=object), min(len(units), 2 * slots))]
    total = tree_sum([dask.delayed(reduce_batch)(batch, kind, n, want, dense, root) for batch in batches])
    partial = client.compute(total).result() if client is not None else total.compute(scheduler="threads")
    return finalize(kind, partial, want, store)
