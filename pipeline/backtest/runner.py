"""A whole backtest of a store: load, split, evaluate on Dask, summarise, publish [VasE] section 4.3.

`vase backtest` calls `backtest`; the `backtest` flow calls its steps (`load`, `make_splits`,
`run_backtest`, `publish_backtest`) as Prefect tasks.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow as pa

from pipeline.backtest.evaluate import run_backtest
from pipeline.backtest.kendall import UNSEEN_POLICIES
from pipeline.backtest.splits import Split, random_splits, temporal_splits
from pipeline.backtest.summary import summarise, write_backtest
from pipeline.backtest.units import UnitLog, load_units
from pipeline.methods import Spec, needed_statistics
from pipeline.report import write_report
from pipeline.report.publish import RunRecord
from pipeline.store import Store

DAY_US = 86_400 * 1_000_000


@dataclass(frozen=True)
class BacktestConfig:
    kind: str
    methods: tuple[str, ...]
    splits: int = 50
    test_size: int = 3000
    seed: int = 0
    scheme: str = "random"  # or "temporal"
    window_days: float = 30.0  # temporal splits only
    reference: str = "elo"
    unseen: str = "tie"

    def __post_init__(self) -> None:
        if self.scheme not in ("random", "temporal"):
            raise ValueError(f"unknown split scheme {self.scheme!r}; expected random or temporal")
        if self.unseen not in UNSEEN_POLICIES:
            raise ValueError(f"unknown unseen-player policy {self.unseen!r}; expected one of {', '.join(UNSEEN_POLICIES)}")
        if not self.methods:
            raise ValueError("a backtest needs at least one method")
        for spec in self.methods:
            Spec.parse(spec)


def load(store: Store, config: BacktestConfig) -> UnitLog:
    return load_units(store, config.kind, needed_statistics(config.methods))


def make_splits(log: UnitLog, config: BacktestConfig) -> list[Split]:
    if config.scheme == "temporal":
        return temporal_splits(log.times, config.splits, round(config.window_days * DAY_US), config.seed)
    return random_splits(log.units, config.splits, config.test_size, config.seed)


def publish_backtest(store: Store, config: BacktestConfig, results: pa.Table, out: str | Path,
                     timings: dict[str, float]) -> list[Path]:
    summary = summarise(results, config.methods, config.reference)
    inputs = sorted((r for r in store.manifest.files.values() if r.kind == config.kind), key=lambda r: r.source)
    parameters = asdict(config) | {"methods": list(config.methods),
                                   "reference_in_run": config.reference in config.methods,
                                   "tie_rule": "Kendall-tau distance K^(1/2): a pair tied in one order only counts 1/2"}
    title = f"backtest: {config.kind}, {config.scheme} splits"
    record = RunRecord(config.kind, list(config.methods), str(store.root), inputs, parameters=parameters, timings=timings, title=title)
    return write_backtest(out, results, summary, record, title, config.reference) + [write_report(out)]


def backtest(store: Store, config: BacktestConfig, out: str | Path, client=None) -> list[Path]:
    """Run every split x method of `config` over the store's logs and publish the results in `out`."""
    timings: dict[str, float] = {}
    start = time.perf_counter()
    log = load(store, config)
    splits = make_splits(log, config)
    timings["load"] = time.perf_counter() - start
    start = time.perf_counter()
    results = run_backtest(log, splits, config.methods, client=client, unseen=config.unseen)
    timings["evaluate"] = time.perf_counter() - start
    return publish_backtest(store, config, results, out, timings)
