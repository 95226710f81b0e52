"""Log kinds: a new kind is one declaration; ingest, the store, the reductions, the methods and the
backtests take it from there without knowing its name."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from pipeline.arrays import column
from pipeline.logs import KINDS, LogKind, log_kind
from pipeline.logs.orders import WeakOrders
from pipeline.logs.records import RawRecords
from pipeline.logs.triage import Check, ReadResult, Triage, text
from pipeline.methods import run
from pipeline.stats import Extra, reduce_store
from pipeline.stats.in_memory import profile
from pipeline.store import Store

# A toy kind, declared here only: one row is the podium of a race (three drivers, best first).
PLACES = ("first", "second", "third")
SCHEMA = pa.schema([("race", pa.string()), *((p, pa.string()) for p in PLACES), ("weight", pa.float64())])


def read_podiums(raw: RawRecords, source: str) -> ReadResult:
    t = Triage(source, raw)
    race, places = t.column("race"), [t.column(p) for p in PLACES]
    t.derive(race=text(race), **{p: text(c) for p, c in zip(PLACES, places)}, weight=pl.lit(1.0))
    checks = [Check(p, f"missing {p}", pl.col(f"~{p}").is_null()) for p in PLACES]
    checks += [Check("second", "a driver twice on the podium", (pl.col("~first") == pl.col("~second"))
                     | (pl.col("~first") == pl.col("~third")) | (pl.col("~second") == pl.col("~third")))]
    t.reject(checks)
    return t.result("podiums", {name: pl.col(f"~{name}") for name in SCHEMA.names}, SCHEMA)


def podium_orders(table: pa.Table) -> WeakOrders:
    rows = table.num_rows
    agents = np.column_stack([column(table, p) for p in PLACES]).astype(np.int64).ravel()
    return WeakOrders(np.arange(0, 3 * rows + 1, 3), agents, np.tile([0.0, 1.0, 2.0], rows), column(table, "weight"))


PODIUMS = dict(name="podiums", holds="the podium of one race per row", unit="race", read=read_podiums, schema=SCHEMA,
               ids=dict.fromkeys(PLACES, "agents"), columns=(*PLACES, "weight"), weak_orders=podium_orders,
               independent_rows=True)
RACES = [("r1", "ann", "bob", "cid"), ("r2", "bob", "ann", "dan"), ("r3", "cid", "ann", "bob"),
         ("r4", "ann", "dan", "cid"), ("r5", "dan", "bob", "ann")]


@pytest.fixture
def podiums(monkeypatch):
    monkeypatch.setitem(KINDS, "podiums", LogKind(**PODIUMS))
    return KINDS["podiums"]


def test_a_toy_kind_goes_through_ingest_store_reduce_and_methods(tmp_path, podiums):
    path = tmp_path / "podiums.csv"
    rows = [",".join(r) for r in RACES] + ["r6,eve,eve,ann"]
    path.write_text("race,first,second,third\n" + "\n".join(rows) + "\n")
    store = Store(tmp_path / "store")
    [report] = store.ingest([path], "podiums")
    assert (report.rows_accepted, report.rows_quarantined) == (5, 1)  # eve twice: quarantined by the kind's reader
    assert store.dictionary("agents").names == ["ann", "bob", "cid", "dan"]  # the names of all three columns, sorted
    stats = reduce_store(store, "podiums", {"pairwise", "positions", "histogram", "pairwise_per_game"}, target_rows=2)
    # The same races as ranked ballots, reduced in memory: the same statistics, bit for bit.
    ballots, names = profile([">".join(r[1:]) for r in RACES])
    assert names == store.dictionary("agents").names
    assert np.array_equal(stats.pairwise.wins, ballots.pairwise.wins)
    assert stats.positions.groups.keys() == ballots.positions.groups.keys()
    assert all(np.array_equal(stats.positions.groups[k], ballots.positions.groups[k]) for k in stats.positions.groups)
    assert stats.histogram.ballots == ballots.histogram.ballots
    assert stats.extra["pairwise_per_game"].counts is not None  # extras for every kind apply to the new one
    for spec in ("borda", "copeland", "schulze"):
        assert run(spec, stats).score.tolist() == run(spec, ballots).score.tolist()


def test_a_toy_kind_is_backtested_by_unit(tmp_path, podiums):
    from pipeline.backtest import BacktestConfig, backtest, load_units

    path = tmp_path / "podiums.csv"
    path.write_text("race,first,second,third\n" + "\n".join(",".join(r) for r in RACES * 4) + "\n")
    store = Store(tmp_path / "store")
    store.ingest([path], "podiums")
    log = load_units(store, "podiums")
    assert log.units == 20 and np.all(np.diff(log.orders.offsets) == 3)
    written = backtest(store, BacktestConfig("podiums", ("borda", "copeland"), splits=3, test_size=5, reference="borda"),
                       tmp_path / "out")
    assert (tmp_path / "out" / "summary.md") in written


def test_declarations_are_checked():
    with pytest.raises(ValueError, match="exactly one of weak_orders and comparisons"):
        LogKind(**PODIUMS | {"comparisons": lambda table: None})
    with pytest.raises(ValueError, match=r"columns \['place'\] are not in its schema"):
        LogKind(**PODIUMS | {"columns": ("place",)})
    with pytest.raises(ValueError, match="unknown dictionaries"):
        LogKind(**PODIUMS | {"ids": {"first": "drivers"}})
    with pytest.raises(ValueError, match="needs a reader"):
        LogKind("half", holds="?", unit="?", weak_orders=podium_orders)
    with pytest.raises(ValueError, match="unknown log kind 'podium'; expected one of"):
        log_kind("podium")


def test_an_extra_for_an_unknown_or_unstored_kind_is_an_error():
    def extra(columns):
        return Extra("probe", columns, lambda table, kind, n: None, lambda a, b: None, lambda merged, present, order: None,
                     lambda value: {}, lambda arrays: None)

    with pytest.raises(ValueError, match="unknown log kind 'podiums'"):
        extra({"podiums": ("first",)})
    with pytest.raises(ValueError, match="nfg logs are not stored"):
        extra({"nfg": ()})
    with pytest.raises(ValueError, match="cannot be computed from games logs"):
        extra({"battles": ("judge",)}).columns_of("games")


def test_every_stored_kind_reads_what_it_declares():
    for kind in KINDS.values():
        if kind.stored:
            assert set(kind.columns) <= set(kind.schema.names)
            assert kind.read is not None and (kind.weak_orders is None) != (kind.comparisons is None)
