"""The `backtest` flow: split a store's logs, evaluate every split x method on Dask, publish."""

from __future__ import annotations

import time

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from pipeline.backtest import runner
from pipeline.backtest.evaluate import run_backtest
from pipeline.runtime import FLOW_SCHEDULER, dask_client
from pipeline.store import Store


@task(cache_policy=NO_CACHE)
def load(store: str, config: runner.BacktestConfig):
    log = runner.load(Store(store), config)
    return log, runner.make_splits(log, config)


@task(cache_policy=NO_CACHE)
def evaluate(config: runner.BacktestConfig, log, splits, client):
    return run_backtest(log, splits, config.methods, client=client, unseen=config.unseen)


@task(cache_policy=NO_CACHE)
def publish(store: str, config: runner.BacktestConfig, results, out: str, timings: dict[str, float], inputs) -> list[str]:
    return [str(p) for p in runner.publish_backtest(Store(store), config, results, out, timings, inputs)]


@flow(name="backtest")
def backtest(store: str, kind: str, methods: list[str], out: str, splits: int = 50, test_size: int = 3000, seed: int = 0,
             scheme: str = "random", window_days: float = 30.0, reference: str = "elo", unseen: str = "tie",
             scheduler: str | None = None, workers: int = 2) -> list[str]:
    config = runner.BacktestConfig(kind, tuple(methods), splits, test_size, seed, scheme, window_days, reference, unseen)
    start = time.perf_counter()
    log, split_list = load(store, config)
    timings = {"load": time.perf_counter() - start}
    with dask_client(scheduler, workers, given_by=FLOW_SCHEDULER) as client:
        results = evaluate(config, log, split_list, client)
    timings["evaluate"] = time.perf_counter() - start - timings["load"]
    return publish(store, config, results, out, timings, log.inputs)
