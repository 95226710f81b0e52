"""The categories of a store's logs, with their row counts: what `vase rate --by category` rates.

A kind names its category column in its `LogKind` (`category`); rows without one (null: the
column absent, empty or blank in the file) are counted under None. Counts are integers summed
per unit of work, so they do not depend on the partitioning or the workers.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter

import dask.threaded  # passed as the scheduler: its name, "threads", would make dask import distributed (~1 s)
import pyarrow.compute as pc

from pipeline.logs import log_kind
from pipeline.stats.reduce import Unit, plan_units, tree_sum
from pipeline.store import Store
from pipeline.store.location import parquet_file


def unit_category_counts(unit: Unit, column: str) -> Counter:
    counts: Counter = Counter()
    for path in unit.paths:
        file = parquet_file(path)
        if column not in file.schema_arrow.names:  # written before its kind had a category column
            counts[None] += file.metadata.num_rows
            continue
        groups = list(unit.row_groups) if unit.row_groups is not None else list(range(file.metadata.num_row_groups))
        values = file.read_row_groups(groups, columns=[column]).column(column)
        for entry in pc.value_counts(values).to_pylist():
            counts[entry["values"]] += entry["counts"]
    return counts


def batch_category_counts(units: list[Unit], column: str) -> Counter:
    return sum((unit_category_counts(unit, column) for unit in units), Counter())


def category_counts(store: Store, kind: str, *, client=None, as_of: dt.date | None = None) -> dict[str | None, int]:
    """Rows per category of the store's `kind` logs, categories in code-point order, None (rows
    without a category) last; computed on `client` (a distributed Client) or on local threads."""
    column = log_kind(kind).category
    if column is None:
        raise ValueError(f"{kind} logs have no category column")
    units = plan_units(store, kind, as_of=as_of)
    if not units:
        return {}
    total = tree_sum([dask.delayed(batch_category_counts)(units[i:i + 64], column) for i in range(0, len(units), 64)])
    counts = client.compute(total).result() if client is not None else total.compute(scheduler=dask.threaded.get)
    return dict(sorted(counts.items(), key=lambda item: (item[0] is None, item[0] or "")))
