"""Every data set in ../shared/datasets/ rated through `vase rate` with vase options only: each
command of docs/guide.md runs on a bounded slice of its data set (the first `SLICE_ROWS` rows of
each log; lookup tables whole), and rates every agent it reads."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from benchmarks.datasets import shared_datasets
from pipeline.cli import app
from tests.conftest import ROOT

SLICE_ROWS = 1_000
GUIDE = ROOT / "docs" / "guide.md"
PREFIX = "../shared/datasets/"


DATASETS = found if (found := shared_datasets()).is_dir() else None


def guide_commands() -> list[list[str]]:
    """The `vase rate` lines of the guide that read a shared data set, as arguments."""
    lines = [line for line in GUIDE.read_text(encoding="utf-8").splitlines() if line.startswith("vase rate ") and PREFIX in line]
    return [shlex.split(line)[2:] for line in lines]


def test_the_guide_rates_every_data_set():
    named = {arg.split("/")[3] for args in guide_commands() for arg in args if arg.startswith(PREFIX)}
    assert DATASETS is not None
    assert named == {p.name for p in DATASETS.iterdir() if p.is_dir()}


def sliced(relative: str, into: Path, whole: bool) -> Path:
    """A data set file, or its first `SLICE_ROWS` rows, under `into` (same relative path)."""
    source, target = DATASETS / relative, into / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.suffix == ".parquet":
        pq.write_table(pq.read_table(source).slice(0, None if whole else SLICE_ROWS), target)
    else:
        with source.open(encoding="utf-8") as handle:
            lines = handle.readlines()
        target.write_text("".join(lines if whole else lines[: SLICE_ROWS + 1]), encoding="utf-8")
    return target


def local(args: list[str], into: Path) -> list[str]:
    """The command's data set paths replaced by slices under `into`, its output under `into`."""
    out = []
    for previous, arg in zip(["", *args], args):
        if previous == "--names":
            table, _, spec = arg.rpartition(":")
            arg = f"{sliced(table.removeprefix(PREFIX), into, whole=True)}:{spec}"
        elif arg.startswith(PREFIX):
            arg = str(sliced(arg.removeprefix(PREFIX), into, whole=False))
        elif previous == "--out":
            arg = str(into / arg)
        out.append(arg)
    return out


@pytest.mark.slow
@pytest.mark.skipif(DATASETS is None, reason="no shared/datasets beside the repository")
@pytest.mark.parametrize("args", guide_commands(), ids=lambda a: Path(next(x for x in a if x.startswith(PREFIX))).name
                         + ("+by" if "--by" in a else ""))
def test_a_guide_command_rates_its_data_set(args, tmp_path):
    result = CliRunner().invoke(app, ["rate", *local(args, tmp_path)], env={"COLUMNS": "1000"})
    assert result.exit_code == 0, result.output
    out = tmp_path / args[args.index("--out") + 1]
    run = json.loads((out / "run.json").read_text())
    rows = run["rows"]
    assert rows["rows_accepted"] > 0.9 * rows["rows_in"], rows  # read as meant: little quarantined
    records = json.loads((out / "ratings.json").read_text())
    agents = {r["agent"] for r in records}
    assert len(agents) >= 3 and not any(re.fullmatch(r"\d+", a) for a in agents)  # names, not ids
