"""Battle features (`features_a.<name>`, `features_b.<name>`): read from every format, bad values
quarantined with one line naming the file, line and field."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from pipeline.logs import UnreadableFile, read_log
from pipeline.stats import reduce_store
from pipeline.store import Store

ROWS = [
    {"model_a": "x", "model_b": "y", "winner": "model_a", "Features_A.Len": 120, "features_b.len": 80, "features_a.md": 3, "features_b.md": 0},
    {"model_a": "y", "model_b": "x", "winner": "tie", "Features_A.Len": 40, "features_b.len": 41.5, "features_a.md": 0, "features_b.md": 1},
]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_features_are_read_in_every_format(tmp_path, suffix):
    path = tmp_path / f"b{suffix}"
    if suffix == ".csv":
        pl.DataFrame(ROWS).write_csv(path)
    elif suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    else:
        pl.DataFrame(ROWS).write_parquet(path)
    result = read_log(path, "battles")
    assert result.rows_quarantined == 0
    assert result.table.column("features").to_pylist() == [
        [{"name": "len", "a": 120.0, "b": 80.0}, {"name": "md", "a": 3.0, "b": 0.0}],
        [{"name": "len", "a": 40.0, "b": 41.5}, {"name": "md", "a": 0.0, "b": 1.0}]]


@pytest.mark.parametrize(("a", "b", "field", "reason"), [
    ("long", "3", "features_a.len", "features_a.len is not a number"),
    ("3", "inf", "features_b.len", "features_b.len is not finite"),
    ("nan", "3", "features_a.len", "features_a.len is not finite"),
    ("-2", "3", "features_a.len", "features_a.len is negative (features are lengths or counts)"),
    ("3", "", "features_b.len", "features_b.len is missing while features_a.len is given"),
    ("", "3", "features_a.len", "features_a.len is missing while features_b.len is given"),
])
def test_each_bad_value_is_quarantined_with_one_line(tmp_path, a, b, field, reason):
    path = tmp_path / "b.csv"
    path.write_text(f"model_a,model_b,winner,features_a.len,features_b.len\nx,y,model_a,4,5\nx,y,model_b,{a},{b}\n")
    result = read_log(path, "battles")
    assert result.rows_accepted == 1
    assert result.quarantined.select(["file", "line", "field", "reason"]).to_pylist() == [
        {"file": str(path), "line": 3, "field": field, "reason": reason}]


def test_nested_values_and_both_sides_empty(tmp_path):
    path = tmp_path / "b.jsonl"
    path.write_text(json.dumps({"model_a": "x", "model_b": "y", "winner": "model_a", "features_a.len": {"h1": 2},
                                "features_b.len": 3}) + "\n"
                    + json.dumps({"model_a": "x", "model_b": "y", "winner": "model_a", "features_a.len": None,
                                  "features_b.len": None}) + "\n")
    result = read_log(path, "battles")
    assert result.quarantined.column("reason").to_pylist() == ["features_a.len is a list or an object, not a single value"]
    assert result.table.column("features").to_pylist() == [[]]  # no value for len: the battle has no features


@pytest.mark.parametrize(("header", "problem"), [
    ("features_a.len", "column features_a.len has no features_b.len"),
    ("features_a.Léngth,features_b.Léngth", "feature name 'léngth'"),
    ("features_a.len,features_b.len,FEATURES_A.LEN", "both name"),
])
def test_header_problems_refuse_the_file(tmp_path, header, problem):
    path = tmp_path / "b.csv"
    values = ",".join("1" for _ in header.split(","))
    path.write_text(f"model_a,model_b,winner,{header}\nx,y,model_a,{values}\n", encoding="utf-8")
    with pytest.raises(UnreadableFile, match=problem):
        read_log(path, "battles")


def test_a_store_written_before_features_still_reduces(tmp_path):
    """Partition files without the `features` column (older stores) read as battles without features."""
    import pyarrow.parquet as pq

    path = tmp_path / "b.csv"
    pl.DataFrame([{k: v for k, v in r.items() if not k.lower().startswith("features")} for r in ROWS]).write_csv(path)
    store = Store(tmp_path / "store")
    store.ingest([path], "battles")
    for part in store.partitions("battles"):
        table = pq.read_table(store.path(part))
        pq.write_table(table.drop_columns(["features"]), store.path(part))
    stats = reduce_store(store, "battles", {"pairwise", "battle_features"})
    design = stats.extra["battle_features"]
    assert design.names == () and design.side_a.shape == (2, 0)
    assert np.array_equal(np.sort(design.weight), [1.0, 1.0])


def test_files_stored_before_and_after_features_reduce_together(tmp_path):
    """One unit of work may read a partition file from before the column and one from after."""
    import pyarrow.parquet as pq

    old, new = tmp_path / "old.csv", tmp_path / "new.csv"
    pl.DataFrame([{"model_a": "x", "model_b": "z", "winner": "model_b"}]).write_csv(old)
    pl.DataFrame(ROWS).write_csv(new)
    store = Store(tmp_path / "store")
    store.ingest([old], "battles")
    for part in store.partitions("battles"):
        pq.write_table(pq.read_table(store.path(part)).drop_columns(["features"]), store.path(part))
    store.ingest([new], "battles")
    assert len(store.partitions("battles")) == 2
    stats = reduce_store(store, "battles", {"pairwise", "battle_features"})
    design = stats.extra["battle_features"]
    assert design.names == ("len", "md") and np.isclose(design.weight.sum(), 3.0)
    assert np.isnan(design.side_a).any(axis=1).sum() == 1  # the old battle has no feature values
