"""nfg reader: Gambit payoff and outcome forms, npz, validation."""

import os
import threading

import numpy as np
import pytest

from pipeline.games.nfg import read_nfg
from pipeline.logs.records import UnreadableFile

PD = 'NFG 1 R "PD" { "Row" "Col" }\n{ { "C" "D" } { "C" "D" } }\n""\n3 3 5 0 0 5 1 1\n'
PD_OUTCOMES = 'NFG 1 R "PD" { "Row" "Col" } { 2 2 }\n\n{ { "cc" 3, 3 } { "dc" 5, 0 } { "cd" 0, 5 } { "dd" 1, 1 } }\n1 2 3 4\n'


@pytest.mark.parametrize("text", [PD, PD_OUTCOMES])
def test_gambit_prisoners_dilemma(tmp_path, text):
    # Joint strategies list the first player fastest: (C,C) (D,C) (C,D) (D,D).
    path = tmp_path / "pd.nfg"
    path.write_text(text)
    game = read_nfg(path)
    np.testing.assert_array_equal(game.payoffs[0], [[3, 0], [5, 1]])
    np.testing.assert_array_equal(game.payoffs[1], [[3, 5], [0, 1]])
    assert game.players == ("Row", "Col")


def test_npz_with_names(tmp_path):
    path = tmp_path / "g.npz"
    np.savez(path, payoffs=np.stack([np.eye(2), -np.eye(2)]), players=np.array(["a", "b"]), strategies_0=np.array(["x", "y"]))
    game = read_nfg(path)
    assert game.labels == ["a:x", "a:y", "b:0", "b:1"]


@pytest.mark.parametrize("arrays,reason", [
    ({"payoff_0": np.eye(2), "payoff_1": np.eye(3)}, "shape"),
    ({"payoffs": np.stack([np.eye(2), np.full((2, 2), np.inf)])}, "finite"),
    ({"payoffs": np.zeros((2, 0, 2))}, "at least one strategy"),
])
def test_invalid_games_are_unreadable(tmp_path, arrays, reason):
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    with pytest.raises(UnreadableFile, match=reason):
        read_nfg(path)


@pytest.mark.parametrize(("strategy", "reason"), [
    ("\u202eevil", r"'\\u202eevil' contains a control or format character \(U\+202E\)"),  # right-to-left override
    ("a\u200db", r"U\+200D"),  # zero-width joiner
    ("nul\x00", r"U\+0000"),
    ("x" * 300, "is longer than 256 characters"),
])
def test_names_that_would_print_like_another_are_refused(tmp_path, strategy, reason):
    # Agents' names in logs are quarantined for these; a game's names become agents' names too.
    path = tmp_path / "names.nfg"
    path.write_text(PD.replace('{ "C" "D" } }', f'{{ "C" "{strategy}" }} }}'), encoding="utf-8")
    with pytest.raises(UnreadableFile, match=f"a strategy of Col .*{reason}"):
        read_nfg(path)


def test_names_are_read_as_agents_names_are(tmp_path):
    # NFC and stripped, as the logs' names; an empty name is its number (Gambit's count form); a
    # byte order mark is fine.
    path = tmp_path / "names.nfg"
    path.write_text("\ufeff" + PD.replace('{ "Row" "Col" }', '{ " Row " "" }').replace('{ "C" "D" } }', '{ "Cafe\u0301" "" } }'),
                    encoding="utf-8")
    game = read_nfg(path)
    assert game.labels == ["Row:C", "Row:D", "Player2:Caf\u00e9", "Player2:2"]


def test_gambit_payoff_count_checked(tmp_path):
    path = tmp_path / "short.nfg"
    path.write_text(PD.replace("1 1\n", "1\n"))
    with pytest.raises(UnreadableFile, match="payoffs"):
        read_nfg(path)


def test_a_named_pipe_or_a_folder_is_refused_without_being_opened(tmp_path):
    fifo = tmp_path / "game.nfg"
    os.mkfifo(fifo)  # opening it would wait for a writer forever: read on a thread, so a regression fails, not hangs
    raised: list[Exception] = []

    def read() -> None:
        try:
            read_nfg(fifo)
        except Exception as exc:  # noqa: BLE001 (checked below)
            raised.append(exc)

    reading = threading.Thread(target=read, daemon=True)
    reading.start()
    reading.join(60)
    assert not reading.is_alive(), "reading a FIFO hung"
    assert [str(e) for e in raised] == [f"{fifo}: not a regular file but a named pipe (FIFO): vase reads log files only"]
    (tmp_path / "folder.nfg").mkdir()
    with pytest.raises(UnreadableFile, match="folder.nfg: not a regular file but a folder"):
        read_nfg(tmp_path / "folder.nfg")
    with pytest.raises(UnreadableFile, match="missing.nfg: .*No such file"):
        read_nfg(tmp_path / "missing.nfg")


def test_a_game_file_is_its_own_statistic(tmp_path):
    from pipeline.games.nfg import game_statistics

    path = tmp_path / "pd.nfg"
    path.write_text(PD)
    stats, names = game_statistics(path)
    assert names == ["Row:C", "Row:D", "Col:C", "Col:D"]
    assert stats.kind == "nfg" and stats.agents.tolist() == [0, 1, 2, 3] and stats.extra["game_data"].players == ("Row", "Col")
    assert [names[i] for i in stats.agents[stats.agent_keys.argsort()]] == sorted(names)  # by code point: "Col" < "Row"


def test_two_game_files_on_one_board_are_refused(tmp_path):
    from pipeline.board import Board, reduce
    from pipeline.store import Store

    for name in ("a.nfg", "b.nfg"):
        (tmp_path / name).write_text(PD)
    with pytest.raises(ValueError, match="rates one file, and its sources name 2"):
        reduce(Store(tmp_path / "store"), Board("g", "nfg", (str(tmp_path),), ("deviation",)))
