"""Games: game ids and players cleaned once per distinct value, with the rows and quarantine of
the same text cleaned row by row, whatever the format and however Parquet stores the text."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.logs.parquet_files import label_columns
from tests.conftest import assert_labels_are_cleaned_dictionaries, numbered, read_alike, read_rows_and_quarantine, write_label_formats

# Per game (game id, player, place, timestamp, weight): padded names and ids, case kept apart (games
# do not lower-case), one name in two Unicode spellings (NFC: one player), a zero-width space, blank
# names and ids, names used only by rejected rows, games whose rows disagree on their time (two
# times; a time and none) or weight, one whose rows agree on having no time and a weight of zero
# (0 and -0), one left with a single player.
GAME = [
    (" g{n}", " alice ", "1", "2024-01-01T10:00:00Z", "1"),
    ("g{n} ", "Alice", "2", "2024-01-01T10:00:00Z", "1"),
    ("g{n}", "caf\u00e9", "3", "2024-01-01T10:00:00Z", "1"),
    ("g{n}", "cafe\u0301", "4", "2024-01-01T10:00:00Z", "1"),  # the same player as the row above
    ("g{n}", "alice", "5", "2024-01-01T10:00:00Z", "1"),  # stripped: the first row's player
    ("g{n}", "bo\u200bb", "6", "2024-01-01T10:00:00Z", "1"),
    ("g{n}", "   ", "7", "2024-01-01T10:00:00Z", "1"),
    ("  ", "dan", "1", "2024-01-01T10:00:00Z", "1"),
    ("h{n}", "only-rejected", "x", "2024-01-02T10:00:00Z", "1"),
    ("h{n}", "erin", "1", "2024-01-02T10:00:00Z", "1"),  # alone once the row above is out
    ("k{n}", "frank", "1", "2024-01-03T10:00:00Z", "1"),
    ("k{n}", "gina", "2", "2024-01-04T10:00:00Z", "1"),
    ("m{n}", "erin", "2", None, "0"),
    ("m{n}", "\tfrank", "1", "", "-0"),  # no time and weight zero, as the row above
    ("n{n}", "erin", "1", "2024-01-05T10:00:00Z", "1"),
    ("n{n}", "frank", "2", "  ", "1"),  # a time and none
    ("p{n}", "erin", "1", "", "1"),
    ("p{n}", "frank", "2", "", "2"),
]


def adversarial_games(games: int = 20) -> pa.Table:
    return numbered(GAME, games, ("game_id", "player", "place", "timestamp", "weight"))


def read(path) -> tuple[list[dict], list[tuple]]:
    return read_rows_and_quarantine(path, "games")


@pytest.fixture
def files(tmp_path):
    return write_label_formats(adversarial_games(), tmp_path, "games")


def test_every_format_gives_the_same_games_and_quarantine(files):
    assert label_columns(pq.read_metadata(files["dictionary"])) == ["player", "place", "timestamp", "weight"]  # read as categoricals
    rows, quarantined = read_alike(files, "games")
    assert {r["player"] for r in rows} == {"alice", "Alice", "caf\u00e9", "erin", "frank"}
    assert {r["game_id"] for r in rows} == {f"{prefix}{n}" for prefix in "gm" for n in range(20)}
    reasons = {(line % len(GAME), field, reason.split(" (")[0].split(",")[0]) for line, field, reason, _ in quarantined}
    assert reasons == {(4, "player", "duplicate player in game"), (5, "player", "duplicate player in game"),
                       (6, "player", "player contains a control or format character"), (7, "player", "missing player"),
                       (8, "game_id", "missing game_id"), (9, "place", "place is not a number"),
                       (10, "game_id", "game has fewer than two players"),
                       (11, "timestamp", "rows of one game disagree on its timestamp"),
                       (12, "timestamp", "rows of one game disagree on its timestamp"),
                       (15, "timestamp", "rows of one game disagree on its timestamp"),
                       (16, "timestamp", "rows of one game disagree on its timestamp"),
                       (17, "weight", "rows of one game disagree on its weight"),
                       (0, "weight", "rows of one game disagree on its weight")}


def test_a_quarantined_row_keeps_the_text_as_the_file_gave_it(files):
    _, quarantined = read(files["dictionary"])
    records = {line % len(GAME): record for line, _, _, record in quarantined}
    assert '"player":"   "' in records[7] and '"game_id":"  "' in records[8]


def test_labels_are_dictionary_arrays_of_cleaned_text_until_stored(files):
    for path in files.values():
        assert_labels_are_cleaned_dictionaries(path, "games", ("game_id", "player"))


def test_players_stored_as_numbers_or_as_a_dictionary_with_unused_values(tmp_path):
    names = pa.array(["zed", "  amy", "\t", "never-used", "bea"])  # (Parquet holds no null in a dictionary)
    players = pa.DictionaryArray.from_arrays(pa.array([0, 1, 4, None, 2, 1], pa.int32()), names)
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"game_id": [7, 7, 7, 7, 8, 8], "player": players, "place": [1, 2, 3, 4, 1, 2]}), path)
    rows, quarantined = read(path)
    assert [(r["game_id"], r["player"]) for r in rows] == [("7", "zed"), ("7", "amy"), ("7", "bea")]
    assert [q[:3] for q in quarantined] == [(4, "player", "missing player"), (5, "player", "missing player"),
                                            (6, "game_id", "game has fewer than two players")]


def test_game_ids_stored_as_a_dictionary(tmp_path):
    players = [f"p{i}" for i in range(150)]
    table = pa.table({"game_id": [" g1", "g1 "] * 75 + ["g2"] * 150, "player": players * 2, "place": list(range(1, 151)) * 2})
    files = write_label_formats(table.append_column("timestamp", pa.nulls(300, pa.string())), tmp_path, "games", 100)
    assert "game_id" in label_columns(pq.read_metadata(files["dictionary"]))
    rows, quarantined = read(files["dictionary"])
    assert read(files["plain"]) == (rows, quarantined) and not quarantined
    assert [r["game_id"] for r in rows] == ["g1"] * 150 + ["g2"] * 150
