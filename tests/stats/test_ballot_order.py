"""The ballot order statistic: first ids in natural order, the same whatever the files, partitions or store ids."""

from __future__ import annotations

import numpy as np

from pipeline.stats import reduce_store
from pipeline.stats.ballot_order import natural_key
from pipeline.stats.in_memory import statistics_of_records
from pipeline.store import Store


def test_natural_key_orders_digits_as_numbers():
    ids = ["b10", "b2", "a", "b1", "<memory>:12", "<memory>:3", "b02"]
    assert sorted(ids, key=natural_key) == ["<memory>:3", "<memory>:12", "a", "b1", "b02", "b2", "b10"]


def test_first_id_of_each_distinct_ballot():
    rows = [{"ballot_id": i, "ranking": r} for i, r in [("q9", "a>b"), ("q10", "b>a"), ("q11", "a>b"), ("q2", "a=b")]]
    stats, _ = statistics_of_records(rows, "ballots", {"histogram", "ballot_order"})
    first = stats.extra["ballot_order"].first
    assert first == {((0,), (1,)): "q9", ((1,), (0,)): "q10", ((0, 1),): "q2"}
    assert set(first) == set(stats.histogram.ballots)


def _ballot_order(tmp_path, name, files, order):
    store = Store(tmp_path / name)
    for f in order:
        store.ingest([files[f]], "ballots")
    stats = reduce_store(store, "ballots", {"histogram", "ballot_order"}, target_rows=2)
    names = store.dictionary("agents").names
    rename = lambda ballot: tuple(tuple(sorted(names[stats.agents[a]] for a in g)) for g in ballot)  # noqa: E731
    return {rename(b): i for b, i in stats.extra["ballot_order"].first.items()}


def test_independent_of_files_partitions_and_store_ids(tmp_path):
    rng = np.random.default_rng(0)
    files = []
    for f in range(3):
        path = tmp_path / f"part{f}.csv"
        lines = [f"v{f}-{i},{'>'.join(rng.permutation(list('abcd'))[:3])}" for i in range(40)]
        path.write_text("ballot_id,ranking\n" + "\n".join(lines) + "\n")
        files.append(path)
    forwards = _ballot_order(tmp_path, "s1", files, [0, 1, 2])
    backwards = _ballot_order(tmp_path, "s2", files, [2, 1, 0])  # other store ids, other units
    assert forwards == backwards
    assert min(forwards.values(), key=natural_key) == "v0-0"


def test_a_task_of_a_score_table_is_a_ballot_named_by_its_task():
    rows = [{"task": t, "agent": a, "score": s} for t, a, s in
            [("t10", "x", 1), ("t10", "y", 2), ("t9", "x", 2), ("t9", "y", 1), ("t8", "x", 3), ("t8", "y", 0)]]
    stats, _ = statistics_of_records(rows, "scores", {"histogram", "ballot_order"})
    assert stats.extra["ballot_order"].first == {((0,), (1,)): "t8", ((1,), (0,)): "t10"}
