"""Run folders: staging, promotion and `latest`, with runs killed and runs side by side on one `out`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from pipeline.report.runs import promote, staging_folder
from tests.conftest import ROOT

STAGED = """
import os, signal, sys, time
from pathlib import Path
from pipeline.report.runs import staging_folder

with staging_folder(Path(sys.argv[1]), sys.argv[2]) as staging:
    (staging / "board").mkdir()
    (staging / "board" / "ratings.parquet").write_bytes(b"half a board")
    print("staged", flush=True)
    if sys.argv[3] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)  # as a lost machine or the OOM killer: no handler runs
    time.sleep(60)
"""


def staged_run(out: Path, run_id: str, then: str) -> subprocess.Popen:
    """A process that stages run `run_id` in `out`, then kills itself (`kill`) or keeps going (`wait`)."""
    process = subprocess.Popen([sys.executable, "-c", STAGED, str(out), run_id, then], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline() == "staged\n"
    return process


def test_the_staging_folder_of_a_killed_run_is_removed_by_the_next_run_and_a_running_one_is_kept(tmp_path):
    # A run killed outright left runs/.<id>.partial forever (its whole output, never shown or removed).
    out = tmp_path / "out"
    killed = staged_run(out, "2024-01-01T000000.000000Z", "kill")
    assert killed.wait(30) == -signal.SIGKILL
    running = staged_run(out, "2024-01-02T000000.000000Z", "wait")
    try:
        with staging_folder(out, "2024-01-03T000000.000000Z") as staging:
            (staging / "board").mkdir()
            final = promote(out, staging, "2024-01-03T000000.000000Z")
        assert sorted(p.name for p in (out / "runs").iterdir()) == [
            ".2024-01-02T000000.000000Z.partial", ".2024-01-02T000000.000000Z.partial.lock", "2024-01-03T000000.000000Z"]
        assert (out / "latest").resolve() == final
    finally:
        running.kill()
        running.wait()
    with staging_folder(out, "2024-01-04T000000.000000Z"):
        pass
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["2024-01-03T000000.000000Z"]


def test_a_run_that_fails_leaves_no_staging_folder(tmp_path):
    out = tmp_path / "out"
    try:
        with staging_folder(out, "2024-01-01T000000.000000Z") as staging:
            (staging / "board").mkdir()
            raise RuntimeError("a board failed")
    except RuntimeError:
        pass
    assert list((out / "runs").iterdir()) == [] and not (out / "latest").exists()
    assert os.listdir(out) == ["runs"]


def test_a_run_that_started_first_and_ends_last_does_not_take_latest_back(tmp_path):
    # Two runs on one `out`: the earlier one, ending last, pointed `latest` at the older run,
    # after the history and the newer run's report had read it as the newer one's predecessor.
    out = tmp_path / "out"
    earlier, later = "2024-01-01T030000.000000Z", "2024-01-01T031500.000000Z"
    with staging_folder(out, earlier) as first, staging_folder(out, later) as second:
        promote(out, second, later)
        assert promote(out, first, earlier) == out / "runs" / earlier
    assert (out / "latest").resolve() == (out / "runs" / later).resolve()
    assert sorted(p.name for p in (out / "runs").iterdir()) == [earlier, later]
    with staging_folder(out, "2024-01-02T030000.000000Z") as third:
        promote(out, third, "2024-01-02T030000.000000Z")
    assert os.readlink(out / "latest") == "runs/2024-01-02T030000.000000Z"
