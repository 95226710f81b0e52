"""Small synthetic game logs in a store, shared by the backtest tests."""

from __future__ import annotations

import pytest

from pipeline.backtest.synthetic import diplomacy_games, write_games
from pipeline.store import Store


@pytest.fixture(scope="session")
def small_games(tmp_path_factory):
    """300 seven-player games over 400 players, ingested: (store, the generator's output)."""
    root = tmp_path_factory.mktemp("backtest-games")
    games = diplomacy_games(games=300, players=400, seed=3, cycle=0.3, resolution_days=30)
    path = write_games(root / "games.parquet", games)
    store = Store(root / "store")
    store.ingest([path], "games")
    return store, games


@pytest.fixture(scope="session")
def crowd_battles(tmp_path_factory):
    """The LLMFAO crowd battles of data-samples/, ingested."""
    from tests.conftest import SAMPLES

    store = Store(tmp_path_factory.mktemp("backtest-battles") / "store")
    store.ingest([SAMPLES / "llmfao" / "crowd_battles.csv"], "battles")
    return store


@pytest.fixture(scope="session")
def f1_races(tmp_path_factory):
    """The F1 races of data-samples/ (2021-2023) as multi-player games, ingested."""
    from tests.conftest import SAMPLES

    store = Store(tmp_path_factory.mktemp("backtest-f1") / "store")
    store.ingest([SAMPLES / "f1" / "races_2021_2023.csv"], "games")
    return store
