"""An output folder (`vase rate --out`, `vase backtest --out`) holds one vase run, and only what vase wrote is removed.

A folder is a vase run folder when its run.json lists the run's `outputs`; what that run wrote is
those outputs, its `index.html`, the quarantine copies its inputs name inside it and, recursively,
the files of its category boards. A run published into a folder of an earlier one replaces that
run as a whole: the earlier run's files that the new one did not write again are removed (no
stale `am-elo.annotators.*` beside a run of other methods), and nothing else ever is (a user's
notes, or a `category=x` folder vase did not write, stay). A folder that is neither missing, empty
nor a vase run's is refused before any work, unless the user forces it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePath

RUN_JSON = "run.json"
INDEX = "index.html"


class ForeignFolder(ValueError):
    """An output folder holding files that no vase run wrote there."""


def run_record(folder: Path) -> dict | None:
    """The run.json of the vase run published in `folder`, or None when there is none (or it is not vase's)."""
    try:
        run = json.loads((folder / RUN_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return run if isinstance(run, dict) and isinstance(run.get("outputs"), list) else None


def owned(folder: Path, name: object) -> PurePath | None:
    """`name` as a path relative to `folder` if it names something inside it (never '..', never outside)."""
    if not isinstance(name, str) or not name:
        return None
    path = PurePath(name)
    if path.is_absolute():
        try:
            path = path.relative_to(folder.resolve())
        except ValueError:
            return None
    return path if path.parts and ".." not in path.parts else None


def run_files(folder: Path) -> set[PurePath]:
    """The files the vase run published in `folder` wrote there, relative to it; empty if it holds none."""
    run = run_record(folder)
    if run is None:
        return set()
    files = {p for name in [*run["outputs"], RUN_JSON, INDEX] if (p := owned(folder, name)) is not None}
    inputs = run.get("inputs") if isinstance(run.get("inputs"), list) else []
    files |= {p for i in inputs if isinstance(i, dict) and (p := owned(folder, i.get("quarantine"))) is not None}
    categories = run.get("categories") if isinstance(run.get("categories"), dict) else {}
    for board in categories.get("boards") or []:
        sub = owned(folder, board.get("folder")) if isinstance(board, dict) else None
        if sub is not None and len(sub.parts) == 1 and not (folder / sub).is_symlink():
            files |= {sub / p for p in run_files(folder / sub)}
    return files


def check_out(folder: Path, force: bool = False) -> None:
    """Refuse (ForeignFolder) an output folder that holds anything and is not a vase run's, unless `force`."""
    if force or not folder.is_dir() or run_record(folder) is not None or next(folder.iterdir(), None) is None:
        return
    raise ForeignFolder(f"{folder} is not empty and holds no vase run (no run.json listing its outputs); "
                        "give a new or empty folder, or --force to write among its files")


def remove_stale(folder: Path, earlier: set[PurePath]) -> None:
    """Remove the files of an earlier run that the run now in `folder` did not write, then the folders they leave empty."""
    stale = earlier - run_files(folder)
    for path in stale:
        target = folder / path
        if any((folder / parent).is_symlink() for parent in path.parents if parent.parts):
            continue  # never through a link to a folder elsewhere
        if target.is_symlink() or target.is_file():
            target.unlink()
    for parent in sorted({p for path in stale for p in path.parents if p.parts}, key=lambda p: len(p.parts), reverse=True):
        try:
            (folder / parent).rmdir()
        except OSError:  # not empty (a user's file, or this run's), or gone already
            pass


@contextmanager
def replacing_run(folder: Path) -> Iterator[None]:
    """Publish a run into `folder` in the block: afterwards, what an earlier run there wrote and this one did not is removed."""
    earlier = run_files(folder)
    yield
    remove_stale(folder, earlier)
