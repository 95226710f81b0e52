"""The `vase` command as a Unix tool: usage errors in one line with exit 2, `--version`, names
made visible, and output for pipes (tables whole, or JSON and TSV)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from pipeline import __version__


def vase(*args: str, cwd=None) -> subprocess.CompletedProcess:
    """The installed command's code in a process of its own, with real stdout and stderr (not a terminal)."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}  # piped, with no width asked for
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=env)


@pytest.mark.parametrize(("args", "said"), [
    (["rate", "--kind", "battles", "--bogus"], "No such option: --bogus"),                     # unknown option
    (["ingest", "--kind", "battles", "--store", "s"], "Missing argument"),                     # missing argument
    (["rate", "--method", "elo", "--out", "o", "x.csv"], "Missing option '--kind'"),           # missing option
    (["history", "h", "--runs", "many"], "Invalid value for '--runs'"),                        # bad value (typer's check)
    (["rate", "--kind", "fish\nbowl\x1b[2J", "-m", "elo", "--out", "o", "x.csv"], "unknown kind 'fish\\nbowl\\x1b[2J'"),  # bad value (vase's)
    (["rank"], "No such command 'rank'"),                                                      # unknown command
    (["rate", "--kind", "battles", "--workers"], "Option '--workers' requires an argument"),  # option without its value
])
def test_a_usage_error_is_one_line_on_stderr_and_exit_2(tmp_path, args, said):
    # Typer printed a usage error as a box of 5-10 lines (usage, hint, frame); a name holding a
    # newline or an escape sequence reached the terminal raw, splitting the line or clearing the screen.
    result = vase(*args, cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ") and said in line and "\x1b" not in line
    assert not list(tmp_path.iterdir())  # refused before any work


def test_vase_alone_prints_its_help():
    result = vase()
    assert "Usage" in result.stdout and "rate" in result.stdout and "error" not in result.stderr


def test_version():
    result = vase("--version")
    assert result.returncode == 0 and result.stdout == f"vase {__version__}\n"


def test_file_names_reach_the_terminal_with_their_control_characters_made_visible(tmp_path):
    # A file name went to the terminal raw: an escape sequence in it drove the terminal (here:
    # clear the screen), and a newline split the one-line error naming it in two.
    name = "evil\n\x1b[2J.csv"
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / name).write_bytes("model_a,model_b,winner\ncaf\xe9,b,model_a\n".encode("latin-1"))  # not UTF-8: unreadable
    (tmp_path / "logs" / "good.csv").write_text("model_a,model_b,winner\na,b,model_a\nb,a,tie\n")
    out = tmp_path / "out\x1b]0;title\x07"
    result = vase("rate", str(tmp_path / "logs"), "--kind", "battles", "-m", "borda", "--out", str(out))
    assert result.returncode == 1, result.stderr  # the unreadable file
    assert not {"\x1b", "\x07"} & set(result.stdout + result.stderr)
    [unreadable] = [line for line in result.stderr.splitlines() if line.startswith("unreadable:")]
    assert "evil\\n\\x1b[2J.csv: " in unreadable and "UTF-8" in unreadable  # the whole line, reason included
    [report] = [line for line in result.stdout.splitlines() if line.startswith("report:")]
    assert report.endswith("out\\x1b]0;title\\x07/index.html")
    assert "evil\\n\\x1b[2J.csv" in result.stdout  # in the ingest table


@pytest.mark.parametrize(("command", "key", "whole"), [("methods", "method", "summary"), ("kinds", "kind", "holds")])
def test_piped_listings_are_whole_and_also_come_as_json_and_tsv(command, key, whole):
    # Piped, `vase methods` was 310 lines at 80 columns with words cut mid-token (`kernel_varian/ce`).
    records = json.loads(vase(command, "--format", "json").stdout)
    assert len(records) >= 6 and all(isinstance(r[key], str) for r in records)
    table = vase(command).stdout
    assert all(r[whole] in table for r in records)  # every summary on one line of the table, uncut
    tsv = vase(command, "--format", "tsv").stdout.splitlines()
    header, *rows = [line.split("\t") for line in tsv]
    assert header == list(records[0]) and [row[0] for row in rows] == [r[key] for r in records]
    assert all(len(row) == len(header) for row in rows)
    assert [row[header.index(whole)] for row in rows] == [r[whole] for r in records]


def test_rate_gives_its_ratings_as_json_or_tsv_on_stdout_and_the_rest_on_stderr(tmp_path):
    from tests.conftest import SAMPLES

    out = tmp_path / "out"
    as_json = vase("rate", str(SAMPLES / "f1"), "--kind", "games", "-m", "borda", "-m", "copeland", "--out", str(out), "--format", "json")
    assert as_json.returncode == 0, as_json.stderr
    published = json.loads((out / "ratings.json").read_text(encoding="utf-8"))
    assert json.loads(as_json.stdout) == [{k: r[k] for k in ("method", "rank", "agent", "score")} for r in published]
    assert "report:" in as_json.stderr and "rows in" in as_json.stderr
    as_tsv = vase("rate", str(SAMPLES / "f1"), "--kind", "games", "-m", "borda", "-m", "copeland", "--out", str(out), "--format", "tsv")
    header, *rows = [line.split("\t") for line in as_tsv.stdout.splitlines()]
    assert header == ["method", "rank", "agent", "score"]
    assert [(m, int(k), a, float(s)) for m, k, a, s in rows] == [(r["method"], r["rank"], r["agent"], r["score"]) for r in published]


@pytest.fixture(scope="module")
def dated_store(tmp_path_factory):
    """A store of 30 battles dated 2024-01-01 to 2024-01-10 (3 a day), and one of undated battles."""
    root = tmp_path_factory.mktemp("dated")
    lines = ["model_a,model_b,winner,timestamp"] + [f"m{k % 3},m{(k + 1) % 3},model_a,2024-01-{1 + k // 3:02d}T12:00:00Z" for k in range(30)]
    (root / "dated.csv").write_text("\n".join(lines) + "\n")
    (root / "undated.csv").write_text("model_a,model_b,winner\na,b,model_a\nb,a,tie\n")
    for name in ("dated", "undated"):
        assert vase("ingest", str(root / f"{name}.csv"), "--kind", "battles", "--store", str(root / name)).returncode == 0
    return root


@pytest.mark.parametrize(("store", "args", "said"), [
    ("dated", ["-m", "m-elo:half_life_days=0"], "m-elo: parameter half_life_days=0.0 must be positive"),
    ("dated", ["-m", "m-elo:half_life_days=-2"], "m-elo: parameter half_life_days=-2.0 must be positive"),
    ("dated", ["-m", "elo", "--min-records", "-1"], "Invalid value for --min-records: min_records=-1"),
    ("dated", ["-m", "elo", "--as-of", "2023-12-31"], "--as-of 2023-12-31 is before the first record (2024-01-01)"),
    ("dated", ["-m", "elo", "--as-of", "soon"], "--as-of 'soon' is not a date (YYYY-MM-DD)"),
    ("dated", ["-m", "m-elo:prior=auto", "--as-of", "2024-01-05"],
     "m-elo: prior=auto needs at least 20 battles to cross-validate, and the log holds 15 as of 2024-01-05"),
    ("dated", ["-m", "am-elo:prior=auto", "--as-of", "2024-01-05"],  # the spec parses: the rule takes auto
     "am-elo: prior=auto needs at least 20 battles to cross-validate, and the log holds 15 as of 2024-01-05"),
    ("dated", ["-m", "m-elo:prior=auto,covariates=len", "--as-of", "2024-01-05"],
     "m-elo: prior=auto needs at least 20 battles to cross-validate, and the log holds 15 as of 2024-01-05"),
    ("undated", ["-m", "m-elo:half_life_days=7"], "half_life_days=7 needs every record dated, and"),
    ("undated", ["-m", "elo", "--as-of", "2024-01-05"], "--as-of 2024-01-05 needs every record dated, and"),
])
def test_time_and_prior_refusals_are_one_line_and_exit_2_before_any_work(dated_store, tmp_path, store, args, said):
    # Before: prior=auto on too few battles was refused after the reduction, as a method refusal (exit 1).
    result = vase("rate", "--kind", "battles", "--store", str(dated_store / store), *args, "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and result.stdout == "", result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ") and said in line, line
    assert not (tmp_path / "out").exists()  # refused before any work


def test_as_of_rates_the_log_as_it_stood_and_says_so(dated_store, tmp_path):
    out = tmp_path / "out"
    result = vase("rate", "--kind", "battles", "--store", str(dated_store / "dated"), "-m", "m-elo:half_life_days=2,prior=1,bootstrap=0",
                  "--as-of", "2024-01-04", "--out", str(out), "--format", "json")
    assert result.returncode == 0, result.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["parameters"]["as_of"] == "2024-01-04"
    [(spec, decay)] = run["parameters"]["half_life_days"].items()
    assert "half_life_days=2.0" in spec and decay == {"half_life_days": 2.0, "ages_from": "2024-01-04T12:00:00+00:00"}
    header = "Records as of 2024-01-04. Each record weighed by its age: half-life 2 days from 2024-01-04T12:00:00+00:00."
    assert header in (out / "leaderboard.md").read_text() and header in (out / "index.html").read_text()
    records = pq.read_table(out / "agents.parquet").to_pylist()
    assert sum(r["records"] for r in records) == 2 * 12  # the battles of 4 days, 3 a day
    assert not (out / "pairwise.parquet").exists()  # every spec weighs: no unweighed head-to-head counts to show
