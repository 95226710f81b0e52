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
    backtest(store, BacktestConfig("games", ("copeland",), splits=2, test_size=5), out)
    (found,) = read_run(out)
    assert isinstance(found, BacktestFolder) and (out / "ratings.parquet").exists()
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "Max Verstappen" not in html and [r[0][0] for r in Page(html).tables[0].rows] == ["copeland:tie_credit=0.5"]
    run_board(board, store, out)  # and a board published over the backtest is a board
    (found,) = read_run(out)
    assert isinstance(found, BoardFolder) and found.methods == ["borda:normalise=false"]
