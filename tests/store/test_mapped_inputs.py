"""Inputs read through a mapping, and records without ids, in a real store: exactly once."""

from __future__ import annotations

import csv
import json
import random

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.logs import Mapping
from pipeline.store import Store

runner = CliRunner()


def battles(n: int, start: int = 0) -> list[dict]:
    """Distinct battles without ids (each its own prompt)."""
    return [{"model_a": f"m{i % 5}", "model_b": f"m{(i + 1) % 5}", "winner": ("model_a", "model_b", "tie")[i % 3],
             "question_id": f"q{start + i}"} for i in range(start, start + n)]


def write_csv(path, rows: list[dict]):
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def stored_rows(store: Store, kind: str = "battles") -> int:
    return sum(p.rows for p in store.partitions(kind))


def test_a_cumulative_resorted_dump_without_ids_is_stored_once(tmp_path):
    day1 = battles(30)
    day2 = day1 + battles(15, start=30)
    random.Random(7).shuffle(day2)
    store = Store(tmp_path / "store")
    first = store.ingest([write_csv(tmp_path / "day1.csv", day1)], "battles")
    (tmp_path / "day2.json").write_text(json.dumps(day2))  # another format, another order
    second = store.ingest([tmp_path / "day2.json"], "battles")
    assert first[0].rows_accepted == 30 and second[0].rows_accepted == 15
    assert stored_rows(store) == 45
    reasons = pq.read_table(store.root / second[0].quarantine).column("reason").to_pylist()
    assert len(reasons) == 30 and all(r.startswith("duplicate battle_id (first in day1.csv") for r in reasons)


def test_identical_battles_count_as_often_as_a_source_holds_them(tmp_path):
    same = {"model_a": "a", "model_b": "b", "winner": "model_a"}
    store = Store(tmp_path / "store")
    store.ingest([write_csv(tmp_path / "twice.csv", [same, same])], "battles")
    assert stored_rows(store) == 2  # a source holding a battle twice holds two battles
    store.ingest([write_csv(tmp_path / "thrice.csv", [same, same, same])], "battles")
    assert stored_rows(store) == 3  # a later dump holding it three times adds one


def test_the_same_bytes_under_another_mapping_are_another_input(tmp_path):
    path = write_csv(tmp_path / "log.csv", [{"left": "a", "right": "b", "winner": "model_a"},
                                            {"left": "b", "right": "c", "winner": "model_b"}])
    store = Store(tmp_path / "store")
    straight = Mapping.parse(columns="model_a=left,model_b=right")
    turned = Mapping.parse(columns="model_a=right,model_b=left")
    assert store.ingest([path], "battles", straight)[0].status == "ingested"
    assert store.ingest([path], "battles", straight)[0].status == "skipped"
    again = store.ingest([path], "battles", turned)[0]
    assert again.status == "ingested" and again.mapping == {"columns": "model_a=right,model_b=left"}
    entries = json.loads((store.root / "manifest.json").read_text())["files"]
    assert sorted(e["mapping"]["columns"] for e in entries) == ["model_a=left,model_b=right", "model_a=right,model_b=left"]
    assert len({e["sha256"] for e in entries}) == 1


def test_bad_mapping_input_exits_2_before_any_store_is_written(tmp_path):
    path = write_csv(tmp_path / "log.csv", [{"left": "a", "right": "b", "winner": "left"}])
    store = tmp_path / "store"
    for options in (["--columns", "model_a=left,model_b=left"], ["--columns", "model_a=lft,model_b=right"],
                    ["--columns", "model_a=left,model_b=right", "--values", "winner:right=model_b"]):
        result = runner.invoke(app, ["ingest", str(path), "--kind", "battles", "--store", str(store), *options])
        assert result.exit_code == 2, result.output
        assert not store.exists()


def test_a_file_missing_columns_names_them_all_and_no_temporary_store(tmp_path):
    path = write_csv(tmp_path / "log.csv", [{"left": "a", "right": "b", "result": "left"}])
    result = runner.invoke(app, ["rate", str(path), "--kind", "battles", "-m", "elo", "--out", str(tmp_path / "out")],
                           env={"COLUMNS": "1000"})
    assert result.exit_code == 1
    assert "missing columns 'model_a', 'model_b', 'winner'" in result.output
    assert "vase-store" not in result.output and "no battles to rate" in result.output


def test_a_run_quarantining_too_much_exits_1_with_the_share_and_top_reasons(tmp_path):
    rows = battles(16) + [{"model_a": "x", "model_b": "x", "winner": "model_a", "question_id": "self"},
                          {"model_a": "x", "model_b": "y", "winner": "nobody", "question_id": "n1"},
                          {"model_a": "x", "model_b": "y", "winner": "nobody", "question_id": "n2"},
                          {"model_a": "", "model_b": "y", "winner": "model_a", "question_id": "m"}]
    path = write_csv(tmp_path / "dirty.csv", rows)
    args = ["rate", str(path), "--kind", "battles", "-m", "copeland", "--out", str(tmp_path / "out")]
    result = runner.invoke(app, args, env={"COLUMNS": "1000"})
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert lines == ["error: 20.0% of the 20 rows read were quarantined, above --max-quarantined 5.0%: 2 'unknown winner value "
                     "(expected one of model_a, model_b, tie, tie (bothbad))'; 1 'a model against itself'; 1 'missing model_a'"]
    assert runner.invoke(app, [*args, "--max-quarantined", "0.25"]).exit_code == 0


def test_records_stored_from_an_earlier_file_do_not_count_towards_the_alarm(tmp_path):
    store = tmp_path / "store"
    day1, day2 = battles(30), battles(45)
    random.Random(3).shuffle(day2)  # not a log that grew: its 30 old battles are read, and quarantined as stored
    for day, rows in (("day1", day1), ("day2", day2)):
        result = runner.invoke(app, ["ingest", str(write_csv(tmp_path / f"{day}.csv", rows)), "--kind", "battles",
                                     "--store", str(store)])
        assert result.exit_code == 0, result.output
    assert "accepted 15 + quarantined 30" in result.output


def test_the_cli_default_is_the_library_default():
    from pipeline.board import MAX_QUARANTINED
    from pipeline.cli_mapping import MAX_QUARANTINED as CLI_DEFAULT

    assert CLI_DEFAULT == MAX_QUARANTINED


FASTCHAT = {"question_id": "q1", "model_a": "vicuna-13b", "model_b": "alpaca-13b", "winner": "model_a", "judge": "arena_user_1",
            "conversation_a": [{"role": "user", "content": "hi"}], "conversation_b": [{"role": "user", "content": "hi"}],
            "turn": 1, "anony": True, "language": "English", "tstamp": 1682351591.1322}
PREFLIB = """# FILE NAME: tiny.soc
# TITLE: tiny
# DATA TYPE: soc
# NUMBER ALTERNATIVES: 3
# ALTERNATIVE NAME 1: a
# ALTERNATIVE NAME 2: b
# ALTERNATIVE NAME 3: c
# NUMBER VOTERS: 3
# NUMBER UNIQUE ORDERS: 2
2: 1,2,3
1: 3,1,2
"""
RPS = 'NFG 1 R "rps" { "p1" "p2" } { 3 3 }\n\n0 0 -1 1 1 -1 1 -1 0 0 -1 1 -1 1 1 -1 0 0\n'


@pytest.mark.parametrize(("preset", "kind", "name", "text", "method", "agents"), [
    ("fastchat", "battles", "battles.json",
     json.dumps([FASTCHAT, FASTCHAT | {"model_a": "alpaca-13b", "model_b": "koala-13b", "winner": "tie", "tstamp": 1682351600}]),
     "elo", {"vicuna-13b", "alpaca-13b", "koala-13b"}),
    ("preflib", "ballots", "tiny.soc", PREFLIB, "borda", {"a", "b", "c"}),
    ("nfg", "nfg", "rps.nfg", RPS, "nash-averaging", None),
])
def test_presets_of_formats_read_as_they_are(tmp_path, preset, kind, name, text, method, agents):
    path = tmp_path / name
    path.write_text(text)
    out = tmp_path / "out"
    result = runner.invoke(app, ["rate", str(path), "--kind", kind, "--preset", preset, "-m", method, "--out", str(out)])
    assert result.exit_code == 0, result.output
    rated = {r["agent"] for r in json.loads((out / "ratings.json").read_text())}
    assert rated == agents if agents else len(rated) == 6  # three strategies of each of two players
    wrong = runner.invoke(app, ["rate", str(path), "--kind", "scores", "--preset", preset, "-m", "borda", "--out", str(out)])
    assert wrong.exit_code == 2


def test_the_report_says_how_each_input_was_read(tmp_path):
    path = write_csv(tmp_path / "log.csv", [{"left": "a", "right": "b", "result": "left"},
                                            {"left": "b", "right": "c", "result": "right"}])
    out = tmp_path / "out"
    result = runner.invoke(app, ["rate", str(path), "--kind", "battles", "-m", "copeland", "--out", str(out),
                                 "--columns", "model_a=left,model_b=right,winner=result", "--values", "winner:left=model_a,right=model_b"])
    assert result.exit_code == 0, result.output
    page = (out / "index.html").read_text()
    assert "read as" in page and "--columns model_a=left,model_b=right,winner=result --values winner:left=model_a,right=model_b" in page
