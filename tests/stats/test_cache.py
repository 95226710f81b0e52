"""Incremental reductions: cached partials are reused and equal a reduction from scratch."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.stats import CORE_STATISTICS, reduce_store
from pipeline.stats import reduce as reduce_module
from tests.stats.test_reduce import build_store, random_orders, write_ballots


def same(one, two) -> bool:
    return (one.agents.tolist() == two.agents.tolist()
            and one.pairwise.dense().wins.tobytes() == two.pairwise.dense().wins.tobytes()
            and one.pairwise.dense().ties.tobytes() == two.pairwise.dense().ties.tobytes()
            and all(one.positions.groups[k].tobytes() == two.positions.groups[k].tobytes() for k in two.positions.groups)
            and one.histogram.ballots == two.histogram.ballots)


@pytest.mark.parametrize("dense", [True, False])
def test_second_reduction_reads_only_the_cache(tmp_path, monkeypatch, dense):
    store = build_store(tmp_path, "ballots", random_orders(np.random.default_rng(0), 40), 3)
    fresh = reduce_store(store, "ballots", CORE_STATISTICS, dense=dense)
    first = reduce_store(store, "ballots", CORE_STATISTICS, dense=dense, use_cache=True)
    assert len(list((store.root / "cache").rglob("*.pkl"))) == 3  # one partial per source file
    monkeypatch.setattr(reduce_module, "reduce_unit", lambda *a: pytest.fail("re-read a cached unit"))
    second = reduce_store(store, "ballots", CORE_STATISTICS, dense=dense, use_cache=True)
    assert same(fresh, first) and same(fresh, second)


@pytest.mark.parametrize("dense", [True, False])
def test_new_file_with_new_agents_reuses_old_partials(tmp_path, dense):
    store = build_store(tmp_path, "ballots", random_orders(np.random.default_rng(1), 30), 2)
    reduce_store(store, "ballots", CORE_STATISTICS, dense=dense, use_cache=True)
    newcomer = tmp_path / "new.jsonl"
    write_ballots(newcomer, [([["zz"], ["p1"], ["yy", "p2"]], 2.0)])  # two agents the dictionary has not seen
    store.ingest([newcomer], "ballots")
    incremental = reduce_store(store, "ballots", CORE_STATISTICS, dense=dense, use_cache=True)
    assert same(incremental, reduce_store(store, "ballots", CORE_STATISTICS, dense=dense))
    assert len(incremental.agents) == 9
