"""Where vase may write: board names as safe slugs, output paths kept under their root, no
writing through symbolic links planted in a store.

A board's name becomes folder names (`<out>/stores/<name>`, `<out>/runs/<run id>/<name>`), and
anyone who can edit a nightly config or write into a store is not thereby allowed to make vase
write elsewhere. These checks are the one place that rule lives.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

SLUG = re.compile(r"[a-z0-9][a-z0-9._-]*")


class UnsafePath(ValueError):
    """A name or path that would make vase write outside where it should."""


def check_board_name(name: object, config: str | Path) -> str:
    """`name` if it is a safe slug (lowercase letters, digits, '.', '_', '-'; no '..')."""
    if not isinstance(name, str) or not SLUG.fullmatch(name) or ".." in name:
        raise UnsafePath(f"{config}: board {name!r}: a board name must match [a-z0-9][a-z0-9._-]* without '..' "
                         "(it names the board's folders under out/)")
    return name


def inside(root: str | Path, *parts: str) -> Path:
    """`root/parts` resolved (symbolic links followed), refused unless it lies strictly under `root` resolved."""
    base = Path(root).resolve()
    path = base.joinpath(*parts).resolve()
    if path == base or not path.is_relative_to(base):
        raise UnsafePath(f"{Path(root).joinpath(*parts)} resolves to {path}, outside {base}; refusing to write there")
    return path


def below(root: str | Path, relative: str | Path) -> Path:
    """`root/relative` for writing, refused if a component under `root` is a symbolic link or '..'.

    `root` itself may be a link (where a user put the store); nothing inside it may be, so a
    planted link to a folder or file elsewhere is never written through. Missing components are
    fine: they will be created as real folders.
    """
    path = Path(root)
    for part in Path(relative).parts:
        if part in ("..", "") or Path(part).is_absolute():
            raise UnsafePath(f"{Path(root) / relative}: a path inside the store may not be absolute or contain '..'")
        path = path / part
        if path.is_symlink():
            raise UnsafePath(f"{path} is a symbolic link inside the store; refusing to write through it")
    return path


def open_lock_file(path: Path) -> int:
    """A lock file's descriptor, opened without following a symbolic link (created 0o600 if missing)."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if path.is_symlink():
            raise UnsafePath(f"{path} is a symbolic link; refusing to open it as the store's lock") from None
        raise exc
