"""Split x method evaluation, fanned out on Dask [VasE] section 4.3.

Each split is one task (`evaluate_split`), on a worker: its training statistics are computed once
in memory (the same partial/merge/finalize code as the store reduction, `pipeline.stats.partials`,
and the extras a method declares through `pipeline.stats.extras`; sparse pair counts beyond
`DENSE_MAX_AGENTS` agents), then every method rates them and is scored on the test units
(`pipeline.backtest.kendall`, and `pipeline.backtest.predictive` when the ratings give win
probabilities). A random split holds out about a tenth of the log, so its integer counts (pairs,
positions, per-game pairs) are the whole log's, counted once per backtest, minus the held-out
units': the same integers at a tenth of the cost. A method with a `seed` parameter that the spec
leaves unset gets the split x method task's own seed, spawned from the split's seed and a
checksum of the spec's canonical spelling (`task_label`), so every number depends only on
(seed, split, spec): results are identical whatever the number of workers, the order or the
spelling of the specs. Methods run on the worker's threads: the registry gets no client here.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from pipeline.backtest.kendall import game_distances
from pipeline.backtest.predictive import predictive_metrics
from pipeline.backtest.splits import Split
from pipeline.backtest.units import UnitLog
from pipeline.logs import log_kind
from pipeline.methods import Ratings, Spec, needed_statistics, run
from pipeline.methods.ratings import spec_text
from pipeline.methods.registry import unique_specs
from pipeline.progress import stage
from pipeline.stats.counts import CORE_STATISTICS, Statistics
from pipeline.stats.extras import EXTRAS, extra_partials
from pipeline.stats.partials import DENSE_MAX_AGENTS, Partial, comparison_partial, finalize, weak_order_partial
from pipeline.weights import to_units

RESULT_SCHEMA = pa.schema([
    ("split", pa.int32()), ("label", pa.string()), ("method", pa.string()), ("seed", pa.int64()),
    ("train_units", pa.int64()), ("test_units", pa.int64()), ("rated_agents", pa.int64()),
    ("test_pairs", pa.int64()), ("unseen_pairs", pa.int64()),
    ("kendall", pa.float64()), ("kendall_normalised", pa.float64()),
    ("log_loss", pa.float64()), ("brier", pa.float64()), ("auc", pa.float64()),
    ("error", pa.string()),  # why the method did not rate this split (its metrics are then null), else null
])


def task_label(spec: Spec) -> str:
    """How a spec appears in a backtest's results: its canonical spelling, without a `seed` the spec
    leaves unset (each split x method task then draws its own, `task_seed`)."""
    params = spec.effective_params
    if "seed" in params and "seed" not in spec.params:
        del params["seed"]
    return spec_text(spec.name, params)


def task_seed(split: Split, spec: Spec) -> int:
    """The seed of one split x method task: independent of the other specs, their spelling and the workers."""
    key = zlib.crc32(task_label(spec).encode())
    state = np.random.SeedSequence(split.seed, spawn_key=(key,)).generate_state(1, np.uint64)
    return int(state[0] >> np.uint64(1))


def subtractable(kind: str, statistics: frozenset[str]) -> frozenset[str]:
    """The `statistics` that a training set can count as the whole log's counts minus the held-out
    units': integer counts (the pair counts of comparisons, from which their positions and histogram
    follow; the pair and position counts of weak orders) and the extras with `Extra.subtract`."""
    core = CORE_STATISTICS if log_kind(kind).comparisons is not None else frozenset({"pairwise", "positions"})
    return frozenset(s for s in statistics if s in core or (s in EXTRAS and EXTRAS[s].subtract is not None))


def units_partial(log: UnitLog, units: np.ndarray | None, statistics: frozenset[str]) -> Partial:
    """The partial of the named statistics over the given units (None: every unit of the log)."""
    dense = log.n <= DENSE_MAX_AGENTS
    kind = log_kind(log.kind)
    core = bool(statistics & CORE_STATISTICS)
    needs_rows = (kind.comparisons is not None and core) or bool(statistics & EXTRAS.keys())
    rows = (log.table if units is None else log.rows_of(units)) if needs_rows else None
    orders = log.orders if units is None else log.orders.select(units)
    if kind.comparisons is not None and core:  # counted as pairs, as the store reduction does
        partial = comparison_partial(kind.comparisons(rows), log.n, dense)
    elif core:
        partial = weak_order_partial(orders, log.n, statistics, dense)
    else:
        partial = Partial(log.n, np.bincount(orders.agents, minlength=log.n).astype(np.int64))
    partial.extra = extra_partials(rows, log.kind, log.n, statistics)
    return partial


def log_counts(log: UnitLog, statistics: frozenset[str]) -> Partial | None:
    """The whole log's partial of the statistics that training sets count by difference
    (`subtractable`), or None where none can: no such statistic, or a unit of weight 0 (a position
    group of such units only would be lost, see `PositionCounter.__sub__`)."""
    chosen = subtractable(log.kind, statistics)
    if not chosen or not np.all(to_units(log.orders.weights) > 0):
        return None
    return units_partial(log, None, chosen)


def counts_by_difference(log: UnitLog, split: Split) -> bool:
    """Whether the split's training counts are cheaper as the whole log's minus the held-out units'."""
    return 2 * len(split.train) > log.units


def training_statistics(log: UnitLog, split: Split, statistics: frozenset[str], whole: Partial | None = None) -> Statistics:
    """The named statistics of the split's training units.

    Given the whole log's counts (`log_counts`) and a split that holds out fewer units than it
    trains on (a random split holds out about a tenth), the subtractable counts are the whole
    log's minus the held-out units': the same integers as counting the training units (every
    count is exact, `pipeline.stats.partials`), so the same statistics, for the cost of counting
    the held-out units. The others (the `sequence` of online Elo) are computed from the training rows.
    """
    by_difference = subtractable(log.kind, statistics) if whole is not None and counts_by_difference(log, split) else frozenset()
    if not by_difference:
        return finalize(log.kind, units_partial(log, split.train, statistics), statistics, log.name_orders)
    held_out = np.setdiff1d(np.arange(log.units), split.train, assume_unique=True)
    partial = whole - units_partial(log, held_out, by_difference)
    if statistics - by_difference:
        direct = units_partial(log, split.train, statistics - by_difference)
        partial.histogram, partial.extra = direct.histogram, partial.extra | direct.extra
    return finalize(log.kind, partial, statistics, log.name_orders)


def rate_split(stats: Statistics, spec: Spec, seed: int) -> Ratings:
    if "seed" in spec.method.parameters and "seed" not in spec.params:
        spec = spec.with_params(seed=seed)
    return run(spec, stats)


def score_split(log: UnitLog, split: Split, ratings: Ratings, unseen: str = "tie") -> dict[str, object]:
    """Kendall-tau distance per test unit (weighted mean over units) and, for logistic ratings, predictive metrics."""
    test = log.orders.select(split.test)
    rows = ratings.positions(test.agents)
    predicted = np.where(rows >= 0, ratings.rank[np.maximum(rows, 0)].astype(np.float64), np.nan)
    games = game_distances(test, predicted, unseen)
    w = test.weights
    normalised = np.divide(games.distance, games.pairs, out=np.zeros_like(games.distance), where=games.pairs > 0)
    result = {"train_units": len(split.train), "test_units": len(split.test), "rated_agents": len(ratings.agents),
              "test_pairs": int(games.pairs.sum()), "unseen_pairs": int(games.unseen.sum()),
              "kendall": float(np.average(games.distance, weights=w)), "kendall_normalised": float(np.average(normalised, weights=w)),
              "log_loss": None, "brier": None, "auc": None}
    if ratings.info.get("logistic_scale") is not None:
        result |= predictive_metrics(ratings, test, rows, unseen)
    return result


def evaluate(log: UnitLog, split: Split, stats: Statistics, spec: Spec, unseen: str = "tie") -> dict[str, object]:
    """One split x method task: rate the training statistics and score the test units."""
    """A method that cannot rate the split (any error) gives a row with its one-line reason and null
    metrics: the backtest goes on, and the summary pairs methods on the splits both rated."""
    seed = task_seed(split, spec)
    row = {"split": split.index, "label": split.label, "method": task_label(spec), "seed": seed}
    try:
        ratings = rate_split(stats, spec, seed)
    except Exception as error:  # noqa: BLE001 (one method on one split never stops the backtest)
        reason = next(iter(str(error).splitlines()), type(error).__name__)
        return row | {"train_units": len(split.train), "test_units": len(split.test), "error": reason}
    return row | score_split(log, split, ratings, unseen) | {"error": None}


def results_table(rows: list[dict[str, object]], specs: Sequence[Spec]) -> pa.Table:
    """Rows sorted by split, then by the order of `specs`."""
    position = {task_label(s): i for i, s in enumerate(specs)}
    rows = sorted(rows, key=lambda r: (r["split"], position[r["method"]]))
    return pa.Table.from_pylist(rows, schema=RESULT_SCHEMA)


def evaluate_split(log: UnitLog, split: Split, specs: Sequence[Spec], statistics: frozenset[str],
                   whole: Partial | None = None, unseen: str = "tie") -> list[dict[str, object]]:
    """The training statistics of one split, then one task per method on them (`evaluate`)."""
    stats = training_statistics(log, split, statistics, whole)
    return [evaluate(log, split, stats, spec, unseen) for spec in specs]


def run_backtest(log: UnitLog, splits: Sequence[Split], specs: Sequence[str | Spec], *, client=None, unseen: str = "tie") -> pa.Table:
    """Per split x method results; on `client` (a distributed Client) when given, else in this process.

    A split is one Dask task: its statistics (tens of MB at Diplomacy scale) never leave the
    worker that counted them, and a worker holds one split's at a time. The log and the whole
    log's counts are sent to each worker once.
    """
    specs = list(unique_specs(specs, key=task_label)[0])
    statistics = needed_statistics(specs)
    whole_counts = any(counts_by_difference(log, split) for split in splits)
    with stage("splits", len(splits)) as advance:
        if client is None:
            whole = log_counts(log, statistics) if whole_counts else None
            rows = []
            for split in splits:
                rows += evaluate_split(log, split, specs, statistics, whole, unseen)
                advance()
            return results_table(rows, specs)
        from distributed import as_completed

        shared = client.scatter(log, broadcast=True, hash=False)
        whole = client.submit(log_counts, shared, statistics, pure=False) if whole_counts else None
        placed = client.scatter(list(splits), hash=False)  # each split's index arrays are sent once
        futures = [client.submit(evaluate_split, shared, where, specs, statistics, whole, unseen, pure=False) for where in placed]
        rows = []
        for future in as_completed(futures):
            rows += future.result()
            advance()
        del futures, whole
        return results_table(rows, specs)
