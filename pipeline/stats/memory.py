"""Statistics of an in-memory profile, without a store: for tests, notebooks and small jobs.

`profile(["A>B=C", "C>A"], weights=[2, 1])` parses rankings like the ballots reader does, gives
the agents ids in sorted name order, and reduces them exactly as the store path would.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import polars as pl
import pyarrow as pa

from pipeline.logs.ballots import parse_rankings
from pipeline.logs.records import LINE
from pipeline.stats.counts import Statistics
from pipeline.stats.extras import EXTRAS
from pipeline.stats.partials import DENSE_MAX_AGENTS, WeakOrders, finalize, weak_order_partial
from pipeline.stats.reduce import STATISTICS


def profile(rankings: Sequence[str], weights: Sequence[float] | None = None, *, want: frozenset[str] = STATISTICS,
            dense: bool | None = None, kind: str = "ballots") -> tuple[Statistics, list[str]]:
    """Statistics of weak-order rankings (`a>b=c`), and the agent names in id order."""
    frame = pl.DataFrame({LINE: np.arange(len(rankings), dtype=np.int64), "ranking": list(rankings)})
    parsed = parse_rankings(frame, "ranking").sort(LINE)
    if problems := parsed.filter(pl.col("~problem").is_not_null()).rows(named=True):
        raise ValueError(f"ballot {problems[0][LINE]}: {problems[0]['~problem']}")
    names = sorted({name for row in parsed["~agents"] for name in row})
    index = {name: i for i, name in enumerate(names)}
    lengths = parsed["~agents"].list.len().to_numpy()
    ballot = np.repeat(np.arange(len(rankings)), lengths)
    agent = np.array([index[a] for row in parsed["~agents"] for a in row], dtype=np.int64)
    level = np.concatenate(parsed["~levels"].to_list()).astype(np.float64) if len(agent) else np.zeros(0)
    w = np.ones(len(rankings)) if weights is None else np.asarray(weights, dtype=np.float64)
    w = np.rint(w * 2.0**24) / 2.0**24  # the store's weight grid
    orders = WeakOrders.from_rows(ballot, agent, level, w[ballot])
    dense = len(names) <= DENSE_MAX_AGENTS if dense is None else dense
    want = frozenset(want)
    partial = weak_order_partial(orders, len(names), want, dense)
    if extras := sorted(want & EXTRAS.keys()):
        # Registered statistics read the store's columns: the ballots as the store keeps them.
        offsets = pa.array(orders.offsets.astype(np.int32))
        table = pa.table({"agents": pa.ListArray.from_arrays(offsets, pa.array(orders.agents, pa.int32())),
                          "levels": pa.ListArray.from_arrays(offsets, pa.array(orders.levels.astype(np.int16))),
                          "weight": pa.array(orders.weights)})
        partial.extra = {name: EXTRAS[name].partial(table, "ballots", len(names)) for name in extras}
    stats = finalize(kind, partial, want)
    return dataclasses.replace(stats, agent_keys=np.arange(len(names), dtype=np.int64)), names  # ids in name order
