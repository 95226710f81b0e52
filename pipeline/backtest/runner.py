"""A whole backtest of a store: load, split, evaluate on Dask, summarise, publish [VasE] section 4.3.

`vase backtest` calls `backtest`; the `backtest` flow calls its steps (`load`, `make_splits`,
`run_backtest`, `publish_backtest`) as Prefect tasks.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow as pa

from pipeline.backtest.evaluate import run_backtest, task_label
from pipeline.backtest.kendall import UNSEEN_POLICIES
from pipeline.backtest.splits import Split, check_splits, random_splits, temporal_splits
from pipeline.backtest.summary import summarise, write_backtest
from pipeline.backtest.units import UnitLog, load_units
from pipeline.methods import Spec, needed_statistics
from pipeline.methods.registry import unique_specs
from pipeline.report import write_report
from pipeline.report.outfolder import replacing_run
from pipeline.report.publish import RunRecord
from pipeline.store import IngestReport, Store

DAY_US = 86_400 * 1_000_000
MAX_WINDOW_DAYS = 3_652_425  # 10,000 years: stored timestamps lie in the years 1 to 9999, so no longer window has a training set


@dataclass(frozen=True)
class BacktestConfig:
    """What to backtest. Specs may be given as texts; they are parsed here, once. Two spellings of
    one task (the same `task_label`) run once, and `merged` maps its label to the spellings given."""

    kind: str
    methods: tuple[Spec, ...]
    splits: int = 50
    test_size: int = 3000
    seed: int = 0
    scheme: str = "random"  # or "temporal"
    window_days: float = 30.0  # temporal splits only
    reference: Spec | str = "elo"  # parsed to a Spec
    unseen: str = "tie"
    merged: dict[str, list[str]] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.scheme not in ("random", "temporal"):
            raise ValueError(f"unknown split scheme {self.scheme!r}; expected random or temporal")
        if self.unseen not in UNSEEN_POLICIES:
            raise ValueError(f"unknown unseen-player policy {self.unseen!r}; expected one of {', '.join(UNSEEN_POLICIES)}")
        if not self.methods:
            raise ValueError("a backtest needs at least one method")
        check_splits(self.splits)
        # Checked whatever the scheme: run.json records it (NaN is not JSON), and inf cannot be rounded.
        if not (0 < self.window_days <= MAX_WINDOW_DAYS and self.window >= 1):  # False for NaN
            raise ValueError(f"window_days (the test window of temporal splits) must be between a microsecond and "
                             f"{MAX_WINDOW_DAYS:,} days (10,000 years), not {self.window_days}")
        methods, merged = unique_specs(self.methods, key=task_label)
        object.__setattr__(self, "methods", methods)
        object.__setattr__(self, "merged", dict(self.merged) | merged)
        object.__setattr__(self, "reference", Spec.parse(self.reference))

    @property
    def window(self) -> int:
        """The test window of temporal splits, in microseconds."""
        return round(self.window_days * DAY_US)

    @property
    def labels(self) -> list[str]:
        """The methods as they appear in the results (`task_label`)."""
        return [task_label(spec) for spec in self.methods]


def load(store: Store, config: BacktestConfig) -> UnitLog:
    return load_units(store, config.kind, needed_statistics(config.methods))


def make_splits(log: UnitLog, config: BacktestConfig) -> list[Split]:
    if config.scheme == "temporal":
        return temporal_splits(log.times, config.splits, config.window, config.seed)
    return random_splits(log.units, config.splits, config.test_size, config.seed)


def publish_backtest(store: Store, config: BacktestConfig, results: pa.Table, out: str | Path,
                     timings: dict[str, float], inputs: Sequence[IngestReport]) -> list[Path]:
    """The outputs and report of a backtest of the log read from `inputs` (`UnitLog.inputs`)."""
    reference = task_label(config.reference)
    summary = summarise(results, config.labels, reference)
    given = {k: v for k, v in asdict(config).items() if k not in ("methods", "reference", "merged")}
    parameters = given | {"methods": config.labels, "reference": reference, "reference_in_run": reference in config.labels,
                          "seeds": "a method whose spec leaves `seed` unset gets a seed per split x method task",
                          "tie_rule": "Kendall-tau distance K^(1/2): a pair tied in one order only counts 1/2"}
    if config.merged:
        parameters["methods_merged"] = config.merged
    title = f"backtest: {config.kind}, {config.scheme} splits"
    record = RunRecord(config.kind, config.labels, store.url, list(inputs), parameters=parameters, timings=timings, title=title)
    with replacing_run(Path(out)):  # an earlier run's files in `out` are not left beside this one's
        written = write_backtest(out, results, summary, record, title, reference)
    return written + [write_report(out)]


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
    return publish_backtest(store, config, results, out, timings, log.inputs)
