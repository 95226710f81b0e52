"""Progress bars: labels are shown as they are."""

from __future__ import annotations

import io

import pytest

from pipeline.progress import progress_bar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_label_is_text_never_markup(monkeypatch):
    # A file or board named like rich markup ('[/dim]' closes a tag that is not open) raised MarkupError on a terminal.
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with progress_bar("ingest", 2) as advance:
        advance(label="[link=https://example.com]x[/link]")
        advance(label="[/dim]logs[bold].csv")  # the label drawn last
    assert "[/dim]logs[bold].csv" in terminal.getvalue()


@pytest.mark.parametrize("on_cluster", [False, True], ids=["local threads", "dask cluster"])
def test_reduction_units_bootstrap_rounds_and_backtest_splits_report_their_progress(tmp_path, request, on_cluster):
    # Rating and backtests showed no progress: the finished "ingest 1/1" bar stayed frozen during
    # m-elo's bootstrap, and a backtest printed nothing until the end.
    from contextlib import contextmanager

    from pipeline.backtest import BacktestConfig, backtest
    from pipeline.board import Board, run_board, source_files
    from pipeline.progress import watching
    from pipeline.store import Store
    from tests.conftest import SAMPLES

    seen: dict[str, list[int]] = {}  # description -> [total, steps advanced, times ended]

    @contextmanager
    def record(description: str, total: int):
        counts = seen.setdefault(description, [0, 0, 0])
        counts[0] += total

        def advance(steps: int = 1, label: str | None = None) -> None:
            counts[1] += steps

        yield advance
        counts[2] += 1

    board = Board("f1", "games", (str(SAMPLES / "f1"),), ("m-elo:bootstrap=120", "borda"))
    store = Store(tmp_path / "store")
    client = request.getfixturevalue("dask_client") if on_cluster else None
    with watching(record):
        run_board(board, store, tmp_path / "board", client)
        backtest(store, BacktestConfig("games", ("copeland",), splits=3, test_size=5), tmp_path / "backtest", client)
    files = len(source_files(board))
    assert seen["ingest"] == [files, files, 1]
    assert seen["rounds"] == [120, 120, 1]
    assert seen["splits"] == [3, 3, 1]
    reduced = seen["reduce units"]
    assert reduced[0] == reduced[1] and reduced[0] >= files and reduced[2] >= 1  # every unit counted, once


def test_off_a_terminal_no_progress_is_shown():
    from pipeline.progress import progress_display, progress_shown

    with progress_display():  # pytest's stderr is not a terminal
        assert not progress_shown()
