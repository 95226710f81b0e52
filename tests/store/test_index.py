"""The store's id index (`pipeline.store.index`): runs spilled, merged, committed under names of
their own and collected; rebuilt from the partitions when lost. Small files with `SPILL` lowered,
so that every path of the index is taken in well under a second."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from pipeline.logs import delimited
from pipeline.logs.identity import NOT_FOUND, where
from pipeline.store import DamagedStore, Store, index

HEADER = "battle_id,model_a,model_b,winner,timestamp\n"


def battles(ids: range) -> str:
    return "".join(f"b{i},m{i % 3},m{(i + 1) % 3},model_a,2024-01-01T10:00:00Z\n" for i in ids)


def run_files(store: Store) -> set[str]:
    return {p.relative_to(store.root).as_posix() for p in (store.root / index.FOLDER).rglob("*") if p.is_file()}


def listed_runs(store: Store) -> list[dict]:
    return json.loads((store.root / "manifest.json").read_text())["ids"]["battles"]["runs"]


def test_a_file_whose_ids_spill_commits_them_as_a_run_named_by_the_index(tmp_path, monkeypatch):
    monkeypatch.setattr(index, "SPILL", 20)  # the file's 20 ids, one batch: SPILL ids or more go to a temporary file
    spilled = []
    spill = index.FileIds._spill
    monkeypatch.setattr(index.FileIds, "_spill", lambda self, run: spilled.append(len(run)) or spill(self, run))
    log = tmp_path / "log.csv"
    log.write_text(HEADER + battles(range(20)))
    store = Store(tmp_path / "store")
    store.ingest([log], "battles")
    [run] = listed_runs(store)
    assert spilled == [20]
    assert run["ids"] == 20 and re.fullmatch(r"ids/battles/run-[0-9a-f]{32}\.npy", run["path"]), run
    assert run_files(store) == {run["path"]}  # renamed from the temporary: nothing else left
    again = tmp_path / "again.csv"
    again.write_text(HEADER + battles(range(15, 25)))
    [report] = store.ingest([again], "battles")
    assert (report.rows_accepted, report.rows_quarantined) == (5, 5)  # found in the committed run


def test_the_spilled_ids_of_a_file_refused_midway_are_deleted_with_it(tmp_path, monkeypatch):
    monkeypatch.setattr(index, "SPILL", 8)
    monkeypatch.setattr(delimited, "CHUNK_BYTES", 300)  # batches of a few lines: ids spill before the bad line
    spilled = []
    spill = index.FileIds._spill
    monkeypatch.setattr(index.FileIds, "_spill", lambda self, run: spilled.append(len(run)) or spill(self, run))
    bad = tmp_path / "bad.csv"
    bad.write_bytes((HEADER + battles(range(40)) + "b99,caf\xe9,m1,model_a,2024-01-01T10:00:00Z\n").encode("latin-1"))
    good = tmp_path / "good.csv"
    good.write_text(HEADER + battles(range(100, 103)))
    store = Store(tmp_path / "store")
    reports = store.ingest([bad, good], "battles")
    assert [r.status for r in reports] == ["unreadable", "ingested"] and "line 42" in reports[0].error
    assert spilled  # the bad file's ids were on disk when it was refused
    assert run_files(store) == {run["path"] for run in listed_runs(store)}  # only the good file's run
    assert sum(run["ids"] for run in listed_runs(store)) == 3


def test_a_files_runs_merge_while_the_newest_is_at_least_half_the_one_before_and_still_find_every_id(tmp_path):
    # "merge the newest while it is at least half the one before" (2 * newest >= the one before), one id a
    # batch: [1]; [1, 1] -> [2]; [2, 1] -> [3]; [3, 1] stays (2 < 3); [3, 1, 1] -> [3, 2] -> [5]; [5, 1];
    # [5, 1, 1] -> [5, 2] (4 < 5).
    ids = index.FileIds(index.KindIndex(tmp_path / "store", "battles"), 0)
    sizes = add_one_id_a_batch(ids, 7)
    assert sizes == [[1], [2], [3], [3, 1], [5], [5, 1], [5, 2]]
    high, low = np.arange(1000, 1008, dtype=np.uint64), np.arange(8, dtype=np.uint64)
    assert ids.find(high, low).tolist() == where(0, np.arange(7)).tolist() + [NOT_FOUND]


def add_one_id_a_batch(ids: index.FileIds, count: int) -> list[list[int]]:
    """The sizes of the runs after each of `count` batches of one new id."""
    sizes = []
    for i in range(count):
        ids.add(np.array([1000 + i], np.uint64), np.array([i], np.uint64), where(0, np.array([i])))
        sizes.append([len(run) for run in ids.runs])
    return sizes


def test_runs_merge_only_up_to_the_largest_run(tmp_path, monkeypatch):
    monkeypatch.setattr(index.FileIds, "max_run", 3)
    # As above, but no merge past 3 ids: [2, 1] -> [3] (3 ids: at the bound); [3, 1, 1] -> [3, 2] (5 > 3);
    # [3, 2, 1] -> [3, 3]; [3, 3, 1] (2 < 3).
    ids = index.FileIds(index.KindIndex(tmp_path / "store", "battles"), 0)
    assert add_one_id_a_batch(ids, 7) == [[1], [2], [3], [3, 1], [3, 2], [3, 3], [3, 3, 1]]


@pytest.mark.parametrize("spill_at", [2, 3])  # every merge of two ids or more goes to a file; or of three (two in memory)
def test_spilled_runs_merged_away_are_deleted_as_the_file_is_read(tmp_path, monkeypatch, spill_at):
    monkeypatch.setattr(index, "SPILL", spill_at)
    spilled = []
    spill = index.FileIds._spill
    monkeypatch.setattr(index.FileIds, "_spill", lambda self, run: spilled.append(len(run)) or spill(self, run))
    ids = index.FileIds(index.KindIndex(tmp_path / "store", "battles"), 0)
    folder = tmp_path / "store" / index.FOLDER / "battles"
    for step in range(7):
        ids.add(np.array([1000 + step], np.uint64), np.array([step], np.uint64), where(0, np.array([step])))
        on_disk = {p.relative_to(tmp_path / "store").as_posix() for p in folder.glob("*")} if folder.exists() else set()
        assert on_disk == {p for p in ids.paths if p is not None} and len(ids.paths) == len(ids.runs), step
    assert [len(run) for run in ids.runs] == [5, 2] and len(on_disk) == (2 if spill_at == 2 else 1)  # (the 2 in memory under 3)
    assert spilled == []  # each merge went straight to its file, none through memory first
    ids.discard()
    assert list(folder.glob("*")) == []


def test_a_run_holding_pickled_objects_is_damage_never_unpickled(tmp_path):
    path = tmp_path / "run-0.npy"
    np.save(path, np.array([{"planted": "object"}], dtype=object), allow_pickle=True)
    with pytest.raises(DamagedStore, match=r"\(ValueError: Array can't be memory-mapped: Python objects in dtype\.\)"):
        index._load(path)  # (refused by the memory map itself, before any unpickling: allow_pickle is never reached)


def test_the_commit_merges_runs_as_a_file_does_up_to_the_largest_run(tmp_path, monkeypatch):
    from pipeline.logs.identity import Run

    def committed(sizes: list[int]) -> list[int]:
        kind = index.KindIndex(tmp_path / "store", "battles")
        for i, size in enumerate(sizes):  # runs of distinct ids, in memory (not yet written)
            high = np.arange(100 * i, 100 * i + size, dtype=np.uint64)
            kind.append(Run.of(high, high, where(0, np.arange(size))), None)
        entry, written = kind.commit()
        assert len(written) == len(entry["runs"])
        return [run["ids"] for run in entry["runs"]]

    # seven runs of one id: [1, 1] -> [2]; [2, 1] -> [3]; [3, 1]; [3, 1, 1] -> [3, 2] -> [5]; [5, 1]; [5, 1, 1] -> [5, 2]
    assert committed([1] * 7) == [5, 2]
    monkeypatch.setattr(index.SeenIds, "max_run", 3)  # and no merge past 3 ids: [3, 2] stays, [3, 2, 1] -> [3, 3]
    assert committed([1] * 7) == [3, 3, 1]


def test_a_committed_run_is_kept_under_its_name_until_a_manifest_no_longer_lists_it(tmp_path, monkeypatch, caplog):
    from pipeline.store import store as store_module

    store = Store(tmp_path / "store")
    big, small = tmp_path / "big.csv", tmp_path / "small.csv"
    big.write_text(HEADER + battles(range(20)))
    small.write_text(HEADER + battles(range(100, 101)))
    store.ingest([big], "battles")
    [first] = listed_runs(store)
    store.ingest([small], "battles")  # 1 id beside 20: no merge, the committed run is not written again
    assert listed_runs(store)[0]["path"] == first["path"] and len(listed_runs(store)) == 2
    merging = tmp_path / "merging.csv"  # 30 ids: merged with both runs, which the manifest still lists until saved
    merging.write_text(HEADER + battles(range(200, 230)))

    def killed(self, path):
        raise KeyboardInterrupt("killed before the manifest")

    monkeypatch.setattr(store_module.Manifest, "save", killed)
    with pytest.raises(KeyboardInterrupt):
        store.ingest([merging], "battles")
    monkeypatch.undo()
    assert run_files(store) == {run["path"] for run in listed_runs(store)}  # the listed runs all still there
    with caplog.at_level("WARNING"):
        [report] = store.ingest([merging], "battles")
    assert report.rows_accepted == 30 and not [r for r in caplog.records if "rebuilding" in r.getMessage()]


def test_a_rebuild_finds_each_stored_id_at_its_files_ordinal(tmp_path):
    import pyarrow as pa

    from pipeline.logs.identity import LINE_BITS, key_hashes, key_text

    store = Store(tmp_path / "store")
    quarantined = tmp_path / "quarantined.csv"  # every row refused (a model against itself): no partition at all
    quarantined.write_text(HEADER + "b900,m1,m1,model_a,2024-01-01T10:00:00Z\n")
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    first.write_text(HEADER + battles(range(5)))
    second.write_text(HEADER + battles(range(10, 13)))
    reports = store.ingest([first, quarantined, second], "battles")
    assert [len(r.partitions) for r in reports] == [1, 0, 1]
    entry = store.manifest.ids["battles"]
    stored = sorted((r for r in store.manifest.files.values() if r.status == "ingested"), key=lambda r: (r.ingested_at, r.key))
    rebuilt = index.rebuild(store.root, "battles", stored, lambda name: store.dictionary(name).names, entry["files"])
    assert rebuilt.files == entry["files"]  # the ordinals kept, none added
    keys = key_text(pa.table({"battle_id": [f"b{i}" for i in [*range(5), *range(10, 13), 900]]}), ("battle_id",))
    found = rebuilt.find(*key_hashes(keys))
    ordinals = [entry["files"].index(r.sha256[:16]) for r in (reports[0], reports[2])]
    assert (found >> np.uint64(LINE_BITS)).tolist()[:8] == [ordinals[0]] * 5 + [ordinals[1]] * 3  # lines unknown: 0
    assert found[8] == NOT_FOUND and (found[:8] & np.uint64((1 << LINE_BITS) - 1)).tolist() == [0] * 8
    lost = index.rebuild(store.root, "battles", stored, lambda name: store.dictionary(name).names)  # no ordinals kept
    assert lost.files == [r.sha256[:16] for r in stored]  # numbered in the order given
    (store.root / reports[2].partitions[0].path).write_bytes(b"not parquet")
    with pytest.raises(DamagedStore, match=f"^{re.escape(str(store.root / reports[2].partitions[0].path))}: "):
        index.rebuild(store.root, "battles", stored, lambda name: store.dictionary(name).names)


def test_a_rebuild_leaves_out_the_ids_a_reader_made_up(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.logs.identity import key_hashes, key_text

    store = Store(tmp_path / "store")
    nameless = tmp_path / "nameless.csv"  # no battle_id column
    nameless.write_text("model_a,model_b,winner\nx,y,model_a\ny,z,tie\n")
    named = tmp_path / "named.csv"
    named.write_text(HEADER + battles(range(2)))
    reports = store.ingest([nameless, named], "battles")
    # As a store written before ids of content: the reader's made-up ids, `<file name>:<line>`, were stored
    path = store.root / reports[0].partitions[0].path
    table = pq.read_table(path)
    made_up = ["nameless.csv:2", "nameless.csv:3"]
    pq.write_table(table.set_column(table.schema.get_field_index("battle_id"), "battle_id", pa.array(made_up)), path)
    rebuilt = index.rebuild(store.root, "battles", reports, lambda name: store.dictionary(name).names)
    found = rebuilt.find(*key_hashes(key_text(pa.table({"battle_id": [*made_up, "b0", "b1"]}), ("battle_id",))))
    assert [f == NOT_FOUND for f in found.tolist()] == [True, True, False, False]  # (another nameless.csv's rows are no duplicates)
