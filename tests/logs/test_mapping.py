"""Bring your own data: a `Mapping` (renames, value maps, constants, name tables, filters, wide
tables, splits) applied in the read; refusals before any store is written; ids of content."""

from __future__ import annotations

import json

import polars as pl
import pytest

from pipeline.logs import Mapping, MappingError, UnreadableFile, log_kind, read_log
from pipeline.logs.presets import PRESETS, with_preset


def csv(path, text: str):
    path.write_text(text.strip() + "\n")
    return path


LLMFAO_LIKE = """
id,prompt,model_x,model_y,worker,winner,left,right
0,8,97,98,58,tie,Airoboros,Weaver
1,8,29,98,83,left,Alpaca,Weaver
2,5,29,97,58,right,Alpaca,Airoboros
"""


def mapped(preset: str = "", **texts) -> Mapping:
    return with_preset(preset, **texts)


def test_renames_and_value_maps_read_a_foreign_battle_log(tmp_path):
    path = csv(tmp_path / "crowd.csv", LLMFAO_LIKE)
    mapping = mapped(columns="model_a=left,model_b=right,judge=worker", values=["winner:left=model_a,right=model_b,tie=tie"])
    mapping.check(log_kind("battles"))
    rows = read_log(path, "battles", mapping=mapping).table.to_pylist()
    assert [(r["model_a"], r["model_b"], r["winner"], r["judge"]) for r in rows] == [
        ("Airoboros", "Weaver", "tie", "58"), ("Alpaca", "Weaver", "model_a", "83"), ("Alpaca", "Airoboros", "model_b", "58")]


def test_a_value_without_a_mapping_is_refused_from_the_sample_and_quarantined_in_the_read(tmp_path):
    path = csv(tmp_path / "crowd.csv", LLMFAO_LIKE)
    mapping = mapped(columns="model_a=left,model_b=right", values=["winner:left=model_a,right=model_b"])
    with pytest.raises(MappingError, match=r"winner holds a value with no mapping \(tie\): --values winner maps only left, right"):
        mapping.check_files([path], log_kind("battles"))
    result = read_log(path, "battles", mapping=mapping)
    assert result.rows_accepted == 2
    assert result.quarantined.column("reason").to_pylist() == ["winner is a value with no mapping (tie)"]


@pytest.mark.parametrize(("texts", "says"), [
    ({"columns": "model_a=left,model_b=left"}, "model_a, model_b are all mapped to 'left': two columns cannot be one"),
    ({"columns": "model_a=left,model_a=right"}, "'model_a' is given twice"),
    ({"columns": "modle_a=left"}, "'modle_a': not a column of battles"),
    ({"values": ["winner:left=modle_a"]}, "winner value 'modle_a' is not one battles knows"),
    ({"columns": "model_a=left", "constants": "model_a=x"}, "both mapped to a column"),
    ({"columns": "model_a"}, "expected NAME=VALUE"),
    ({"preset": "nfg"}, "preset nfg reads nfg, not battles"),
    ({"preset": "elo-dump"}, "unknown preset 'elo-dump'"),
])
def test_bad_mapping_input_is_one_line_refused_before_reading(texts, says):
    with pytest.raises(MappingError, match=says.replace("(", r"\(").replace(")", r"\)")) as error:
        mapped(**texts).check(log_kind("battles"))
    assert "\n" not in str(error.value)


def test_a_mapped_column_the_file_lacks_is_named_with_every_other(tmp_path):
    path = csv(tmp_path / "crowd.csv", LLMFAO_LIKE)
    with pytest.raises(MappingError, match=r"no column 'lft', 'rght' \(the file has"):
        mapped(columns="model_a=lft,model_b=rght").check_files([path], log_kind("battles"))


def test_a_file_missing_columns_names_all_of_them(tmp_path):
    path = csv(tmp_path / "crowd.csv", LLMFAO_LIKE)
    with pytest.raises(UnreadableFile) as error:
        read_log(path, "battles")
    assert "missing columns 'model_a', 'model_b'; the file has id, prompt" in str(error.value)
    assert "--columns model_a=COLUMN" in str(error.value)


def test_agents_are_named_from_a_lookup_table_and_an_unknown_id_is_quarantined(tmp_path):
    players = csv(tmp_path / "players.csv", "player_id,name\n1,Serena Williams\n2,Venus Williams\n3,Martina Hingis")
    path = csv(tmp_path / "matches.csv", "winner_id,loser_id,tourney_date\n1,2,20240101\n3,1,20240102\n9,2,20240103")
    mapping = mapped(preset="winner-loser", columns="model_a=winner_id,model_b=loser_id,timestamp=tourney_date",
                     names=f"{players}:player_id=name")
    result = read_log(path, "battles", mapping=mapping)
    rows = result.table.to_pylist()
    assert [(r["model_a"], r["model_b"], r["winner"]) for r in rows] == [
        ("Serena Williams", "Venus Williams", "model_a"), ("Martina Hingis", "Serena Williams", "model_a")]
    assert [r["timestamp"].date().isoformat() for r in rows] == ["2024-01-01", "2024-01-02"]  # compact ISO dates
    assert result.quarantined.column("reason").to_pylist() == ["model_a is the id 9, which players.csv does not name"]


def test_names_joined_from_several_columns_and_a_table_repeating_an_id_is_refused(tmp_path):
    drivers = csv(tmp_path / "drivers.csv", "driverId,forename,surname\n1,Lewis,Hamilton\n2,Nick,Heidfeld")
    assert mapped(names=f"{drivers}:driverId=forename+surname").names.lookup() == (["1", "2"], ["Lewis Hamilton", "Nick Heidfeld"])
    twice = csv(tmp_path / "twice.csv", "id,name\n1,a\n1,b")
    with pytest.raises(MappingError, match="id '1' appears twice"):
        mapped(names=f"{twice}:id=name").names.lookup()


def test_a_wide_game_table_is_melted_into_games(tmp_path):
    # Diplomacy's shape: one row per game, a column per power; 0 lost, 1 solo, N a member of an N-way draw.
    path = csv(tmp_path / "wide.csv", "game_id,outcome,England,France,Italy\n1,1,1,0,0\n2,2,2,2,0\n3,1,0,0,")
    mapping = mapped(seats="England,France,Italy", values=["score:0=0,*=1"])
    mapping.check(log_kind("games"))
    result = read_log(path, "games", mapping=mapping)
    games = {}
    for r in result.table.to_pylist():
        games.setdefault(r["game_id"], {})[r["player"]] = r["score"]
    # an empty cell is a seat not in the game (game 3: Italy), and game 3 keeps its two players
    assert games == {"1": {"England": 1, "France": 0, "Italy": 0}, "2": {"England": 1, "France": 1, "Italy": 0},
                     "3": {"England": 0, "France": 0}}


def test_seats_with_a_player_column_and_a_place_column(tmp_path):
    path = csv(tmp_path / "grid.csv", "race,p1,r1,p2,r2,p3,r3\nmonaco,ham,2,ver,1,lec,3")
    mapping = mapped(columns="game_id=race", seats="place:p1=r1,p2=r2,p3=r3")
    rows = read_log(path, "games", mapping=mapping).table.to_pylist()
    assert sorted((r["place"], r["player"]) for r in rows) == [(1, "ver"), (2, "ham"), (3, "lec")]


LONG = """
release,model,task,score,category
2024-06-24,a,math,1,Math
2024-06-24,b,math,2,Math
2024-08-31,a,math,3,Math
2024-08-31,b,math,1,Math
"""


def test_a_file_mixing_releases_is_refused_naming_the_column_and_where_takes_one(tmp_path):
    path = csv(tmp_path / "long.csv", LONG)
    with pytest.raises(UnreadableFile, match=r"rows repeat \(task, agent\) across the 2 values of column 'release': rate one "
                                             r"with --where release=2024-06-24, or each with --by release"):
        read_log(path, "scores")
    rows = read_log(path, "scores", mapping=mapped(where=["release=2024-08-31"])).table.to_pylist()
    assert [(r["agent"], r["score"]) for r in rows] == [("a", 3), ("b", 1)]
    unequal = read_log(path, "scores", mapping=mapped(where=["release!=2024-08-31"])).table.to_pylist()
    assert [(r["agent"], r["score"]) for r in unequal] == [("a", 1), ("b", 2)]


def test_a_split_column_becomes_the_category_and_names_each_task_within_it(tmp_path):
    path = csv(tmp_path / "long.csv", LONG)
    rows = read_log(path, "scores", mapping=Mapping().with_split("release")).table.to_pylist()
    assert {(r["task"], r["category"]) for r in rows} == {("2024-06-24/math", "2024-06-24"), ("2024-08-31/math", "2024-08-31")}


def test_a_winner_column_naming_the_winner(tmp_path):
    path = csv(tmp_path / "shootouts.csv", "date,home_team,away_team,winner\n1967-08-22,India,Taiwan,Taiwan\n1971-11-14,Korea,Vietnam,Korea")
    mapping = mapped(columns="model_a=home_team,model_b=away_team,timestamp=date", values=["winner:@model_a=model_a,@model_b=model_b"])
    assert [r["winner"] for r in read_log(path, "battles", mapping=mapping).table.to_pylist()] == ["model_b", "model_a"]


def test_arena_preset_reads_conv_metadata_as_style_features(tmp_path):
    meta = {"sum_assistant_a_tokens": 120, "sum_assistant_b_tokens": 80, "header_count_a": {"h1": 1, "h2": 2},
            "header_count_b": {"h1": 0}, "list_count_a": {"ordered": 1, "unordered": 3}, "list_count_b": {"ordered": 0, "unordered": 0},
            "bold_count_a": {"**": 2, "__": 1}, "bold_count_b": {"**": 0, "__": 0}}
    path = tmp_path / "arena.json"
    path.write_text(json.dumps([{"model_a": "x", "model_b": "y", "winner": "model_a", "judge": "u1", "tstamp": 1700000000,
                                 "conv_metadata": meta}]))
    row = read_log(path, "battles", mapping=mapped(preset="arena")).table.to_pylist()[0]
    assert {f["name"]: (f["a"], f["b"]) for f in row["features"]} == {"len": (120, 80), "header": (3, 0), "list": (4, 0), "bold": (3, 0)}
    assert set(PRESETS) >= {"arena", "fastchat", "winner-loser", "home-away", "preflib", "nfg"}


def test_the_record_and_digest_say_what_the_mapping_does(tmp_path):
    a = mapped(columns="model_a=left,model_b=right")
    assert a.record() == {"columns": "model_a=left,model_b=right"}
    assert a.digest != mapped(columns="model_a=right,model_b=left").digest
    assert mapped().digest == "" and not mapped()


def test_weights_below_the_grid_and_compact_dates_are_read_as_meant(tmp_path):
    path = csv(tmp_path / "b.csv", "model_a,model_b,winner,weight,timestamp\nx,y,model_a,1e-9,20240101\nx,y,model_b,0.5,20240229")
    result = read_log(path, "battles")
    assert result.quarantined.column("reason").to_pylist() == [
        "weight is below 2^-24, the grid of exact sums, where it would count as 0"]
    assert [r["timestamp"].isoformat() for r in result.table.to_pylist()] == ["2024-02-29T00:00:00+00:00"]
    assert pl.from_arrow(result.table).height == 1


def test_an_integer_column_of_compact_dates_is_dates_not_epoch_seconds(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "b.parquet"
    pq.write_table(pa.table({"model_a": ["x", "x"], "model_b": ["y", "y"], "winner": ["model_a", "tie"],
                             "timestamp": pa.array([20240101, 1700000000], pa.int64())}), path)
    stamps = [r["timestamp"].isoformat() for r in read_log(path, "battles").table.to_pylist()]
    assert stamps == ["2024-01-01T00:00:00+00:00", "2023-11-14T22:13:20+00:00"]


def test_inspect_suggests_the_arena_preset_for_a_dump_with_conv_metadata(tmp_path):
    from pipeline.logs.inspect import inspect

    path = tmp_path / "arena.jsonl"
    rows = [{"model_a": a, "model_b": b, "winner": w, "judge": "u", "tstamp": 1700000000 + i,
             "conv_metadata": {"sum_assistant_a_tokens": 10 + i, "sum_assistant_b_tokens": 20}}
            for i, (a, b, w) in enumerate([("x", "y", "model_a"), ("y", "z", "tie"), ("z", "x", "model_b")])]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    found = inspect(path)
    assert found.kind == "battles" and found.options == ["--preset", "arena"] and found.accepted == 3
    assert found.command.startswith(f"vase rate {path} --kind battles --preset arena -m elo")
