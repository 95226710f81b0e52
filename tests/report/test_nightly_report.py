"""The nightly flow itself (Prefect's local mode, a real LocalCluster) writes the report and the history."""

from __future__ import annotations

import shutil

import pytest
import yaml

from pipeline.report import HISTORY_FILE, read_history

from tests.conftest import SAMPLES
from tests.report.conftest import DAY_TWO
from tests.report.pages import Page

pytestmark = pytest.mark.slow


def test_two_nightly_runs_report_rank_changes(tmp_path, dask_cluster):
    from flows.nightly import nightly

    watched = tmp_path / "watched"
    watched.mkdir()
    shutil.copy(SAMPLES / "arena_bench" / "arena_hard_battles.csv", watched / "day1.csv")
    config = tmp_path / "nightly.yaml"
    config.write_text(yaml.safe_dump({"boards": [{"name": "arena", "kind": "battles", "sources": [str(watched)],
                                                  "methods": ["copeland", "elo"], "title": "Arena"}]}))
    out = tmp_path / "out"
    first = nightly(str(config), str(out), scheduler=dask_cluster.scheduler_address)
    (watched / "day2.csv").write_text(DAY_TWO)
    second = nightly(str(config), str(out), scheduler=dask_cluster.scheduler_address)
    history = read_history(out / HISTORY_FILE)
    assert sorted(set(history.get_column("run_id").to_list())) == [first.rsplit("/", 1)[1], second.rsplit("/", 1)[1]]
    index = Page.read(out / "latest" / "index.html")
    assert index.links == ["arena/index.html"]
    board = Page.read(out / "latest" / "arena" / "index.html").tables_of("leaderboard")
    changes = {row[t.column("agent")][0]: row[t.column("change")][0] for t in board for row in t.rows}
    assert changes["newcomer-1b"] == "new" and any(c.startswith(("\u25b2", "\u25bc")) for c in changes.values())
    assert not (out / "runs" / first.rsplit("/", 1)[1] / "arena" / "index.html").read_text().count("\u25b2")
