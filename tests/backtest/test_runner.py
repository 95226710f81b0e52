import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from pipeline.backtest.runner import BacktestConfig, backtest, load, make_splits
from pipeline.methods import REGISTRY, Method, Ratings

from tests.conftest import SAMPLES, data_rows


def test_f1_races_as_games(f1_races, tmp_path):
    config = BacktestConfig("games", ("plurality", "borda", "copeland"), splits=6, test_size=8, seed=1, reference="borda")
    backtest(f1_races, config, tmp_path)
    results = pq.read_table(tmp_path / "results.parquet")
    assert results.num_rows == 18
    assert set(results.column("test_units").to_pylist()) == {8}
    # About 20 drivers per race: 190 pairs, a random order would get about 95 wrong.
    assert max(results.column("kendall").to_pylist()) < 95
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["parameters"]["reference"] == "borda:normalise=false"
    assert run["rows"]["rows_accepted"] == data_rows(SAMPLES / "f1" / "races_2021_2023.csv")  # every row a valid result


def test_f1_temporal_splits(f1_races):
    config = BacktestConfig("games", ("borda",), splits=3, scheme="temporal", window_days=120)
    splits = make_splits(load(f1_races, config), config)
    assert [len(s.test) for s in splits] and all(len(s.train) > 0 for s in splits)
    assert all(set(a.train) < set(b.train) for a, b in zip(splits, splits[1:]))  # training grows as the cut rolls on


@pytest.fixture
def logistic_winrate(monkeypatch):
    """A stand-in for the Elo family: smoothed win ratio on a logistic (Elo points) scale."""

    def winrate(pairs) -> Ratings:
        wins = np.asarray(pairs.wins.sum(axis=1)).ravel() + np.asarray(pairs.ties.sum(axis=1)).ravel() / 2
        games = wins + np.asarray(pairs.wins.sum(axis=0)).ravel() + np.asarray(pairs.ties.sum(axis=0)).ravel() / 2
        return Ratings.from_scores(pairs.agents, 400 * np.log10((wins + 1) / (games - wins + 1)),
                                   info={"logistic_scale": 400})

    monkeypatch.setitem(REGISTRY, "winrate", Method("winrate", winrate, ("pairwise",), None))


def test_crowd_battles_pairwise_metrics(crowd_battles, tmp_path, logistic_winrate):
    config = BacktestConfig("battles", ("winrate", "copeland"), splits=4, test_size=800, seed=2, reference="winrate")
    backtest(crowd_battles, config, tmp_path)
    results = pq.read_table(tmp_path / "results.parquet").to_pylist()
    rate = [r for r in results if r["method"] == "winrate"]
    assert all(0.5 < r["auc"] < 1 and 0 < r["brier"] < 0.25 and np.isfinite(r["log_loss"]) for r in rate)
    assert all(r["test_pairs"] == 800 for r in results)
    summary = pq.read_table(tmp_path / "summary.parquet").to_pylist()
    assert summary[0]["verdict"] == "reference" and summary[0]["auc"] > 0.5


def test_bad_config_raises():
    with pytest.raises(ValueError, match="scheme"):
        BacktestConfig("games", ("borda",), scheme="yearly")
    with pytest.raises(ValueError, match="policy"):
        BacktestConfig("games", ("borda",), unseen="drop")
    with pytest.raises(ValueError, match="unknown method"):
        BacktestConfig("games", ("nonesuch",))


@pytest.mark.parametrize("days", [float("nan"), float("inf"), -float("inf"), 0.0, -1.0, 1e-12, 1e300])
def test_a_window_that_is_not_a_positive_span_of_time_is_refused_when_configured(days):
    # inf and 1e300 raised OverflowError after the log was loaded; NaN went into run.json as NaN.
    with pytest.raises(ValueError, match="window_days"):
        BacktestConfig("games", ("borda",), scheme="temporal", window_days=days)
    with pytest.raises(ValueError, match="window_days"):
        BacktestConfig("games", ("borda",), window_days=days)
    assert BacktestConfig("games", ("borda",), window_days=0.5).window == 43_200 * 10**6


def test_more_splits_than_can_be_held_are_refused_when_configured():
    # 10**9 splits grew memory until MemoryError (or the OOM killer) before any split was rated.
    with pytest.raises(ValueError, match="splits must be between 1 and 1,000"):
        BacktestConfig("games", ("borda",), splits=10**9)
    with pytest.raises(ValueError, match="splits must be between 1 and 1,000"):
        BacktestConfig("games", ("borda",), splits=0)


def test_run_json_lists_the_files_the_backtest_read_not_those_ingested_while_it_ran(tmp_path):
    # run.json's inputs were read from the manifest when publishing, so a file that another process
    # ingested while the splits were rated was listed (with its rows) though no split held it.
    from pipeline.backtest.evaluate import run_backtest
    from pipeline.backtest.runner import publish_backtest
    from pipeline.store import Store
    lines = (SAMPLES / "f1" / "races_2021_2023.csv").read_text().splitlines(keepends=True)
    first, later = tmp_path / "first.csv", tmp_path / "later.csv"
    first.write_text("".join(lines[:600]))
    later.write_text(lines[0] + "".join(lines[600:]))
    store = Store(tmp_path / "store")
    store.ingest([first], "games")
    config = BacktestConfig("games", ("borda",), splits=2, test_size=3)
    log = load(store, config)
    store.ingest([later], "games")  # another process, while the backtest runs
    results = run_backtest(log, make_splits(log, config), config.methods)
    publish_backtest(store, config, results, tmp_path / "out", {}, log.inputs)
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert [i["source"] for i in run["inputs"]] == [str(first)]
    assert run["rows"]["rows_accepted"] == log.table.num_rows == data_rows(first)
