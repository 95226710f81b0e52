"""Where vase may write: board names as safe slugs, output paths kept under their root, no
writing through symbolic links planted in a store.

A board's name becomes folder names (`<out>/stores/<name>`, `<out>/runs/<run id>/<name>`), and
anyone who can edit a nightly config or write into a store is not thereby allowed to make vase
write elsewhere. These checks are the one place that rule lives.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from pathlib import Path

SLUG = re.compile(r"[a-z0-9][a-z0-9._-]*")
CATEGORY_PREFIX = "category="  # a per-category board's folder, inside its board's (`pipeline.report.folders`)
CATEGORY_SLUG_CHARS = 48
HASHED = re.compile(r"-[0-9a-f]{10}$")
URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")  # s3://bucket/key, gs://, az://: object storage, never a local path


def is_url(address: str | Path) -> bool:
    """Whether a store, log or output address names object storage (`scheme://...`) rather than a
    local path. A `Path` never is: `Path("s3://b/k")` has already lost a slash, so URLs stay text."""
    return isinstance(address, str) and URL.match(address) is not None


class UnsafePath(ValueError):
    """A name or path that would make vase write outside where it should."""


def check_board_name(name: object, config: str | Path) -> str:
    """`name` if it is a safe slug (lowercase letters, digits, '.', '_', '-'; no '..')."""
    if not isinstance(name, str) or not SLUG.fullmatch(name) or ".." in name:
        raise UnsafePath(f"{config}: board {name!r}: a board name must match [a-z0-9][a-z0-9._-]* without '..' "
                         "(it names the board's folders under out/)")
    return name


def category_folder(category: str) -> str:
    """The folder name of a category's board: `category=<slug>`.

    Categories are user text. One that is already a short safe slug (`coding`) keeps its text;
    any other (`Hard Prompts`, `../x`, a look-alike `cоding` with a Cyrillic o, 300 characters)
    becomes an ASCII slug of it plus 10 hex digits of the SHA-256 of its exact text, so two
    categories that fold to the same slug still get distinct folders, and a folder's name depends
    on its category alone (the nightly's history follows it from run to run). A kept slug never
    ends like a hashed one, so the two kinds of names cannot meet.
    """
    if SLUG.fullmatch(category) and ".." not in category and len(category) <= CATEGORY_SLUG_CHARS \
            and not HASHED.search(category):
        return CATEGORY_PREFIX + category
    ascii_text = unicodedata.normalize("NFKD", category).encode("ascii", "ignore").decode().lower()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text).strip("-")[:CATEGORY_SLUG_CHARS].rstrip("-")
    digest = hashlib.sha256(category.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return CATEGORY_PREFIX + (f"{slug}-{digest}" if slug else digest)


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
