"""`--out` is safe: a folder of the user's is refused, only what vase wrote is ever removed, and a
re-run replaces the earlier run's files as a whole."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from tests.conftest import SAMPLES
from tests.test_board import battle_log, write_csv

runner = CliRunner()


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every entry under `folder`: its bytes (files) and modification time, to tell that nothing changed."""
    return {p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else b"", p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*"))} | {".": (b"", folder.stat().st_mtime_ns)}


def judged_log(path: Path, categories: list[str | None]) -> Path:
    """A small battles log with judges (am-elo rates them) over `categories`."""
    rows = battle_log(path, categories, battles=240)
    write_csv(path, [r | {"judge": f"judge-{i % 3}"} for i, r in enumerate(rows)])
    return path


def users_folder(tmp_path: Path) -> Path:
    """A folder of the user's: their own index.html and a `category=` folder vase did not write."""
    folder = tmp_path / "mine"
    (folder / "category=coding").mkdir(parents=True)
    (folder / "category=coding" / "ratings.parquet").write_bytes(b"my own bytes")
    (folder / "index.html").write_text("<p>my page</p>")
    return folder


@pytest.mark.parametrize("command", [
    ["rate", "{log}", "--kind", "battles", "-m", "borda", "--out", "{out}"],
    ["rate", "{log}", "--kind", "battles", "-m", "borda", "--out", "{out}", "--by", "category"],
    ["rate", "{log}", "--kind", "battles", "-m", "borda", "--out", "{out}/category=coding"],
    ["backtest", "--store", "{store}", "--kind", "games", "-m", "borda", "--out", "{out}", "--splits", "2", "--test-size", "5"],
])
def test_an_out_folder_of_the_users_is_refused_and_nothing_of_it_changes(tmp_path, command):
    # `--out` into an existing folder silently overwrote the user's own index.html (exit 0), and
    # `--by category` deleted every `category=*` entry of it, folders vase never wrote included.
    log = tmp_path / "log.csv"
    battle_log(log, ["coding", "math"], battles=60)
    store = tmp_path / "store"
    assert runner.invoke(app, ["ingest", str(SAMPLES / "f1"), "--kind", "games", "--store", str(store)]).exit_code == 0
    out = users_folder(tmp_path)
    before = snapshot(out)
    result = runner.invoke(app, [a.format(log=log, out=out, store=store) for a in command])
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ") and "holds no vase run" in line and "--force" in line
    assert snapshot(out) == before


def test_force_writes_among_the_users_files_and_keeps_them(tmp_path):
    log = tmp_path / "log.csv"
    battle_log(log, ["coding"], battles=60)
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    result = runner.invoke(app, ["rate", str(log), "--kind", "battles", "-m", "borda", "--out", str(out), "--force"])
    assert result.exit_code == 0, result.output
    assert (out / "notes.txt").read_text() == "mine" and (out / "ratings.parquet").exists()


def test_a_re_rate_replaces_the_earlier_runs_files_and_only_those(tmp_path):
    # Re-rating into an old run folder left the earlier run's am-elo.annotators.* and its
    # category boards beside the new run (the report showed them as this run's).
    log = judged_log(tmp_path / "log.csv", ["coding", "math"])
    out = tmp_path / "out"
    first = runner.invoke(app, ["rate", str(log), "--kind", "battles", "-m", "am-elo", "-m", "borda", "--out", str(out),
                                "--by", "category"])
    assert first.exit_code == 0, first.output
    assert (out / "am-elo.annotators.parquet").exists() and (out / "category=math" / "am-elo.annotators.md").exists()
    (out / "notes.txt").write_text("mine")  # the user's, beside the run
    (out / "category=mine").mkdir()
    (out / "category=mine" / "keep.txt").write_text("mine")
    (out / "category=math" / "keep.txt").write_text("mine")  # the user's, inside a board of the earlier run
    judged_log(log, ["coding"])
    second = runner.invoke(app, ["rate", str(log), "--kind", "battles", "-m", "borda", "--out", str(out), "--by", "category"])
    assert second.exit_code == 0, second.output
    left = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert not [name for name in left if "am-elo" in name]
    assert "category=math/keep.txt" in left and not [n for n in left if n.startswith("category=math/") and n != "category=math/keep.txt"]
    assert {"notes.txt", "category=mine/keep.txt", "category=coding/ratings.parquet", "ratings.parquet"} <= set(left)
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "category=coding/index.html" in html and "category=math/index.html" not in html
