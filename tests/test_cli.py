"""The `vase` command: ingest, rate and methods use the library directly (no Prefect server)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from tests.conftest import SAMPLES

runner = CliRunner()


def test_ingest_reports_accounting_and_is_idempotent(tmp_path):
    args = ["ingest", str(SAMPLES / "llmfao"), "--kind", "battles", "--store", str(tmp_path / "s")]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "rows in 8931 = accepted 8931 + quarantined 0" in first.output
    second = runner.invoke(app, args)
    assert "skipped" in second.output
    # The total counts rows read now: a file already in the store, or named twice, is not counted again.
    assert "rows in 0 = accepted 0 + quarantined 0 (and 1 file already in the store, skipped)" in second.output
    twice = runner.invoke(app, ["ingest", *[str(SAMPLES / "llmfao" / "crowd_battles.csv")] * 2, "--kind", "battles",
                                "--store", str(tmp_path / "twice")])
    assert "rows in 8931 = accepted 8931 + quarantined 0 (and 1 file already in the store, skipped)" in twice.output


def test_ingest_exits_nonzero_on_unreadable_file_but_keeps_going(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("model_a,model_b\nx,y\n")
    result = runner.invoke(app, ["ingest", str(bad), str(SAMPLES / "f1"), "--kind", "games", "--store", str(tmp_path / "s")])
    assert result.exit_code == 1 and "unreadable" in result.output and "ingested" in result.output


def test_rate_from_files_without_a_store(tmp_path):
    result = runner.invoke(app, ["rate", str(SAMPLES / "livebench"), "--kind", "scores", "--method", "borda",
                                 "--method", "approval:k=3", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    records = json.loads((tmp_path / "out" / "ratings.json").read_text())
    assert {r["method"] for r in records} == {"borda:normalise=false", "approval:k=3"}


def test_rate_rejects_bad_specs_and_kinds(tmp_path):
    bad_method = runner.invoke(app, ["rate", str(SAMPLES / "f1"), "--kind", "games", "--method", "bordaa", "--out", str(tmp_path)])
    assert bad_method.exit_code == 2 and "unknown method 'bordaa'" in bad_method.output
    bad_kind = runner.invoke(app, ["rate", str(SAMPLES / "f1"), "--kind", "race", "--method", "borda", "--out", str(tmp_path)])
    assert bad_kind.exit_code == 2 and "unknown kind 'race'" in bad_kind.output


def test_a_parameter_out_of_range_is_a_usage_error_before_any_work(tmp_path):
    # m-elo:prior=-1 used to be refused by the method only, after the logs were ingested and reduced.
    result = runner.invoke(app, ["rate", str(SAMPLES / "f1"), "--kind", "games", "--method", "borda", "--method", "m-elo:prior=-1",
                                 "--store", str(tmp_path / "store"), "--out", str(tmp_path / "out")], env={"COLUMNS": "1000"})
    assert result.exit_code == 2 and "m-elo: parameter prior=-1.0 must be non-negative" in result.output, result.output
    assert not (tmp_path / "store").exists() and not (tmp_path / "out").exists()



@pytest.mark.parametrize("command", [["rate", "--kind", "games", "--method", "borda", "--out", "{file}", "{logs}"],
                                     ["rate", "--kind", "games", "--method", "borda", "--store", "{file}", "--out", "{out}"],
                                     ["ingest", "--kind", "games", "--store", "{file}", "{logs}"],
                                     ["backtest", "--kind", "games", "--store", "{file}", "--out", "{out}", "--method", "borda"]])
def test_a_file_where_a_folder_is_expected_is_a_usage_error_before_any_work(tmp_path, command):
    # `rate --out` naming a file used to fail with FileExistsError after every method had run.
    file = tmp_path / "taken"
    file.write_text("not a folder")
    args = [a.format(file=file, logs=SAMPLES / "f1", out=tmp_path / "out") for a in command]
    result = runner.invoke(app, args, env={"COLUMNS": "1000"})  # the message on one line of the usage box
    assert result.exit_code == 2 and f"'{file}' is a file" in result.output, result.output
    assert file.read_text() == "not a folder" and not (tmp_path / "out").exists()

def test_methods_lists_the_registry(monkeypatch):
    from pipeline import cli

    monkeypatch.setattr(cli.console, "width", 1000)  # every cell on one line
    result = runner.invoke(app, ["methods"])
    assert result.exit_code == 0 and "approval" in result.output and "k=2 (at least 1)" in result.output
    assert "ties=half (one of half, davidson)" in result.output  # each parameter with the values it takes


def test_methods_lists_the_kinds_each_method_rates(monkeypatch):
    # The kinds column said "all" for deviation, nash-averaging and the other game methods, which
    # refuse games, ballots and reviews; and for stv, which refuses reviews.
    from pipeline import cli
    from pipeline.board import check_methods_fit
    from pipeline.logs import KINDS
    from pipeline.methods import REGISTRY, Spec

    monkeypatch.setattr(cli.console, "width", 1000)
    rows = [line.split("│") for line in runner.invoke(app, ["methods"]).output.splitlines() if line.startswith("│")]
    listed = {cells[1].strip(): cells[4].strip() for cells in rows}
    for name in REGISTRY:
        rated = []
        for kind in sorted(KINDS):
            try:
                check_methods_fit(kind, [Spec.parse(name)])
                rated.append(kind)
            except ValueError:
                pass
        assert listed[name] == ", ".join(rated), name
    assert listed["deviation"] == "battles, nfg, scores"


# Rock-paper-scissors in Gambit's payoff form (joint strategies with the first player fastest).
RPS_NFG = 'NFG 1 R "RPS" { "Row" "Col" }\n{ { "R" "P" "S" } { "R" "P" "S" } }\n""\n' \
          "0 0 1 -1 -1 1 -1 1 0 0 1 -1 1 -1 -1 1 0 0\n"


@pytest.mark.slow
def test_rate_game_methods_on_livebench(tmp_path):
    specs = ["deviation", "nash-averaging", "affinity-cce"]
    args = ["rate", str(SAMPLES / "livebench"), "--kind", "scores", "--out", str(tmp_path / "out")]
    result = runner.invoke(app, args + [a for s in specs for a in ("--method", s)])
    assert result.exit_code == 0, result.output
    records = json.loads((tmp_path / "out" / "ratings.json").read_text())
    assert {r["method"].split(":")[0] for r in records} == set(specs)
    assert all(sum(r["method"].startswith(s) for r in records) == 59 for s in specs)  # 59 models, each rated


def test_rate_game_methods_on_an_nfg_file(tmp_path):
    # Rock-paper-scissors: the unique equilibrium is uniform, so every strategy of both players is
    # rated 0 by all three methods.
    path = tmp_path / "rps.nfg"
    path.write_text(RPS_NFG)
    args = ["rate", str(path), "--kind", "nfg", "--out", str(tmp_path / "out")]
    result = runner.invoke(app, args + ["-m", "deviation", "-m", "nash-averaging", "-m", "affinity-cce"])
    assert result.exit_code == 0, result.output
    records = json.loads((tmp_path / "out" / "ratings.json").read_text())
    assert len(records) == 3 * 6
    assert max(abs(r["score"]) for r in records) < 1e-6


def test_rate_nfg_refuses_methods_that_do_not_rate_games(tmp_path):
    path = tmp_path / "rps.nfg"
    path.write_text(RPS_NFG)
    result = runner.invoke(app, ["rate", str(path), "--kind", "nfg", "-m", "borda", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "borda does not rate nfg files" in result.output


def test_nfg_files_are_rated_not_ingested_and_a_bad_one_is_named(tmp_path):
    path = tmp_path / "rps.nfg"
    path.write_text(RPS_NFG)
    ingest = runner.invoke(app, ["ingest", str(path), "--kind", "nfg", "--store", str(tmp_path / "s")])
    assert ingest.exit_code == 2 and "rated directly" in ingest.output
    bad = tmp_path / "bad.nfg"
    bad.write_text("NFG 1 R \"x\" { \"a\" } { 2 }\n1\n")
    result = runner.invoke(app, ["rate", str(bad), "--kind", "nfg", "-m", "deviation", "--out", str(tmp_path / "out")])
    assert result.exit_code == 1 and "bad.nfg" in result.output and "payoffs" in result.output
    assert "Traceback" not in result.output


def test_a_method_that_cannot_rate_is_reported_by_name_and_the_others_published(tmp_path):
    log = tmp_path / "battles.csv"
    log.write_text("model_a,model_b,winner\nzeta,alpha,model_a\nalpha,mu,model_a\nmu,zeta,model_b\nzeta,mu,model_a\n")
    out = tmp_path / "out"
    result = runner.invoke(app, ["rate", str(log), "--kind", "battles", "-m", "m-elo", "-m", "copeland", "--out", str(out)])
    assert result.exit_code == 1
    message = ("m-elo: the maximum-likelihood ratings do not exist: agents that never win or never lose: mu, zeta (the "
               "comparison graph has 1 connected piece(s) and 3 strongly connected piece(s)); use m-elo:prior=auto to choose a "
               "prior by cross-validation")
    canonical = "m-elo:anchor=1000.0,bootstrap=1000,games=pairs,half_life_days=inf,max_iter=100,prior=0.0,refit=exact,scale=400.0,seed=0,ties=half,tol=1e-07"
    assert f"{canonical} could not rate: {message}" in " ".join(result.output.split())
    run = json.loads((out / "run.json").read_text())
    assert run["errors"] == {canonical: message}
    assert {r["method"] for r in json.loads((out / "ratings.json").read_text())} == {"copeland:tie_credit=0.5"}


def test_when_every_method_refuses_the_run_reports_it_and_writes_an_empty_board(tmp_path):
    log = tmp_path / "ballots.csv"
    log.write_text("ranking\na>b\nb>c\n")
    out = tmp_path / "out"
    result = runner.invoke(app, ["rate", str(log), "--kind", "ballots", "-m", "m-elo", "--out", str(out)])
    assert result.exit_code == 1 and "could not rate" in result.output and "Traceback" not in result.output
    assert json.loads((out / "ratings.json").read_text()) == [] and "agents" in (out / "index.html").read_text()


def test_when_no_file_gives_rows_the_error_says_why_for_each_file(tmp_path):
    latin = tmp_path / "latin.csv"
    latin.write_bytes("model_a,model_b,winner\nJos\xe9,b,model_a\n".encode("latin-1"))
    empty = tmp_path / "empty.csv"
    empty.write_text("model_a,model_b,winner\n")
    result = runner.invoke(app, ["rate", str(latin), str(empty), "--kind", "battles", "-m", "copeland", "--out", str(tmp_path / "out")])
    text = " ".join(result.output.split())
    assert result.exit_code == 1 and "Traceback" not in result.output and "no battles to rate" in text and "vase-store" not in text
    assert "not UTF-8 text: byte 0xE9" in text and f"{empty}: ingested, 0 of 0 rows accepted" in text


def test_a_spec_given_twice_under_two_spellings_runs_once_and_the_outputs_say_so(tmp_path):
    out = tmp_path / "out"
    result = runner.invoke(app, ["rate", str(SAMPLES / "f1"), "--kind", "games", "-m", "borda", "-m", "copeland",
                                 "-m", "borda:normalise=false", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "borda and borda:normalise=false are the same spec (borda:normalise=false): rated once" in result.output
    run = json.loads((out / "run.json").read_text())
    assert run["methods"] == ["borda:normalise=false", "copeland:tie_credit=0.5"]
    assert run["parameters"]["methods_merged"] == {"borda:normalise=false": ["borda", "borda:normalise=false"]}
    assert len(json.loads((out / "ratings.json").read_text())) == 2 * 29  # 29 drivers, once per method


def test_rate_without_rows_of_the_kind_is_one_line(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("model_a,model_b,winner\n")
    result = runner.invoke(app, ["rate", str(empty), "--kind", "battles", "-m", "borda", "--out", str(tmp_path / "out")])
    assert result.exit_code == 1 and "no battles to rate" in result.output and "Traceback" not in result.output


def test_vase_help_imports_none_of_the_heavy_libraries():
    # `vase --help` starts fast because the command imports the library only when a command runs
    # (benchmarks/bench_cli_start.py times it).
    probe = ("import sys\nsys.argv = ['vase', '--help']\nfrom flows.cli import app\ntry:\n    app()\nexcept SystemExit:\n    pass\n"
             "print(' '.join(sys.modules), file=sys.stderr)")
    loaded = set(subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stderr.split())
    heavy = {"prefect", "distributed", "dask", "scipy", "polars", "pyarrow", "numpy", "matplotlib", "pipeline.methods", "pipeline.board"}
    assert "typer" in loaded and not heavy & loaded


@pytest.mark.parametrize("command", [["ingest", "--kind", "battles", "--store", "{tmp}/s"],
                                     ["rate", "--kind", "battles", "-m", "borda", "--out", "{tmp}/out"]])
def test_a_missing_input_is_one_line_and_exit_2_before_any_work(tmp_path, command):
    args = [a.format(tmp=tmp_path) for a in command] + [str(SAMPLES / "llmfao"), str(tmp_path / "no-such.csv")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert result.output.strip() == f"error: no such file or folder: {tmp_path / 'no-such.csv'}"
    assert not list(tmp_path.iterdir())  # nothing ingested, nothing published


@pytest.mark.parametrize("command", [["rate", str(SAMPLES / "f1"), "--kind", "games", "-m", "borda", "--out", "{tmp}/out"],
                                     ["backtest", "--store", "{tmp}", "--kind", "games", "-m", "borda", "--out", "{tmp}/out"]])
def test_a_negative_worker_count_is_a_usage_error_before_any_work(tmp_path, command):
    result = runner.invoke(app, [a.format(tmp=tmp_path) for a in command] + ["--workers", "-1"])
    assert result.exit_code == 2 and "--workers" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_a_method_that_does_not_rate_the_kind_stops_rate_before_any_work(tmp_path):
    result = runner.invoke(app, ["rate", str(SAMPLES / "f1"), "--kind", "games", "-m", "borda", "-m", "am-elo",
                                 "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "am-elo does not rate games files" in " ".join(result.output.split())
    assert not (tmp_path / "out").exists()


def test_an_unexpected_error_is_one_line_and_debug_shows_the_traceback(tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("a file where the output folder's parent should go")
    args = ["rate", str(SAMPLES / "f1"), "--kind", "games", "-m", "borda", "--out", str(taken / "out")]
    quiet = runner.invoke(app, args)
    assert quiet.exit_code == 1 and "Traceback" not in quiet.output
    [line] = [line for line in quiet.output.splitlines() if line.startswith("error:")]
    assert "Error" in line and "--debug shows the traceback" in line
    loud = runner.invoke(app, ["--debug", *args])
    assert loud.exit_code == 1 and isinstance(loud.exception, OSError)  # raised, not reduced to a line


@pytest.mark.parametrize("command", [["ingest", str(SAMPLES / "f1"), "--kind", "games", "--store", "{store}"],
                                     ["rate", "--store", "{store}", "--kind", "games", "-m", "borda", "--out", "{tmp}/out"],
                                     ["backtest", "--store", "{store}", "--kind", "games", "-m", "borda", "--out", "{tmp}/out"]])
def test_a_damaged_store_file_is_one_line_naming_it(tmp_path, command):
    store = tmp_path / "store"
    assert runner.invoke(app, ["ingest", str(SAMPLES / "f1"), "--kind", "games", "--store", str(store)]).exit_code == 0
    manifest = store / "manifest.json"
    manifest.write_bytes(manifest.read_bytes()[:200])  # cut short by hand or by a failing copy
    result = runner.invoke(app, [a.format(store=store, tmp=tmp_path) for a in command])
    assert result.exit_code == 1 and "Traceback" not in result.output
    [line] = result.output.strip().splitlines()
    assert line.startswith(f"error: {manifest}: a file of the store cannot be read (JSONDecodeError: ")
    assert line.endswith("restore it from a backup, or ingest the logs into a new store")


def test_rate_without_a_store_keeps_its_quarantine_in_the_output_folder(tmp_path):
    log = tmp_path / "battles.csv"
    log.write_text("model_a,model_b,winner\nalpha,beta,model_a\nalpha,,model_b\nbeta,alpha,model_b\ngamma,alpha,nobody\n")
    out = tmp_path / "out"
    result = runner.invoke(app, ["rate", str(log), "--kind", "battles", "-m", "borda", "--out", str(out), "--max-quarantined", "1"])
    assert result.exit_code == 0, result.output
    run = json.loads((out / "run.json").read_text())
    [entry] = run["inputs"]
    assert run["store"] == "" and entry["rows_quarantined"] == 2
    kept = pl.read_parquet(entry["quarantine"])
    assert Path(entry["quarantine"]).is_relative_to(out.resolve()) and sorted(kept["line"].to_list()) == [3, 5]


def test_rate_ends_with_the_top_agents_by_name_and_the_report_path_unwrapped(tmp_path):
    out = tmp_path / ("a-deep-output-folder-whose-path-is-longer-than-a-terminal-line" * 2) / "f1"
    result = runner.invoke(app, ["rate", str(SAMPLES / "f1"), "--kind", "games", "-m", "borda", "-m", "approval:k=3",
                                 "--out", str(out)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[-1] == f"report: {out.resolve() / 'index.html'}"
    assert "Max Verstappen" in result.output and "top ranks" not in result.output
    assert "approval" in result.output and "k=3" in result.output and "normalise" not in result.output  # defaults left out
    assert "…" not in result.output and all(len(line) <= 80 for line in lines[:-1])


def test_methods_and_kinds_are_listed_whole_at_80_columns():
    for command in ("methods", "kinds"):
        result = runner.invoke(app, [command], env={"COLUMNS": "80"})
        assert result.exit_code == 0 and "…" not in result.output
    listed = " ".join(runner.invoke(app, ["methods"], env={"COLUMNS": "80"}).output.split())
    assert "am-elo" in listed and "battles" in listed


def test_reading_numbers_are_rounded_and_negative_zero_is_zero():
    from pipeline.cli import reading

    assert reading(-1.41095e-14, 2) == "0.00" and reading(1234.5678, 1) == "1234.6"


def test_rate_by_category_publishes_a_board_per_category_and_says_so(tmp_path):
    from tests.test_board import battle_log

    battle_log(tmp_path / "battles.csv", ["coding", "Hard Prompts", None], battles=300)
    out = tmp_path / "out"
    result = runner.invoke(app, ["rate", str(tmp_path / "battles.csv"), "--kind", "battles", "-m", "copeland", "--out", str(out),
                                 "--by", "category"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "rows without a category: 100 (in the overall board only)" in result.output
    folders = {b["category"]: b["folder"] for b in json.loads((out / "run.json").read_text())["categories"]["boards"]}
    assert folders["coding"] == "category=coding" and all((out / f / "ratings.parquet").exists() for f in folders.values())
    assert "category=coding/index.html" in (out / "index.html").read_text()


@pytest.mark.parametrize("kind", ["games", "ballots"])
def test_rate_by_category_of_a_kind_without_categories_is_a_usage_error_naming_the_kind(tmp_path, kind):
    result = runner.invoke(app, ["rate", str(SAMPLES / "f1"), "--kind", kind, "-m", "borda", "--out", str(tmp_path / "o"),
                                 "--by", "category"], terminal_width=300)
    assert result.exit_code == 2 and f"{kind} logs have no category column" in result.output
    assert not (tmp_path / "o").exists()


def test_rate_help_documents_by_category():
    result = runner.invoke(app, ["rate", "--help"], terminal_width=200)
    assert "--by" in result.output and "category" in result.output


def test_names_that_look_like_terminal_markup_are_printed_as_they_are(tmp_path):
    # Rich reads `[...]` as markup: `[/bold]` closing nothing raised MarkupError (a traceback), and
    # `[bold red]` or `[link=...]` vanished into styles. Names are data: they print as they are.
    log = tmp_path / "battles.csv"
    log.write_text("model_a,model_b,winner\n[/bold]x,[bold red]loud,model_a\n[bold red]loud,[/bold]x,model_a\n"
                   "[link=http://e]y,[/bold]x,model_b\n[/]never,[/bold]x,model_b\n")
    out = tmp_path / "out"
    result = runner.invoke(app, ["rate", str(log), "--kind", "battles", "-m", "borda", "-m", "m-elo", "--out", str(out)])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output  # 1: m-elo refused
    assert "[/bold]x" in result.output and "[bold red]loud" in result.output and "[link=http://e]y" in result.output
    refusal = " ".join(line for line in result.output.splitlines() if "could not rate" in line)
    assert "never win or never lose: [/]never" in refusal


def test_a_rate_stopped_by_sigterm_deletes_its_temporary_store(tmp_path):
    # SIGTERM (a scheduler's timeout, `kill`) ended the process where it stood, leaving a copy of
    # every ingested log in the temporary store; now the command unwinds and exits with 143.
    import os
    import signal
    import time

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    command = [sys.executable, "-m", "pipeline.cli", "rate", str(SAMPLES / "llmfao"), "--kind", "battles",
               "-m", "m-elo:bootstrap=100000", "--out", str(tmp_path / "out")]
    process = subprocess.Popen(command, env=os.environ | {"TMPDIR": str(scratch)}, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not any(p.name.startswith("vase-store-") and (p / "manifest.json").exists() for p in scratch.iterdir()):
            assert process.poll() is None and time.monotonic() < deadline, "the run ended before its store was written"
            time.sleep(0.2)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 143 and "Traceback" not in stderr, stderr
    assert not [p.name for p in scratch.iterdir() if p.name.startswith("vase-store-")]
