"""`vase inspect`: the suggested command, printed on a line of its own, rates each raw data set
the issue names (on a bounded slice, its lookup tables whole), and inspecting writes nothing."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from tests.test_datasets import DATASETS, sliced

RAW = ["llmfao/crowd_comparisons.csv", "wta_matches/wta_matches_2000_2024.parquet",
       "diplomacy_playdiplomacy_powers/games_wide.csv", "international_football/results.csv", "f1_race_results/race_results.csv"]


@pytest.mark.slow
@pytest.mark.skipif(DATASETS is None, reason="no shared/datasets beside the repository")
@pytest.mark.parametrize("relative", RAW, ids=lambda r: r.split("/")[0])
def test_the_suggested_command_rates_the_file(relative, tmp_path):
    data = tmp_path / "data"
    for sibling in (DATASETS / relative).parent.iterdir():  # lookup tables whole, the log sliced
        if sibling.suffix in (".csv", ".parquet"):
            sliced(f"{relative.split('/')[0]}/{sibling.name}", data, whole=sibling.name != relative.split("/")[1])
    before = sorted(p for p in tmp_path.rglob("*"))
    looked = CliRunner().invoke(app, ["inspect", str(data / relative)], env={"COLUMNS": "100"})
    assert looked.exit_code == 0, looked.output
    assert sorted(p for p in tmp_path.rglob("*")) == before  # no store, no output
    command = [line for line in looked.output.splitlines() if line.startswith("vase rate ")]
    assert len(command) == 1, looked.output
    args = shlex.split(command[0])[2:]
    args[args.index("--out") + 1] = str(tmp_path / "out")
    rated = CliRunner().invoke(app, ["rate", *args], env={"COLUMNS": "1000"})
    assert rated.exit_code == 0, rated.output
    rows = json.loads((tmp_path / "out" / "run.json").read_text())["rows"]
    assert rows["rows_accepted"] > 0.9 * rows["rows_in"], rows
    agents = {r["agent"] for r in json.loads((tmp_path / "out" / "ratings.json").read_text())}
    assert len(agents) >= 3 and not any(re.fullmatch(r"\d+", a) for a in agents)  # names, not ids
