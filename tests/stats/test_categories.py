"""Category counts of a store: exact, whatever the partitioning; kinds without a category refused."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.stats import categories
from pipeline.stats.categories import category_counts
from pipeline.stats.reduce import reduce_store
from pipeline.store import Store
from tests.test_board import battle_log


def test_counts_per_category_match_the_log_for_any_partitioning(tmp_path, monkeypatch):
    rows = battle_log(tmp_path / "battles.csv", ["b", "a", "\u00e9t\u00e9", None, "a"], battles=500)
    store = Store(tmp_path / "store")
    store.ingest([tmp_path / "battles.csv"], "battles")
    expected = pl.DataFrame(rows).group_by("category").len().sort("category")
    expected = {(c or None): n for c, n in expected.iter_rows()}
    counted = category_counts(store, "battles")
    assert counted == expected and list(counted) == ["a", "b", "\u00e9t\u00e9", None]
    real = categories.plan_units
    monkeypatch.setattr(categories, "plan_units", lambda s, k, **options: real(s, k, target_rows=7, **options))
    assert category_counts(store, "battles") == counted


def test_a_category_reduction_reads_only_its_rows(tmp_path):
    rows = battle_log(tmp_path / "battles.csv", ["a", "b"], battles=300)
    store = Store(tmp_path / "store")
    store.ingest([tmp_path / "battles.csv"], "battles")
    whole = reduce_store(store, "battles")
    parts = [reduce_store(store, "battles", category=c, target_rows=11) for c in ("a", "b")]
    assert sum(p.pairwise.wins.sum() for p in parts) == whole.pairwise.wins.sum() == sum(r["winner"] != "tie" for r in rows)


def test_kinds_without_a_category_column_are_refused(tmp_path):
    with pytest.raises(ValueError, match="games logs have no category column"):
        category_counts(Store(tmp_path / "store"), "games")
