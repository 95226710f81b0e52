"""The kept sequence in column files on a local store (`pipeline.stats.cache.append_snapshot`): a
nightly appends the new rows in place, and whatever happened to the files since (a truncation, an
edit, a crash between the appends and the index, late data, agents whose local ids shift), the
nightly gives the bytes a reduction from scratch gives."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import numpy as np
import pytest

from pipeline.stats import cache as cache_module
from pipeline.stats import reduce_store
from pipeline.stats import sequence as sequence_module
from pipeline.store import Store
from tests.stats.test_cache import assert_identical, is_snapshot, is_summed
from tests.stats.test_incremental import write_battles
from tests.stats.test_reduce import write_ballots


def nightly(store: Store):
    return reduce_store(store, "battles", {"sequence"}, use_cache=True)


def column_files(store: Store) -> dict[str, Path]:
    """The snapshot's column files, by column name."""
    return {path.stem.rsplit(".", 1)[1]: path for path in (store.root / "cache").rglob(f"*{cache_module.COLUMN_SUFFIX}")}


def day(tmp_path: Path, number: int, rows: int = 40, agents: int = 5) -> Path:
    path = tmp_path / f"day{number:02d}.csv"
    write_battles(path, np.random.default_rng(number), rows, agents, 2, 2, number)
    return path


def kept_night(tmp_path: Path) -> Store:
    """A store whose first day is kept in column files, and whose second is ingested, not yet reduced."""
    store = Store(tmp_path / "store")
    store.ingest([day(tmp_path, 1)], "battles")
    nightly(store)
    store.ingest([day(tmp_path, 2)], "battles")
    return store


def check_nightly(store: Store) -> None:
    assert_identical(reduce_store(store, "battles", {"sequence"}), nightly(store))


def test_a_nightly_appends_the_new_rows_to_the_kept_column_files_in_place_without_reading_them(tmp_path, monkeypatch):
    store = kept_night(tmp_path)
    before = {name: (path.stat().st_ino, path.read_bytes()) for name, path in column_files(store).items()}
    assert {"a", "b", "score", "group"} <= before.keys()  # weight and players: one value each, in the index
    monkeypatch.setattr(cache_module, "_segment_digests", lambda *args: pytest.fail("read a column file as written"))
    check_nightly(store)
    after = column_files(store)
    assert after.keys() == before.keys()
    for name, (inode, content) in before.items():
        assert after[name].stat().st_ino == inode  # the same file, not a rewritten one
        grown = after[name].read_bytes()
        assert grown.startswith(content) and len(grown) > len(content)


@pytest.mark.parametrize("damage", ["truncated", "edited"])
def test_a_column_file_not_as_written_is_refused_and_the_sequence_built_from_every_unit(tmp_path, caplog, damage):
    store = kept_night(tmp_path)
    path = column_files(store)["a"]
    content = bytearray(path.read_bytes())
    if damage == "truncated":
        path.write_bytes(content[:-4])  # the last row's agent lost
    else:
        content[:4] = (int.from_bytes(content[:4], "little") ^ 1).to_bytes(4, "little")  # same size, another first agent
        path.write_bytes(content)
    with caplog.at_level(logging.WARNING):
        check_nightly(store)
    assert "cached snapshot refused (its column file" in caplog.text


def test_a_nightly_killed_between_its_appends_and_its_index_leaves_the_previous_snapshot_and_the_next_one_cuts_the_rest(
        tmp_path, monkeypatch, caplog):
    store = kept_night(tmp_path)
    first = {name: path.stat().st_size for name, path in column_files(store).items()}

    def killed(*args):
        raise KeyboardInterrupt("killed before the index was replaced")

    monkeypatch.setattr(cache_module, "_store_index", killed)
    with pytest.raises(KeyboardInterrupt):
        nightly(store)
    monkeypatch.undo()
    files = column_files(store)
    assert all(files[name].stat().st_size > size for name, size in first.items())  # the rows appended, not counted
    with files["a"].open("ab") as handle:
        handle.write(b"\x07" * 4096)  # more than this night appends: what a bigger night's crash leaves
    with caplog.at_level(logging.WARNING):
        check_nightly(store)
    assert "refused" not in caplog.text  # read and checked once, not rebuilt
    rows = len(reduce_store(store, "battles", {"sequence"}).extra["sequence"])
    assert {path.stat().st_size for name, path in column_files(store).items() if name in ("a", "b", "score", "group")} == {4 * rows}


def test_late_rows_after_a_snapshot_in_column_files_write_a_new_one_which_the_next_night_extends(tmp_path):
    store = Store(tmp_path / "store")
    store.ingest([day(tmp_path, 1), day(tmp_path, 3)], "battles")
    nightly(store)
    old = set(column_files(store).values())
    store.ingest([day(tmp_path, 2)], "battles")  # battles before the last kept one
    check_nightly(store)
    assert not old & set(column_files(store).values())  # a new generation; the old one's files removed
    index = next(iter(old)).name.split(".")[0]
    crashed = next(iter(old)).with_name(f"{index}.dead.a.col")
    crashed.write_bytes(b"\0" * 8)  # what a rebuild killed before its index leaves
    store.ingest([day(tmp_path, 4)], "battles")
    check_nightly(store)
    assert not crashed.exists()


def test_an_agent_new_to_the_battles_but_not_to_the_store_shifts_the_local_ids_and_the_sequence_is_built_again(
        tmp_path, monkeypatch):
    store = Store(tmp_path / "store")
    store.ingest([day(tmp_path, 1, agents=4)], "battles")  # m0..m3
    ballots = tmp_path / "ballots.jsonl"
    write_ballots(ballots, [([["late-comer"], ["m0"]], 1.0)])
    store.ingest([ballots], "ballots")  # late-comer: a store id before m4's
    store.ingest([day(tmp_path, 2, agents=5)], "battles")  # m4
    nightly(store)
    newcomer = tmp_path / "day03.csv"
    newcomer.write_text("battle_id,model_a,model_b,winner,judge,prompt,timestamp\n"
                        "x1,late-comer,m4,model_a,j0,p0,2024-01-03T00:00:00\n")
    store.ingest([newcomer], "battles")
    finalized: list[int] = []
    original = sequence_module._finalize
    monkeypatch.setattr(sequence_module, "_finalize", lambda runs, *args: finalized.append(sum(t.num_rows for t in runs.tables))
                        or original(runs, *args))
    built = nightly(store)
    monkeypatch.undo()
    assert_identical(reduce_store(store, "battles", {"sequence"}), built)
    assert finalized == [len(built.extra["sequence"])]  # every row, not the new one alone: m4's local id moved


@pytest.mark.parametrize("mark, value, reason", [
    ("generation", b"../../elsewhere", "it names column files outside its own"),
    ("a.dtype", b"|O", "its column files are not columns of numbers in segments"),  # objects: what np.load refuses to unpickle
])
def test_a_planted_index_is_refused(tmp_path, caplog, mark, value, reason):
    store = kept_night(tmp_path)
    [index] = [path for path in (store.root / "cache").rglob("*.npz") if is_snapshot(path) and not is_summed(path)]
    with np.load(index, allow_pickle=False) as stored:
        arrays = {name: stored[name] for name in stored.files}
    arrays[f"{cache_module.COLUMNS}.{mark}"] = np.frombuffer(value, np.uint8)
    del arrays[cache_module.CHECKSUM]
    arrays[cache_module.CHECKSUM] = np.frombuffer(cache_module.checksum(
        {name: x for name, x in arrays.items() if name != cache_module.KEY}).encode(), np.uint8)  # as a planter would
    with index.open("wb") as handle:
        np.savez(handle, **arrays)
    with caplog.at_level(logging.WARNING):
        check_nightly(store)
    assert f"cached snapshot refused ({reason})" in caplog.text


def test_a_reduction_waits_for_the_one_extending_the_snapshot(tmp_path):
    store = kept_night(tmp_path)
    place = cache_module.SnapshotPlace(str(store.locate(".")), "battles", "sequence", True, None)
    assert place.path.exists()  # the place the reduction keeps its snapshot at
    results = []
    with cache_module.snapshot_lock(place):  # another reduction appending to the column files
        waiting = threading.Thread(target=lambda: results.append(nightly(store)))
        waiting.start()
        waiting.join(timeout=5)
        assert waiting.is_alive() and not results
    waiting.join()
    assert_identical(reduce_store(store, "battles", {"sequence"}), results[0])
