import numpy as np
import pyarrow.compute as pc
import pytest

from pipeline.backtest.synthetic import diplomacy_games, write_games
from pipeline.logs import read_log


def test_shape_and_seats():
    games = diplomacy_games(games=500, players=800, seed=1)  # seven seats a game, the default
    t = games.table
    assert t.num_rows == 500 * 7
    grid = np.array(t.column("player").to_pylist()).reshape(500, 7)
    assert all(len(set(row)) == 7 for row in grid)  # nobody twice in one game
    assert len(set(grid.ravel())) == 800  # everyone plays
    score = t.column("score").to_numpy().reshape(500, 7)
    assert np.all(score.sum(axis=1) == 34)  # the supply centres
    assert np.any(score == 0)  # eliminated players tie
    assert np.all(np.diff(pc.unique(t.column("timestamp")).to_numpy().astype(np.int64)) > 0)


def test_seeded():
    a, b = diplomacy_games(games=200, players=300, seed=5), diplomacy_games(games=200, players=300, seed=5)
    assert a.table.equals(b.table) and np.array_equal(a.skill, b.skill)
    assert not a.table.equals(diplomacy_games(games=200, players=300, seed=6).table)


def test_skill_predicts_places():
    games = diplomacy_games(games=2000, players=1500, seed=2, cycle=0.0)
    skill = games.skill_of(games.table.column("player").to_pylist()).reshape(-1, 7)
    score = games.table.column("score").to_numpy().reshape(-1, 7)
    top = np.argmax(skill, axis=1)
    assert score[np.arange(len(score)), top].mean() > 34 / 7 + 1  # the most skilled player takes more centres


def test_written_log_reads_back(tmp_path):
    games = diplomacy_games(games=50, players=100, seed=0)
    result = read_log(write_games(tmp_path / "g.csv", games), "games")
    assert result.rows_in == 50 * 7 and result.rows_quarantined == 0
    with pytest.raises(ValueError, match="parquet or .csv"):
        write_games(tmp_path / "g.json", games)
