"""Published folders read back: which run a folder holds."""

from __future__ import annotations

from pipeline.backtest import BacktestConfig, backtest
from pipeline.board import Board, run_board
from pipeline.report.folders import BacktestFolder, BoardFolder, read_run
from pipeline.store import Store

from tests.conftest import SAMPLES
from tests.report.pages import Page


def test_a_folder_is_what_its_last_run_published_not_what_an_earlier_one_left(tmp_path):
    # `vase backtest --out` on a folder of an earlier `vase rate`: its report showed the board's
    # ratings under the backtest's title, as ratings.parquet was still there.
    store, out = Store(tmp_path / "store"), tmp_path / "out"
    board = Board("f1", "games", (str(SAMPLES / "f1"),), ("borda",))
    run_board(board, store, out)
    board_ratings = (out / "ratings.parquet").read_bytes()
    backtest(store, BacktestConfig("games", ("copeland",), splits=2, test_size=5), out)
    assert not (out / "ratings.parquet").exists()  # the backtest replaced the board's files
    (out / "ratings.parquet").write_bytes(board_ratings)  # as a folder published before that was fixed still holds it
    (found,) = read_run(out)
    assert isinstance(found, BacktestFolder)
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "Max Verstappen" not in html and [r[0][0] for r in Page(html).tables[0].rows] == ["copeland:tie_credit=0.5"]
    run_board(board, store, out)  # and a board published over the backtest is a board
    (found,) = read_run(out)
    assert isinstance(found, BoardFolder) and found.methods == ["borda:normalise=false"]


def test_a_run_json_whose_sections_are_not_mappings_is_read_as_far_as_it_can_be(tmp_path):
    # "parameters": [1] in a backtest's run.json stopped `vase report` with AttributeError, as did
    # "rows", "diagnostics" or "categories" of another type in a board's.
    from typer.testing import CliRunner

    from pipeline.cli import app

    store = Store(tmp_path / "store")
    run_board(Board("f1", "games", (str(SAMPLES / "f1"),), ("borda",)), store, tmp_path / "board")
    backtest(store, BacktestConfig("games", ("copeland",), splits=2, test_size=5), tmp_path / "backtest")
    for folder in ("board", "backtest"):
        (tmp_path / folder / "run.json").write_text('{"parameters": [1], "rows": "many", "diagnostics": [2], "categories": 3, '
                                                    '"timings_s": [], "outputs": 4, "title": "edited"}')
        result = CliRunner().invoke(app, ["report", str(tmp_path / folder)])
        assert result.exit_code == 0, (folder, result.output)
        assert "<h1>edited" in (tmp_path / folder / "index.html").read_text(encoding="utf-8")
