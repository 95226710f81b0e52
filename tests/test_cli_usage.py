"""The `vase` command as a Unix tool: usage errors in one line with exit 2, `--version`."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pipeline import __version__


def vase(*args: str, cwd=None) -> subprocess.CompletedProcess:
    """The installed command's code in a process of its own, with real stdout and stderr (not a terminal)."""
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], capture_output=True, text=True, timeout=120, cwd=cwd)


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
