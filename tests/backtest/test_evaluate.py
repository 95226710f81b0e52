import numpy as np
import pyarrow as pa
import pytest

from pipeline.backtest.evaluate import log_counts, run_backtest, score_split, task_label, task_seed, training_statistics
from pipeline.backtest.units import UnitLog, load_units
from pipeline.backtest.splits import random_splits, temporal_splits
from pipeline.logs.orders import WeakOrders
from pipeline.methods import REGISTRY, Method, Ratings, Spec
from pipeline.stats.extras import EXTRAS, Extra

SPECS = ["plurality", "approval:k=2", "borda", "copeland"]


def test_true_skills_beat_a_random_ranking(small_games):
    store, games = small_games
    log = load_units(store, "games")
    names = store.dictionary("agents").names
    agents = np.arange(len(names))
    oracle = Ratings.from_scores(agents, games.skill_of(names))
    rng = np.random.default_rng(0)
    for split in random_splits(log.units, 5, 60, seed=1):
        guess = Ratings.from_scores(agents, rng.permutation(len(agents)).astype(float))
        known, noise = score_split(log, split, oracle), score_split(log, split, guess)
        assert known["unseen_pairs"] == 0
        # A random order gets about half of each game's 21 pairs wrong (less with the game's ties).
        assert known["kendall"] < noise["kendall"] - 1.5, (known["kendall"], noise["kendall"])


def test_methods_rate_only_training_games(small_games):
    store, _ = small_games
    log = load_units(store, "games")
    split = random_splits(log.units, 1, 100, seed=2)[0]
    stats = training_statistics(log, split, frozenset({"pairwise", "positions"}))
    # Each 7-player training game adds 7 appearances and 21 compared pairs (ties counted once).
    assert stats.appearances.sum() == 7 * len(split.train)
    assert stats.pairwise.total_weight == pytest.approx(21 * len(split.train))


def test_results_do_not_depend_on_the_workers(small_games, dask_client, dask_cluster):
    from distributed import Client

    from pipeline.runtime import local_cluster

    store, _ = small_games
    log = load_units(store, "games")
    splits = random_splits(log.units, 4, 50, seed=3)
    local = run_backtest(log, splits, SPECS)
    two = run_backtest(log, splits, SPECS, client=dask_client)
    with local_cluster(1) as one_cluster, Client(one_cluster) as one:
        single = run_backtest(log, splits, SPECS, client=one)
    assert len(dask_cluster.workers) == 2
    assert local.equals(two)
    assert local.equals(single)
    by_key = [("split", "ascending"), ("method", "ascending")]
    reordered = run_backtest(log, splits, list(reversed(SPECS)))  # the order of the specs changes no number
    assert reordered.sort_by(by_key).equals(local.sort_by(by_key))
    assert local.column("method").to_pylist()[:4] == [task_label(Spec.parse(s)) for s in SPECS]  # canonical spellings


def assert_same(x, y, where="statistics"):
    """The same values, types and layout, field by field (sparse matrices by their CSR arrays)."""
    import dataclasses

    import scipy.sparse as sp

    assert type(x) is type(y), where
    if isinstance(x, np.ndarray):
        assert x.dtype == y.dtype and np.array_equal(x, y), where
    elif sp.issparse(x):
        assert x.format == y.format and x.data.dtype == y.data.dtype, where
        for part in ("indptr", "indices", "data"):
            assert np.array_equal(getattr(x, part), getattr(y, part)), f"{where}.{part}"
    elif dataclasses.is_dataclass(x):
        for f in dataclasses.fields(x):
            assert_same(getattr(x, f.name), getattr(y, f.name), f"{where}.{f.name}")
    elif isinstance(x, dict):
        assert list(x) == list(y), where
        for key in x:
            assert_same(x[key], y[key], f"{where}[{key}]")
    else:
        assert x == y, where


EVERY_STATISTIC = frozenset({"pairwise", "positions", "histogram", "pairwise_per_game", "sequence"})


@pytest.mark.parametrize("fixture", ["small_games", "crowd_battles", "f1_races"])
def test_training_counts_by_difference_equal_counting_the_training_units(fixture, request):
    store = request.getfixturevalue(fixture)
    store = store[0] if isinstance(store, tuple) else store
    kind = "battles" if fixture == "crowd_battles" else "games"
    log = load_units(store, kind, EVERY_STATISTIC)
    whole = log_counts(log, EVERY_STATISTIC)
    assert whole is not None and whole.pairs is not None and "sequence" not in whole.extra
    splits = random_splits(log.units, 2, max(1, log.units // 5), seed=8) + random_splits(log.units, 1, log.units - 2, seed=9)
    for split in splits:  # the last split trains on two units only: counted directly
        assert_same(training_statistics(log, split, EVERY_STATISTIC, whole), training_statistics(log, split, EVERY_STATISTIC))


def test_a_unit_of_weight_zero_turns_the_difference_off(small_games):
    store, _ = small_games
    log = load_units(store, "games")
    weights = log.orders.weights.copy()
    weights[7] = 0.0  # its position groups would be dropped if subtracted: counted directly
    light = UnitLog(log.kind, log.n, log.name_orders, log.table, log.row_unit,
                    WeakOrders(log.orders.offsets, log.orders.agents, log.orders.levels, weights), log.times)
    assert log_counts(log, frozenset({"positions"})) is not None
    assert log_counts(light, frozenset({"positions"})) is None
    assert log_counts(log, frozenset({"sequence"})) is None  # nothing to subtract


def test_late_temporal_splits_count_by_difference(f1_races):
    log = load_units(f1_races, "games", EVERY_STATISTIC)
    whole = log_counts(log, EVERY_STATISTIC)
    for split in temporal_splits(log.times, 3, 60 * 86_400 * 1_000_000, seed=0):  # the last windows of the races
        assert 2 * len(split.train) > log.units
        assert_same(training_statistics(log, split, EVERY_STATISTIC, whole), training_statistics(log, split, EVERY_STATISTIC))


@pytest.fixture
def probe_method(monkeypatch):
    """A method reading an extra statistic (training rows per agent) and a seed, with logistic scores."""

    def partial(table, kind, n):
        return np.bincount(table.column("player").to_numpy(), minlength=n)

    monkeypatch.setitem(EXTRAS, "probe_rows", Extra("probe_rows", {"games": ("player",)}, partial, lambda a, b: a + b,
                                                    lambda value, present, store: value[present],
                                                    lambda value: {"rows": value}, lambda arrays: arrays["rows"]))

    def probe(pairs, rows, *, seed: int = -1) -> Ratings:
        wins = np.asarray(pairs.wins.sum(axis=1)).ravel()
        return Ratings.from_scores(pairs.agents, 400 * np.log10((wins + 1) / (rows + 1)),
                                   info={"logistic_scale": 400, "seed": seed, "rows": int(rows.sum())})

    monkeypatch.setitem(REGISTRY, "probe", Method("probe", probe, ("pairwise", "probe_rows"), None))
    return probe


def test_extras_and_seeds_reach_methods(small_games, probe_method):
    store, _ = small_games
    log = load_units(store, "games", frozenset({"probe_rows"}))
    splits = random_splits(log.units, 3, 50, seed=4)
    stats = training_statistics(log, splits[0], frozenset({"pairwise", "probe_rows"}))
    assert stats.extra["probe_rows"].sum() == 7 * len(splits[0].train)  # training rows only
    results = run_backtest(log, splits, ["probe", "borda"])
    seeds = results.filter(pa.compute.equal(results.column("method"), "probe")).column("seed").to_pylist()
    assert seeds == [task_seed(s, Spec.parse("probe")) for s in splits] and len(set(seeds)) == 3
    probe = results.filter(pa.compute.equal(results.column("method"), "probe")).to_pylist()
    assert all(0 < r["brier"] < 0.25 and r["log_loss"] > 0 and 0.5 < r["auc"] < 1 for r in probe)
    borda = results.filter(pa.compute.equal(results.column("method"), "borda:normalise=false")).to_pylist()
    assert all(r["auc"] is None for r in borda)  # Borda gives no probabilities
    assert results.equals(run_backtest(log, splits, ["probe", "borda"]))
