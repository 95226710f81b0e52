"""Probes: board names, output paths and store writes that would land outside where they belong."""

from __future__ import annotations

import hashlib
import os

import pytest
import yaml

from pipeline.board import load_boards
from pipeline.paths import CATEGORY_PREFIX, CATEGORY_SLUG_CHARS, SLUG, UnsafePath, below, category_folder, check_board_name, inside
from pipeline.report.runs import staging_folder
from pipeline.store import Store
from tests.conftest import SAMPLES

BATTLES = "battle_id,model_a,model_b,winner,timestamp\n1,a,b,model_a,2024-01-01T00:00:00Z\n2,b,c,tie,2024-01-02T00:00:00Z\n"


def config_with(tmp_path, name) -> os.PathLike:
    config = tmp_path / "nightly.yaml"
    config.write_text(yaml.safe_dump({"boards": [{"name": name, "kind": "battles", "sources": [str(SAMPLES / "llmfao")],
                                                  "methods": ["borda"]}]}))
    return config


@pytest.mark.parametrize("name", ["../../escaped", "/tmp/anywhere", "a/b", "..", "a..b", "Upper", "-dash", ".hidden", "",
                                  "ａrena", "arena\n", 42, None])
def test_unsafe_board_names_in_a_config_are_refused_naming_the_file_and_board(tmp_path, name):
    config = config_with(tmp_path, name)
    with pytest.raises(UnsafePath) as error:
        load_boards(config)
    message = str(error.value)
    assert str(config) in message and repr(name) in message and "\n" not in message.replace(repr(name), "")


@pytest.mark.parametrize("name", ["llmfao-crowd", "f1-2021-2023", "a", "v1.2_b"])
def test_slugs_are_accepted(tmp_path, name):
    assert [b.name for b in load_boards(config_with(tmp_path, name))] == [name]
    assert check_board_name(name, "x.yaml") == name


def test_output_paths_must_resolve_under_their_root(tmp_path):
    out = tmp_path / "out"
    assert inside(out, "stores", "arena") == (out / "stores" / "arena").resolve()
    for parts in [("stores", "../../escaped"), ("/etc",), ("..",), ("",)]:
        with pytest.raises(UnsafePath):
            inside(out, *parts)
    (out / "stores").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (out / "stores" / "arena").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafePath, match="outside"):
        inside(out, "stores", "arena")


def test_a_symlinked_runs_folder_is_never_staged_into(tmp_path):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "runs").symlink_to(elsewhere)
    with pytest.raises(UnsafePath):
        with staging_folder(out, "2024-01-01T000000.000000Z"):
            pass
    assert list(elsewhere.iterdir()) == []


def test_below_refuses_links_and_dot_dot_under_the_root(tmp_path):
    assert below(tmp_path, "battles/date=2024-01-01/x.parquet") == tmp_path / "battles/date=2024-01-01/x.parquet"
    for relative in ["../x", "battles/../../x", "/etc/passwd"]:
        with pytest.raises(UnsafePath, match="may not be absolute or contain '..'"):
            below(tmp_path, relative)


def test_a_store_whose_root_is_a_link_still_works(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    source = tmp_path / "battles.csv"
    source.write_text(BATTLES)
    [report] = Store(tmp_path / "link").ingest([source], "battles")
    assert report.status == "ingested" and (tmp_path / "real" / "manifest.json").exists()


def test_a_symlinked_partition_folder_is_refused_and_nothing_is_written_outside(tmp_path):
    store, outside = tmp_path / "store", tmp_path / "outside"
    (store / "battles").mkdir(parents=True)
    outside.mkdir()
    (store / "battles" / "date=2024-01-01").symlink_to(outside, target_is_directory=True)
    source = tmp_path / "battles.csv"
    source.write_text(BATTLES)
    with pytest.raises(UnsafePath, match="symbolic link"):
        Store(store).ingest([source], "battles")
    assert list(outside.iterdir()) == []
    assert not (store / "manifest.json").exists()


def test_a_symlinked_partition_file_is_refused(tmp_path):
    source = tmp_path / "battles.csv"
    source.write_text(BATTLES)
    Store(tmp_path / "probe").ingest([source], "battles")
    partition = next(p.relative_to(tmp_path / "probe") for p in (tmp_path / "probe").rglob("*.parquet") if "battles" in p.parts)
    target = tmp_path / "target"
    target.write_text("untouched")
    store = tmp_path / "store"
    (store / partition).parent.mkdir(parents=True)
    (store / partition).symlink_to(target)
    with pytest.raises(UnsafePath, match="symbolic link"):
        Store(store).ingest([source], "battles")
    assert target.read_text() == "untouched" and (store / partition).is_symlink()


def test_files_behind_a_symlinked_kind_folder_are_never_removed_as_unlisted(tmp_path):
    # The next ingest removes partition files no manifest lists; behind a link it must not look.
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "date=2024-01-01").mkdir(parents=True)
    (elsewhere / "date=2024-01-01" / "mine.parquet").write_text("a user's file")
    store = tmp_path / "store"
    store.mkdir()
    (store / "battles").symlink_to(elsewhere)
    source = tmp_path / "battles.csv"
    source.write_text(BATTLES)
    with pytest.raises(UnsafePath, match="symbolic link"):
        Store(store).ingest([source], "battles")
    assert (elsewhere / "date=2024-01-01" / "mine.parquet").read_text() == "a user's file"


def test_a_symlinked_lock_file_is_refused(tmp_path):
    store, target = tmp_path / "store", tmp_path / "target"
    store.mkdir()
    target.write_text("untouched")
    (store / ".lock").symlink_to(target)
    source = tmp_path / "battles.csv"
    source.write_text(BATTLES)
    with pytest.raises(UnsafePath, match="lock"):
        Store(store).ingest([source], "battles")
    assert target.read_text() == "untouched" and oct(target.stat().st_mode & 0o777) != "0o600"
    assert not (store / "manifest.json").exists()


def test_the_lock_file_is_private(tmp_path):
    source = tmp_path / "battles.csv"
    source.write_text(BATTLES)
    Store(tmp_path / "store").ingest([source], "battles")
    assert (tmp_path / "store" / ".lock").stat().st_mode & 0o777 == 0o600


HOSTILE_CATEGORIES = ["coding", "Coding", "coding ", "c\u043eding", "\uff43oding", "../../escaped", "/etc/passwd", "a/b", "..", ".hidden",
                      "", " ", "\u65e5\u672c\u8a9e", "\u4e2d\u6587", "x" * 300, "x" * 301, "a..b", "nul\x00byte", "line\nbreak",
                      "coding-0123456789", "con", "Hard Prompts", "hard-prompts"]


def test_category_folders_are_safe_distinct_and_depend_on_the_category_alone():
    folders = [category_folder(c) for c in HOSTILE_CATEGORIES]
    assert len(set(folders)) == len(folders)  # look-alikes, case, truncation and slug clashes stay apart
    for folder in folders:
        name = folder.removeprefix(CATEGORY_PREFIX)
        assert folder.startswith(CATEGORY_PREFIX) and SLUG.fullmatch(name) and ".." not in name and len(folder) <= 70
    assert category_folder("coding") == "category=coding" and category_folder("hard-prompts") == "category=hard-prompts"
    assert category_folder("Hard Prompts").startswith("category=hard-prompts-")
    assert [category_folder(c) for c in reversed(HOSTILE_CATEGORIES)] == folders[::-1]  # no dependence on the others


def test_the_board_name_refusal_says_what_a_name_may_be():
    with pytest.raises(UnsafePath) as error:
        check_board_name("Upper", "x.yaml")
    assert str(error.value) == ("x.yaml: board 'Upper': a board name must match [a-z0-9][a-z0-9._-]* without '..' "
                                "(it names the board's folders under out/)")


def hashed(category: str) -> str:
    """The 10 hex digits of the SHA-256 of a category's exact text, lone surrogates included."""
    return hashlib.sha256(category.encode("utf-8", "surrogatepass")).hexdigest()[:10]


def test_a_category_folder_keeps_a_slug_up_to_its_limit_then_cuts_and_hashes():
    longest = "k" * CATEGORY_SLUG_CHARS
    assert category_folder(longest) == CATEGORY_PREFIX + longest
    assert category_folder(longest + "k") == f"{CATEGORY_PREFIX}{longest}-{hashed(longest + 'k')}"
    cut_at_a_separator = "a" * (CATEGORY_SLUG_CHARS - 1) + " b"  # the cut slug would end in "-"
    assert category_folder(cut_at_a_separator) == f"{CATEGORY_PREFIX}{'a' * (CATEGORY_SLUG_CHARS - 1)}-{hashed(cut_at_a_separator)}"
    surrogate = "x\udcff"  # text read with surrogateescape
    assert category_folder(surrogate) == f"{CATEGORY_PREFIX}x-{hashed(surrogate)}"
