"""Readers: every format, every kind, every rejection reason, and the row accounting."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

from pipeline.logs import UnreadableFile, read_log

BATTLES = [
    {"battle_id": "b1", "model_a": "x", "model_b": "y", "winner": "model_a", "judge": "j1", "timestamp": "2024-01-01T10:00:00Z"},
    {"battle_id": "b2", "model_a": "y", "model_b": "z", "winner": "tie (bothbad)", "judge": "j2", "timestamp": "2024-01-02T10:00:00Z", "weight": 2.5},
]


def write(path: Path, rows: list[dict]) -> Path:
    """Write rows in the format named by the suffix."""
    if path.suffix == ".csv":
        pl.DataFrame(rows).write_csv(path)
    elif path.suffix == ".json":
        path.write_text(json.dumps(rows))
    elif path.suffix == ".jsonl":
        path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    elif path.suffix == ".parquet":
        pl.DataFrame(rows).write_parquet(path)
    return path


@pytest.mark.parametrize("suffix", [".csv", ".json", ".jsonl", ".parquet"])
def test_every_format_reads_the_same_battles(tmp_path, suffix):
    result = read_log(write(tmp_path / f"b{suffix}", BATTLES), "battles")
    assert result.rows_in == 2 and result.rows_quarantined == 0
    table = result.table.to_pylist()
    assert [r["winner"] for r in table] == ["model_a", "tie (bothbad)"]
    assert [r["weight"] for r in table] == [1.0, 2.5]  # a missing weight is 1
    assert table[1]["timestamp"].isoformat() == "2024-01-02T10:00:00+00:00"


def test_chatbot_arena_format(tmp_path):
    # The Arena dumps: judge, question_id (the prompt), tstamp in epoch seconds, no battle id (one of its content).
    path = write(tmp_path / "arena.jsonl", [
        {"model_a": "gpt-4", "model_b": "claude", "winner": "tie", "judge": "arena_user_1", "question_id": "q7", "tstamp": 1700000000.5},
    ])
    row = read_log(path, "battles").table.to_pylist()[0]
    assert row["battle_id"].startswith("content:") and row["prompt"] == "q7" and row["judge"] == "arena_user_1"
    assert row["timestamp"].timestamp() == 1700000000.5


BAD_BATTLES = [
    ({"model_b": "y", "winner": "model_a"}, "model_a", "missing model_a"),
    ({"model_a": "x", "model_b": "x", "winner": "model_a"}, "model_b", "a model against itself"),
    ({"model_a": "x", "model_b": "y", "winner": "left"}, "winner", "unknown winner value"),
    ({"model_a": "x", "model_b": "y", "winner": "model_b", "weight": "heavy"}, "weight", "weight is not a number"),
    ({"model_a": "x", "model_b": "y", "winner": "model_b", "weight": "nan"}, "weight", "weight is not finite"),
    ({"model_a": "x", "model_b": "y", "winner": "model_b", "weight": "-1"}, "weight", "weight is negative"),
    ({"model_a": "x", "model_b": "y", "winner": "model_b", "timestamp": "yesterday"}, "timestamp", "unparsable timestamp"),
]


@pytest.mark.parametrize(("row", "field", "reason"), BAD_BATTLES, ids=[r[2] for r in BAD_BATTLES])
def test_each_battle_rejection_names_file_line_field_reason(tmp_path, row, field, reason):
    good = {"battle_id": "ok", "model_a": "x", "model_b": "y", "winner": "tie"}
    path = write(tmp_path / "b.jsonl", [good, {"battle_id": "bad", "timestamp": None} | row])
    result = read_log(path, "battles")
    assert (result.rows_in, result.rows_accepted, result.rows_quarantined) == (2, 1, 1)
    bad = result.quarantined.to_pylist()[0]
    assert bad["file"] == str(path) and bad["line"] == 2 and bad["field"] == field
    assert bad["reason"].startswith(reason)
    assert json.loads(bad["record"])["battle_id"] == "bad"


def test_duplicate_battle_ids_keep_the_first(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("battle_id,model_a,model_b,winner\n1,x,y,model_a\n1,x,z,model_b\n2,x,y,tie\n")
    result = read_log(path, "battles")
    assert [r["model_b"] for r in result.table.to_pylist()] == ["y", "y"]
    assert result.quarantined.to_pylist()[0]["reason"] == "duplicate battle_id (first at line 2)"
    assert result.quarantined.to_pylist()[0]["line"] == 3  # CSV data rows start at line 2


def test_unparsable_json_lines_are_quarantined_not_fatal(tmp_path):
    path = tmp_path / "b.jsonl"
    path.write_text('{"model_a": "x", "model_b": "y", "winner": "tie"}\n{oops\n\n[1, 2]\n')
    result = read_log(path, "battles")
    assert (result.rows_in, result.rows_accepted) == (3, 1)
    assert [(q["line"], q["reason"].split(":")[0]) for q in result.quarantined.to_pylist()] == [
        (2, "invalid JSON"), (4, "a record must be a JSON object")]


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_json_record_with_a_key_twice_is_quarantined_not_read_as_its_last_value(tmp_path, suffix):
    records = ['{"battle_id": "1", "model_a": "x", "model_a": "z", "model_b": "y", "winner": "model_a"}',
               '{"battle_id": "2", "model_a": "x", "model_b": "y", "winner": "tie", "features_a": {"n": 1, "n": 2}}',
               '{"battle_id": "3", "model_a": "x", "model_b": "y", "winner": "tie", "features_a": {"n": 1}, "features_b": {"n": 2}}']
    path = tmp_path / f"battles{suffix}"
    path.write_text("\n".join(records) + "\n" if suffix == ".jsonl" else "[" + ",\n".join(records) + "]")
    result = read_log(path, "battles")
    assert result.table.column("battle_id").to_pylist() == ["3"]
    assert [(q["line"], q["reason"]) for q in result.quarantined.to_pylist()] == [
        (1, "the key 'model_a' appears twice in one object: which value is meant cannot be known"),
        (2, "the key 'n' appears twice in one object: which value is meant cannot be known")]


def test_unreadable_files_raise_with_the_path(tmp_path):
    with pytest.raises(UnreadableFile, match="no such file"):
        read_log(tmp_path / "missing.csv", "battles")
    (tmp_path / "x.xlsx").write_text("")
    with pytest.raises(UnreadableFile, match="unknown format"):
        read_log(tmp_path / "x.xlsx", "battles")
    with pytest.raises(UnreadableFile, match="missing column 'winner'"):
        read_log(write(tmp_path / "m.csv", [{"model_a": "x", "model_b": "y"}]), "battles")
    (tmp_path / "a.json").write_text("[{")
    with pytest.raises(UnreadableFile, match="invalid JSON"):
        read_log(tmp_path / "a.json", "battles")
    with pytest.raises(ValueError, match="unknown log kind"):
        read_log(tmp_path / "a.json", "tournaments")


def test_games_by_place_with_ties(tmp_path):
    path = tmp_path / "g.csv"
    path.write_text("game_id,player,place\ng1,a,1\ng1,b,2\ng1,c,2\n")
    rows = read_log(path, "games").table.to_pylist()
    assert [(r["player"], r["place"], r["score"]) for r in rows] == [("a", 1.0, None), ("b", 2.0, None), ("c", 2.0, None)]


def test_games_by_score(tmp_path):
    path = write(tmp_path / "g.jsonl", [{"game": "g1", "player": "a", "score": 3}, {"game": "g1", "player": "b", "score": 7.5}])
    rows = read_log(path, "games").table.to_pylist()
    assert [(r["player"], r["score"], r["place"]) for r in rows] == [("a", 3.0, None), ("b", 7.5, None)]


BAD_GAMES = [
    ("g1,,1\ng1,b,2\ng1,c,3", 2, "player", "missing player"),
    ("g1,a,first\ng1,b,2\ng1,c,3", 2, "place", "place is not a number"),
    ("g1,a,0\ng1,b,2\ng1,c,3", 2, "place", "place must be 1 or more"),
    ("g1,a,1\ng1,b,2\ng1,a,3", 4, "player", "duplicate player in game (first at line 2)"),
    (",a,1\ng1,b,2\ng1,c,3", 2, "game_id", "missing game_id"),
]


@pytest.mark.parametrize(("body", "line", "field", "reason"), BAD_GAMES, ids=[b[3] for b in BAD_GAMES])
def test_each_game_rejection(tmp_path, body, line, field, reason):
    path = tmp_path / "g.csv"
    path.write_text("game_id,player,place\n" + body + "\n")
    result = read_log(path, "games")
    assert result.rows_accepted == 2 and result.rows_quarantined == 1  # the rest of the game is kept
    assert [(q["line"], q["field"], q["reason"]) for q in result.quarantined.to_pylist()] == [(line, field, reason)]


def test_a_game_with_fewer_than_two_players_is_quarantined_whole(tmp_path):
    path = tmp_path / "g.csv"
    path.write_text("game_id,player,place\ng1,a,1\ng1,b,x\ng2,c,1\ng2,d,2\n")
    result = read_log(path, "games")
    assert {r["game_id"] for r in result.table.to_pylist()} == {"g2"}
    assert [(q["line"], q["reason"]) for q in result.quarantined.to_pylist()] == [
        (2, "game has fewer than two players"), (3, "place is not a number")]


def test_rows_of_a_game_must_agree_on_its_timestamp(tmp_path):
    path = tmp_path / "g.csv"
    path.write_text("game_id,player,place,timestamp\ng1,a,1,2024-01-01\ng1,b,2,2024-01-02\n")
    result = read_log(path, "games")
    assert result.rows_accepted == 0
    assert {q["reason"] for q in result.quarantined.to_pylist()} == {"rows of one game disagree on its timestamp"}


def test_wide_score_table(tmp_path):
    # First column is the task; an empty cell is "not run", not a row; a bad cell is a quarantined row.
    path = tmp_path / "s.csv"
    path.write_text("task,m1,m2,m3\nt1,1,2,3\nt2,5,,oops\nt3,0.5,0.25,\n")
    result = read_log(path, "scores")
    assert result.rows_in == 7
    assert [(r["task"], r["agent"], r["score"]) for r in result.table.to_pylist()] == [
        ("t1", "m1", 1.0), ("t1", "m2", 2.0), ("t1", "m3", 3.0), ("t3", "m1", 0.5), ("t3", "m2", 0.25)]
    assert [(q["line"], q["field"], q["reason"]) for q in result.quarantined.to_pylist()] == [
        (3, "score", "score is not a number"), (3, "task", "task has fewer than two agents")]


def test_score_tables_carry_an_optional_task_group(tmp_path):
    # A wide table's group column is the task's, not an agent; blank is no group.
    wide = tmp_path / "wide.csv"
    wide.write_text("task,Group,m1,m2\nt1,coding,1,2\nt2, ,3,4\n")
    result = read_log(wide, "scores")
    assert [(r["task"], r["agent"], r["category"]) for r in result.table.to_pylist()] == [
        ("t1", "m1", "coding"), ("t1", "m2", "coding"), ("t2", "m1", None), ("t2", "m2", None)]
    # Rows of one task in two groups: the task is quarantined whole, one line per row naming the field.
    long = write(tmp_path / "long.csv", [
        {"task": "t1", "agent": "a", "score": 1, "category": "coding"},
        {"task": "t1", "agent": "b", "score": 2, "category": "math"},
        {"task": "t2", "agent": "a", "score": 1, "category": "math"},
        {"task": "t2", "agent": "b", "score": 2, "category": "math"},
    ])
    result = read_log(long, "scores")
    assert {r["task"] for r in result.table.to_pylist()} == {"t2"}
    assert [(q["file"], q["line"], q["field"], q["reason"]) for q in result.quarantined.to_pylist()] == [
        (str(long), line, "category", "rows of one task disagree on category") for line in (2, 3)]


def test_long_score_table_with_direction_and_weights(tmp_path):
    path = write(tmp_path / "s.csv", [
        {"task": "latency", "model": "a", "score": 3, "higher_is_better": "false", "task_weight": 2},
        {"task": "latency", "model": "b", "score": 1, "higher_is_better": "false", "task_weight": 2},
        {"task": "latency", "model": "c", "score": 1, "higher_is_better": "maybe", "task_weight": 2},
    ])
    result = read_log(path, "scores")
    assert [(r["agent"], r["higher_is_better"], r["task_weight"]) for r in result.table.to_pylist()] == [
        ("a", False, 2.0), ("b", False, 2.0)]
    assert result.quarantined.to_pylist()[0]["reason"] == "higher_is_better is not a boolean"


def test_ballots_weak_orders_canonical_text(tmp_path):
    path = write(tmp_path / "v.jsonl", [{"ballot_id": "v1", "ranking": " c = b > a ", "weight": 2}])
    row = read_log(path, "ballots").table.to_pylist()[0]
    assert (row["ranking"], row["agents"], row["levels"], row["weight"]) == ("b=c>a", ["b", "c", "a"], [0, 0, 1], 2.0)


BAD_BALLOTS = [
    ("a>b>a", "ranking", "ranking names a player twice: a"),
    ("c>b=a>b=a", "ranking", "ranking names a player twice: a"),  # the first repeat by level, then name
    ("q = q", "ranking", "ranking names a player twice: q"),
    ("", "ranking", "empty ranking"),
    ("a>>b", "ranking", "malformed ranking (an empty name)"),
    ("a>a>", "ranking", "malformed ranking (an empty name)"),  # an empty name before a repeat
]


@pytest.mark.parametrize(("ranking", "field", "reason"), BAD_BALLOTS, ids=[b[2] for b in BAD_BALLOTS])
def test_each_ballot_rejection(tmp_path, ranking, field, reason):
    path = write(tmp_path / "v.jsonl", [{"ranking": "a>b"}, {"ranking": ranking}])
    result = read_log(path, "ballots")
    assert [(q["line"], q["field"], q["reason"]) for q in result.quarantined.to_pylist()] == [(2, field, reason)]


PREFLIB_HEADER = "# FILE NAME: x\n# ALTERNATIVE NAME 1: Ann\n# ALTERNATIVE NAME 2: Bob\n# ALTERNATIVE NAME 3: Cy\n"


@pytest.mark.parametrize(("suffix", "body", "accepted", "reasons"), [
    (".soc", "3: 1,2,3\n2: 3,1,2\n1: 1,{2,3}\n1: 1,2\n", ["Ann>Bob>Cy", "Cy>Ann>Bob"],
     ["a tie in a strict .soc file", "an incomplete order in a complete .soc file"]),
    (".soi", "3: 1,2\n1: 2,{1,3}\n", ["Ann>Bob"], ["a tie in a strict .soi file"]),
    (".toc", "2: {1,2},3\n1: 1\n", ["Ann=Bob>Cy"], ["an incomplete order in a complete .toc file"]),
    (".toi", "2: {1,2}\n1: 3,9\n", ["Ann=Bob"], ["unknown alternative 9"]),
])
def test_preflib(tmp_path, suffix, body, accepted, reasons):
    path = tmp_path / f"p{suffix}"
    path.write_text(PREFLIB_HEADER + body)
    result = read_log(path, "ballots")
    assert [r["ranking"] for r in result.table.to_pylist()] == accepted
    assert [q["reason"] for q in result.quarantined.to_pylist()] == reasons
    assert result.table.to_pylist()[0]["weight"] == float(body.split(":")[0])  # counts become weights


def test_preflib_holds_ballots_only(tmp_path):
    path = tmp_path / "p.soc"
    path.write_text(PREFLIB_HEADER + "1: 1,2,3\n")
    with pytest.raises(UnreadableFile, match=r"\.soc files hold ballots, not battles"):
        read_log(path, "battles")


@pytest.mark.parametrize("kind", ["battles", "games", "scores", "ballots"])
def test_accounting_balances_on_garbage(tmp_path, kind):
    # Random junk in every column: whatever happens, no row is lost or invented.
    import numpy as np

    rng = np.random.default_rng(7)
    junk = ["", "x", "y", "model_a", "tie", "1", "-2", "nan", "a>b", "a>a", "2024-01-01", "g1"]
    columns = {"battles": ["battle_id", "model_a", "model_b", "winner", "weight"],
               "games": ["game_id", "player", "place", "weight"],
               "scores": ["task", "agent", "score", "task_weight"],
               "ballots": ["ballot_id", "ranking", "weight"]}[kind]
    rows = [{c: str(rng.choice(junk)) for c in columns} for _ in range(300)]
    result = read_log(write(tmp_path / "junk.csv", rows), kind)
    assert result.rows_in == 300 == result.rows_accepted + result.rows_quarantined
    assert isinstance(result.table, pa.Table) and set(result.quarantined.column("reason").to_pylist()) != {None}


def test_nfc_keeps_the_type_of_every_chunk():
    import pyarrow as pa

    from pipeline.logs.records import nfc_text

    mixed = pa.chunked_array([["plain"], ["Pe\u0301rez"]])  # only the second chunk needs normalising
    assert nfc_text(mixed).to_pylist() == ["plain", "P\u00e9rez"] and nfc_text(mixed).type == pa.string()


TEXT_TIMESTAMPS = [  # (CSV text, the stored timestamp or the quarantine's reason)
    (" 1700000000 ", "2023-11-14T22:13:20+00:00"),
    ("2024-01-02T03:04:05Z", "2024-01-02T03:04:05+00:00"),
    ("   ", None),
    (" 1e20 ", "timestamp is not a finite number of seconds within the years 1 to 9999"),
    ("inf", "timestamp is not a finite number of seconds within the years 1 to 9999"),
    (" yesterday ", "unparsable timestamp"),
]


@pytest.mark.parametrize("kind", ["battles", "games"])
def test_text_timestamps_are_stripped_once_and_each_failure_names_its_reason(tmp_path, kind):
    # Padded numbers and dates parse, blank text is no timestamp, and a present value that does not
    # parse is quarantined as out of range (a number) or unparsable (anything else), in every kind.
    path = tmp_path / f"{kind}.csv"
    if kind == "battles":
        rows = [f'b{i},x,y,tie,"{stamp}"' for i, (stamp, _) in enumerate(TEXT_TIMESTAMPS)]
        path.write_text("battle_id,model_a,model_b,winner,timestamp\n" + "\n".join(rows) + "\n")
    else:
        rows = [f'g{i},{player},{player},"{stamp}"' for i, (stamp, _) in enumerate(TEXT_TIMESTAMPS) for player in (1, 2)]
        path.write_text("game_id,player,score,timestamp\n" + "\n".join(rows) + "\n")
    result = read_log(path, kind)
    seats = 1 if kind == "battles" else 2
    kept = [expected for _, expected in TEXT_TIMESTAMPS if expected is None or expected[0].isdigit()]
    stored = [row["timestamp"] for row in result.table.to_pylist()][::seats]
    assert [None if t is None else t.isoformat() for t in stored] == kept
    failed = [expected for _, expected in TEXT_TIMESTAMPS if expected is not None and not expected[0].isdigit()]
    assert [(field, reason) for _, field, reason in reasons(result)][::seats] == [("timestamp", r) for r in failed]


def reasons(result) -> list[tuple[int, str, str]]:
    return [(r["line"], r["field"], r["reason"]) for r in result.quarantined.to_pylist()]
