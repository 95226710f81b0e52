"""The `vase` command as a Unix tool: usage errors in one line with exit 2, `--version`, names
made visible, and output for pipes (tables whole, or JSON and TSV)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

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
