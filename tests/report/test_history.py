"""The nightly history: rows per run, board, method and agent; rank changes; `vase history`."""

from __future__ import annotations

import json

import polars as pl
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.methods import Spec
from pipeline.report import HISTORY_FILE, append_history, read_history
from pipeline.report.history import history_views, rank_changes
from tests.report.conftest import RUNS
from tests.report.pages import Page


def test_a_second_run_over_one_new_file_shows_rank_changes(demo_nightly):
    history = read_history(demo_nightly / HISTORY_FILE)
    assert sorted(set(history.get_column("run_id").to_list())) == list(RUNS)
    spec = Spec.parse("m-elo:bootstrap=200").canonical  # as the board names it
    previous, before = rank_changes(history, "arena", spec, RUNS[1])
    assert previous == RUNS[0] and "newcomer-1b" not in before
    now = dict(history.filter((pl.col("run_id") == RUNS[1]) & (pl.col("method") == spec)).select("agent", "rank").iter_rows())
    assert now["gpt-4o-mini"] < before["gpt-4o-mini"]  # 300 new wins against the baseline moved it up
    page = Page.read(demo_nightly / "latest" / "arena" / "index.html")
    board = page.tables_of("leaderboard")[0]
    mini = board.row_of("gpt-4o-mini")
    gained = before["gpt-4o-mini"] - now["gpt-4o-mini"]
    assert mini["change"] == (f"\u25b2 {gained}", "up num")
    assert board.row_of("newcomer-1b")["change"][0] == "new"
    for agent in ("gpt-4o", "claude-3-opus-20240229"):
        shift = before[agent] - now[agent]
        assert board.row_of(agent)["change"][0] == ("=" if shift == 0 else f"\u25b2 {shift}" if shift > 0 else f"\u25bc {-shift}")
    assert page.images_of("history"), "a ratings-over-time plot once there are two runs"
    # The first run's own report had nothing to compare with.
    first = Page.read(demo_nightly / "runs" / RUNS[0] / "arena" / "index.html")
    assert "change" not in first.tables_of("leaderboard")[0].header and not first.images_of("history")


def test_history_rows_match_the_published_ratings(demo_nightly):
    history = read_history(demo_nightly / HISTORY_FILE).filter(pl.col("run_id") == RUNS[1])
    for board in ("arena", "f1", "council", "llmfao"):
        records = json.loads((demo_nightly / "latest" / board / "ratings.json").read_text())
        rows = history.filter(pl.col("board") == board).sort(["method", "rank", "agent"])
        assert rows.height == len(records)
        got = {(r["method"], r["agent"]): (r["rank"], r["score"], r["ci_low"]) for r in rows.iter_rows(named=True)}
        assert got == {(r["method"], r["agent"]): (r["rank"], r["score"], r.get("ci_low")) for r in records}


def test_append_is_idempotent_and_bounded(demo_nightly, tmp_path):
    path = tmp_path / HISTORY_FILE
    for run_id in RUNS:
        append_history(path, demo_nightly / "runs" / run_id, run_id)
    once = path.read_bytes()
    append_history(path, demo_nightly / "runs" / RUNS[1], RUNS[1])  # the same run again replaces its rows
    assert path.read_bytes() == once
    assert path.read_bytes() == (demo_nightly / HISTORY_FILE).read_bytes()
    append_history(path, demo_nightly / "runs" / RUNS[1], RUNS[1], max_runs=1)
    assert set(read_history(path).get_column("run_id").to_list()) == {RUNS[1]}
    assert not list(tmp_path.glob(".*tmp*"))  # written under a temporary name, then renamed


def test_a_history_cut_short_is_kept_aside_never_written_over(demo_nightly, tmp_path, caplog):
    path = tmp_path / HISTORY_FILE
    append_history(path, demo_nightly / "runs" / RUNS[0], RUNS[0])
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])  # cut short by hand, or by a full disk
    shown = CliRunner().invoke(app, ["history", str(path)])
    assert shown.exit_code == 1 and "cannot be read as a history" in shown.output and "Traceback" not in shown.output
    append_history(path, demo_nightly / "runs" / RUNS[1], RUNS[1])
    kept = tmp_path / f"{HISTORY_FILE}.unreadable-{RUNS[1]}"
    assert kept.read_bytes() == whole[: len(whole) // 2] and kept.name in caplog.text
    assert set(read_history(path).get_column("run_id").to_list()) == {RUNS[1]}


def test_history_views_follow_the_latest_order(demo_nightly):
    history = read_history(demo_nightly / HISTORY_FILE)
    (view,) = history_views(history, board="arena", method="copeland", runs=5, top=3)
    assert view.runs == list(RUNS) and len(view.agents) == 3
    ranks = [r[-1] for r in view.ranks]
    assert ranks == sorted(ranks)
    assert history_views(history, board="nope") == []


def test_history_command_prints_every_name_whole(demo_nightly):
    result = CliRunner().invoke(app, ["history", str(demo_nightly), "--board", "arena", "--method", "m-elo"],
                                env={"COLUMNS": "80"}, terminal_width=80)
    assert result.exit_code == 0, result.output
    for name in ("claude-3-5-sonnet-20240620", "gpt-4o-mini", "newcomer-1b"):
        assert name in result.output  # whole, on one line
    assert "\u2026" not in result.output
    assert "new" in result.output and "\u25b2" in result.output
    missing = CliRunner().invoke(app, ["history", str(demo_nightly / "nowhere")])
    assert missing.exit_code != 0 and "no history" in missing.output


PAUSED_APPEND = """
import sys, time
from pathlib import Path
from pipeline.report import history

write = history.write_parquet

def paused(path, table):  # the old history is read: wait until told, then write
    print("read", flush=True)
    sys.stdin.readline()
    write(path, table)

history.write_parquet = paused
history.append_history(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3])
"""


def test_two_runs_appending_at_once_both_stay_in_the_history(tmp_path):
    # Two nightly runs on one `out` (a schedule overlapping a manual run): each read the history,
    # added its run and wrote it back, so the one that wrote first was lost.
    import subprocess
    import sys
    import time

    from tests.conftest import ROOT

    runs = {}
    for run_id, agent in [("2024-01-01T000000.000000Z", "alpha"), ("2024-01-02T000000.000000Z", "beta")]:
        runs[run_id] = tmp_path / "runs" / run_id
        (runs[run_id] / "board").mkdir(parents=True)
        pl.DataFrame({"method": ["borda"], "agent": [agent], "rank": [1], "score": [1.0]}).write_parquet(
            runs[run_id] / "board" / "ratings.parquet")
    path = tmp_path / HISTORY_FILE
    first, second = runs
    paused = subprocess.Popen([sys.executable, "-c", PAUSED_APPEND, str(path), str(runs[first]), first], cwd=ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert paused.stdout.readline() == "read\n"
    other = subprocess.Popen([sys.executable, "-c", "import sys; from pathlib import Path; from pipeline.report import append_history; "
                              "append_history(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3])", str(path), str(runs[second]), second],
                             cwd=ROOT)
    time.sleep(3)  # the second append has read the history (without the lock) or waits for it (with the lock)
    paused.communicate("go\n", timeout=60)
    assert other.wait(60) == 0 and paused.returncode == 0
    assert sorted(read_history(path).get_column("run_id").to_list()) == [first, second]


def test_a_history_with_columns_of_the_wrong_type_or_rows_without_keys_cannot_be_read(tmp_path):
    # A rank of "two" was a multi-line InvalidOperationError in `vase history` and in the nightly's
    # append; a row without its run or a file without the columns was a TypeError or an IndexError.
    rows = {"run_id": [RUNS[0], RUNS[1]], "board": ["b", "b"], "method": ["elo", "elo"], "agent": ["x", "x"], "rank": [1, 2],
            "score": [1.0, 0.5]}
    damaged = {"rank": rows | {"rank": ["1", "two"]}, "score": rows | {"score": ["high", "low"]},
               "run_id": rows | {"run_id": [None, RUNS[1]]}, "agent": rows | {"agent": ["x", None]}, "columns": {"a": [1]}}
    for what, table in damaged.items():
        path = tmp_path / f"{what}.parquet"
        pl.DataFrame(table).write_parquet(path)
        shown = CliRunner().invoke(app, ["history", str(path)])
        assert shown.exit_code == 1 and shown.output.startswith(f"error: {path} cannot be read as a history"), (what, shown.output)
        assert len(shown.output.splitlines()) == 1, shown.output
    older = tmp_path / "older.parquet"  # written before the intervals were kept: still a history
    pl.DataFrame(rows | {"run_id": [1, 2]}).write_parquet(older)
    assert read_history(older).get_column("run_id").to_list() == ["1", "2"]


def test_history_command_refuses_a_negative_top_or_no_runs(tmp_path):
    # --top -1 showed every agent but the last (polars' head(-1)); --runs 0 and -3 showed one run.
    path = tmp_path / HISTORY_FILE
    pl.DataFrame({"run_id": [RUNS[0]] * 3, "board": ["b"] * 3, "method": ["elo"] * 3, "agent": ["x", "y", "z"], "rank": [1, 2, 3],
                  "score": [3.0, 2.0, 1.0]}).write_parquet(path)
    for option, value in (("--top", "-1"), ("--runs", "0"), ("--runs", "-3")):
        refused = CliRunner().invoke(app, ["history", str(path), option, value])
        assert refused.exit_code == 2 and option in refused.output, refused.output
    everyone = CliRunner().invoke(app, ["history", str(path), "--top", "0", "--runs", "1"])
    assert everyone.exit_code == 0 and all(f"\u2502 {agent} " in everyone.output for agent in "xyz"), everyone.output


def test_a_row_repeated_in_the_history_is_read_once(tmp_path):
    # Two copies of a history concatenated: `vase history` listed every agent twice.
    path = tmp_path / HISTORY_FILE
    once = pl.DataFrame({"run_id": [RUNS[0], RUNS[0], RUNS[1], RUNS[1]], "board": ["b"] * 4, "method": ["elo"] * 4,
                         "agent": ["x", "y", "x", "y"], "rank": [1, 2, 2, 1], "score": [2.0, 1.0, 1.0, 2.0]})
    pl.concat([once, once.with_columns(pl.col("rank") + 10)]).write_parquet(path)
    assert read_history(path).select(once.columns).equals(once)
    shown = CliRunner().invoke(app, ["history", str(path)])
    assert shown.exit_code == 0 and shown.output.count("\u2502 x ") == 1 and "2 \u2192 1" in shown.output, shown.output
