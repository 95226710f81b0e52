"""Run folders: each run is staged in a hidden folder, renamed into `runs/<run id>` when
complete, and `latest` (a symbolic link) is swapped to it atomically. A failed run never
becomes `latest`, and readers of `latest` never see a half-written run."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path

from pipeline.paths import inside
from pipeline.report.folders import read_json
from pipeline.store.files import write_json

FAILED_BOARDS = "failed_boards.json"  # board name -> why it failed, in a run folder where some did


def new_run_id(now: dt.datetime | None = None) -> str:
    return (now or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%dT%H%M%S.%fZ")


def staging_folder(root: Path, run_id: str) -> Path:
    path = inside(root, "runs", f".{run_id}.partial")  # never delete or write through a link out of root
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def promote(root: Path, staging: Path, run_id: str) -> Path:
    """Move a complete staged run into place and point `<root>/latest` at it."""
    final = root / "runs" / run_id
    os.replace(staging, final)
    link = root / f".latest.tmp-{os.getpid()}"
    link.unlink(missing_ok=True)
    link.symlink_to(Path("runs") / run_id, target_is_directory=True)
    os.replace(link, root / "latest")
    return final


def discard(staging: Path) -> None:
    shutil.rmtree(staging, ignore_errors=True)


def record_failures(folder: Path, failures: dict[str, str]) -> None:
    """Name the boards of a run that failed (the others were published), for its report."""
    if failures:
        write_json(folder / FAILED_BOARDS, failures)


def read_failures(folder: Path) -> dict[str, str]:
    return {str(name): str(why) for name, why in read_json(Path(folder) / FAILED_BOARDS).items()}  # {} if it cannot be read
