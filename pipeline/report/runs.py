"""Run folders: each run is staged in a hidden folder, renamed into `runs/<run id>` when
complete, and `latest` (a symbolic link) is swapped to it atomically. A failed run never
becomes `latest`, and readers of `latest` never see a half-written run."""

from __future__ import annotations

import datetime as dt
import fcntl
import logging
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipeline.paths import inside, open_lock_file
from pipeline.report.folders import read_json
from pipeline.store.files import exclusive_lock, write_json

log = logging.getLogger(__name__)

FAILED_BOARDS = "failed_boards.json"  # board name -> why it failed, in a run folder where some did


def new_run_id(now: dt.datetime | None = None) -> str:
    return (now or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%dT%H%M%S.%fZ")


@contextmanager
def staging_folder(root: Path, run_id: str) -> Iterator[Path]:
    """`<root>/runs/.<run id>.partial`, held by this run until the block ends, then removed unless
    `promote` moved it into place (a failed run never becomes `latest`).

    A run killed outright (SIGKILL, a lost machine) cannot remove its own folder, so the folders of
    runs that ended are removed first; the advisory lock each run holds on `<folder>.lock` (released
    by the system when its process dies) tells them from those of runs still going on the same `out`."""
    path = inside(root, "runs", f".{run_id}.partial")  # never delete or write through a link out of root
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_abandoned_staging(path.parent)
    lock = lock_path(path)
    with exclusive_lock(lock):  # taken before the folder exists, so no other run takes it for abandoned
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir()
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)  # nothing left once promoted
            lock.unlink(missing_ok=True)


def lock_path(staging: Path) -> Path:
    return staging.with_name(staging.name + ".lock")


def remove_abandoned_staging(runs: Path) -> list[Path]:
    """Remove the staging folders in `runs` whose run no longer holds its lock; returns them."""
    removed = []
    for staging in sorted(runs.glob(".*.partial")):
        lock = lock_path(staging)
        descriptor = open_lock_file(lock)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # a run still going
        else:
            shutil.rmtree(staging, ignore_errors=True)
            lock.unlink(missing_ok=True)
            removed.append(staging)
            log.warning("removed %s, the staging folder of a run that was stopped before it ended", staging)
        finally:
            os.close(descriptor)
    return removed


def promote(root: Path, staging: Path, run_id: str) -> Path:
    """Move a complete staged run into place and point `<root>/latest` at it, unless `latest` is a
    newer run: of two runs on one `out` the one that started first may end last, and `latest` stays
    the last run in run id order, as the history and its rank changes read them."""
    final = root / "runs" / run_id
    os.replace(staging, final)
    latest = root / "latest"
    with exclusive_lock(root / ".latest.lock"):
        current = os.readlink(latest) if latest.is_symlink() else ""
        if Path(current).name > run_id:  # run ids sort by start time
            log.warning("run %s is published in %s; latest stays at the newer run %s", run_id, final, Path(current).name)
            return final
        link = root / f".latest.tmp-{os.getpid()}"
        link.unlink(missing_ok=True)
        link.symlink_to(Path("runs") / run_id, target_is_directory=True)
        os.replace(link, latest)
    return final


def record_failures(folder: Path, failures: dict[str, str]) -> None:
    """Name the boards of a run that failed (the others were published), for its report."""
    if failures:
        write_json(folder / FAILED_BOARDS, failures)


def read_failures(folder: Path) -> dict[str, str]:
    return {str(name): str(why) for name, why in read_json(Path(folder) / FAILED_BOARDS).items()}  # {} if it cannot be read
