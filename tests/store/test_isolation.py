"""Ingest isolation and exactly-once: a bad file is refused in one line and recorded, the others
go on; a record id stored before is a duplicate, whatever the file's name or format."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from pipeline.store import Store
from pipeline.store import store as store_module

HEADER = "battle_id,model_a,model_b,winner,timestamp\n"


def battles(ids: range, day: str = "2024-01-01") -> str:
    return "".join(f"b{i},m{i % 3},m{(i + 1) % 3},model_a,{day}T10:00:00Z\n" for i in ids)


@pytest.fixture
def good(tmp_path):
    path = tmp_path / "good.csv"
    path.write_text(HEADER + battles(range(5)))
    return path


def quarantine(store: Store, report) -> list[dict]:
    return pq.read_table(store.root / report.quarantine).to_pylist() if report.quarantine else []


def test_bad_files_are_refused_in_one_line_and_the_others_ingested(tmp_path, good):
    latin = tmp_path / "latin.csv"
    latin.write_bytes((HEADER + "x1,caf\xe9,b,model_a,2024-01-01\n").encode("latin-1"))
    cut = tmp_path / "cut.parquet"
    pl.DataFrame({"model_a": ["a"] * 100, "model_b": ["b"] * 100, "winner": ["tie"] * 100}).write_parquet(cut)
    cut.write_bytes(cut.read_bytes()[:-40])
    store = Store(tmp_path / "store")
    reports = store.ingest([latin, good, cut], "battles")
    assert [r.status for r in reports] == ["unreadable", "ingested", "unreadable"]
    for report, name in zip(reports[::2], ("latin.csv", "cut.parquet")):
        assert name in report.error and "\n" not in report.error
    assert "not UTF-8" in reports[0].error and "line 2" in reports[0].error
    assert reports[1].rows_accepted == 5
    manifest = json.loads((store.root / "manifest.json").read_text())
    refused = {e["source"]: e["error"] for e in manifest["files"] if e["status"] == "unreadable"}
    assert set(refused) == {str(latin), str(cut)}


def test_a_refused_file_is_not_read_again_until_it_changes(tmp_path, good, monkeypatch):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"\xff\xfeb\x00")
    store = Store(tmp_path / "store")
    [first] = store.ingest([bad], "battles")
    assert first.status == "unreadable" and "UTF-16" in first.error
    manifest = (store.root / "manifest.json").read_bytes()
    reads = []
    monkeypatch.setattr(store_module, "read_batches", lambda *a, **k: reads.append(a) or iter(()))
    [again] = store.ingest([bad], "battles")
    assert again.status == "unreadable" and "UTF-16" in again.error and "not read again" in again.error
    assert reads == [] and (store.root / "manifest.json").read_bytes() == manifest
    monkeypatch.undo()
    bad.write_text(HEADER + battles(range(2)))  # fixed: a new content hash, read again
    [fixed] = store.ingest([bad], "battles")
    assert fixed.status == "ingested" and fixed.rows_accepted == 2


def test_a_crash_inside_ingest_refuses_that_file_only_and_leaks_no_names(tmp_path, good, monkeypatch):
    other = tmp_path / "other.csv"
    other.write_text(HEADER + "z1,new_model,m0,tie,2024-02-01\n")
    store = Store(tmp_path / "store")
    real = store_module.encode

    def fragile(kind, table, maps):
        encoded = real(kind, table, maps)
        if "new_model" in maps["agents"].names:
            raise RuntimeError("boom\nsecond line")
        return encoded

    monkeypatch.setattr(store_module, "encode", fragile)
    reports = store.ingest([other, good], "battles")
    assert [r.status for r in reports] == ["unreadable", "ingested"]
    assert reports[0].error == f"{other}: could not be read (RuntimeError: boom); this is a bug of vase, please report it"
    assert "new_model" not in store.dictionary("agents").names
    assert not list(store.root.rglob(".*tmp-*"))
    assert [p.rows for p in store.partitions("battles")] == [5]
    assert reports[0].sha256 not in store.manifest.files  # a bug of ours, not of the file: read again next time
    monkeypatch.undo()
    assert store.ingest([other], "battles")[0].status == "ingested"


def test_nan_and_out_of_range_timestamps_are_quarantined_not_refused(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(HEADER + "a,x,y,tie,nan\nb,x,y,tie,inf\nc,x,y,tie,1e13\nd,x,y,tie,2024-01-01\n")
    [report] = Store(tmp_path / "store").ingest([path], "battles")
    assert (report.status, report.rows_accepted, report.rows_quarantined) == ("ingested", 1, 3)


def test_the_same_battles_in_another_format_and_name_are_stored_once(tmp_path, good):
    parquet = tmp_path / "again.parquet"
    pl.read_csv(good, infer_schema=False).write_parquet(parquet)
    store = Store(tmp_path / "store")
    first, second = store.ingest([good, parquet], "battles")
    assert (second.rows_in, second.rows_accepted, second.rows_quarantined) == (5, 0, 5)
    reasons = [q["reason"] for q in quarantine(store, second)]
    assert reasons[0] == "duplicate battle_id (first in good.csv, line 2)"
    assert sum(p.rows for p in store.partitions("battles")) == 5
    # Across ingests too: the index is read back from the store.
    copy = tmp_path / "copy.jsonl"
    copy.write_text("".join(json.dumps(r) + "\n" for r in pl.read_csv(good, infer_schema=False).to_dicts()))
    [third] = store.ingest([copy], "battles")
    assert (third.rows_accepted, third.rows_quarantined) == (0, 5)


def test_a_grown_log_stores_only_its_new_rows(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text(HEADER + battles(range(4)))
    store = Store(tmp_path / "store")
    store.ingest([log], "battles")
    log.write_text(HEADER + battles(range(4)) + battles(range(4, 7), "2024-01-02"))
    [grown] = store.ingest([log], "battles")  # read from where the first version ended
    assert (grown.rows_in, grown.rows_accepted, grown.rows_quarantined) == (3, 3, 0)
    assert sum(p.rows for p in store.partitions("battles")) == 7
    rewritten = tmp_path / "rewritten.csv"  # the same log rewritten in another order: its ids catch it
    rewritten.write_text(HEADER + battles(range(4, 7), "2024-01-02") + battles(range(4)) + battles(range(7, 8)))
    [again] = store.ingest([rewritten], "battles")
    assert (again.rows_in, again.rows_accepted, again.rows_quarantined) == (8, 1, 7)


def test_partial_overlap_and_duplicates_within_a_file(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text(HEADER + battles(range(0, 6)))
    b.write_text(HEADER + battles(range(4, 10)) + battles(range(9, 10)))  # b9 twice in b
    store = Store(tmp_path / "store")
    _, second = store.ingest([a, b], "battles")
    assert (second.rows_in, second.rows_accepted, second.rows_quarantined) == (7, 4, 3)
    assert sorted((q["line"], q["reason"]) for q in quarantine(store, second)) == [
        (2, "duplicate battle_id (first in a.csv, line 6)"), (3, "duplicate battle_id (first in a.csv, line 7)"),
        (8, "duplicate battle_id (first at line 7)")]


def as_built_by_another_hasher(store: Store):
    """Mark the store's battles index as built by another hasher (it is then rebuilt); the manifest's path."""
    manifest_path = store.root / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["ids"]["battles"]["hasher"] = "another"
    manifest_path.write_text(json.dumps(manifest))
    return manifest_path


def test_an_index_lost_or_from_another_hasher_is_rebuilt_from_the_partitions(tmp_path, good):
    store = Store(tmp_path / "store")
    store.ingest([good], "battles")
    manifest_path = as_built_by_another_hasher(store)
    again = tmp_path / "again.csv"
    again.write_text(HEADER + battles(range(3, 8)))
    [report] = store.ingest([again], "battles")
    assert (report.rows_accepted, report.rows_quarantined) == (3, 2)
    assert quarantine(store, report)[0]["reason"] == "duplicate battle_id (first in good.csv, line 0)"  # line unknown after a rebuild
    runs = {r["path"] for r in json.loads(manifest_path.read_text())["ids"]["battles"]["runs"]}
    assert {str(p.relative_to(store.root)) for p in (store.root / "ids").rglob("*.npy")} == runs  # no stale runs


def test_temporary_files_of_a_killed_ingest_are_removed(tmp_path, good):
    store = Store(tmp_path / "store")
    store.ingest([good], "battles")
    stale = store.root / "battles" / "date=2024-01-01" / (".x.parquet.tmp-" + "0" * 32)
    stale.write_bytes(b"half")
    look_alike = store.root / "battles" / ".keep.tmp-notours"
    look_alike.write_bytes(b"mine")
    other = tmp_path / "other.csv"
    other.write_text(HEADER + battles(range(10, 12)))
    store.ingest([other], "battles")
    assert not stale.exists() and look_alike.exists()


def test_games_are_duplicates_as_whole_units(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("game_id,player,score\ng1,x,1\ng1,y,0\n")
    b.write_text("game_id,player,score\ng2,x,0\ng2,z,1\ng1,x,1\ng1,y,0\n")
    store = Store(tmp_path / "store")
    _, second = store.ingest([a, b], "games")
    assert (second.rows_accepted, second.rows_quarantined) == (2, 2)


def test_games_of_earlier_files_are_quarantined_whole_and_indexed_once_at_their_first_row(tmp_path):
    """Games whose rows lie far apart, ids that triage makes one (padding; NFD and NFC) and ones it
    keeps apart (case), in CSV and in Parquet with and without dictionaries: each game is in the
    index once, at the file and line of its first row, and its repeats in later files are
    quarantined whole, naming them."""
    import pyarrow as pa

    from pipeline.logs.identity import key_hashes, where

    a = tmp_path / "a.csv"  # the header is line 1
    fillers = "".join(f"f{n},a,1\nf{n},b,2\n" for n in range(30))  # f<n> at lines 5 + 2n and 6 + 2n
    a.write_text("game_id,player,place\ng1,a,1\n G1,a,1\nG1 ,b,2\n" + fillers + "g1,b,2\nge\u0301,a,1\ng\u00e9,b,2\n")
    b = tmp_path / "b.parquet"  # ids stored as a dictionary; the first row is line 1
    ids = ["new", "g1", "G1", "new", "g\u00e9 ", "g1", "G1", "ge\u0301", "gE\u0301", "g\u00c9"]
    pq.write_table(pa.table({"game_id": ids, "player": list("aaababbbab"), "place": [1, 1, 1, 2, 1, 2, 2, 2, 1, 2]}), b)
    c = tmp_path / "c.parquet"
    pq.write_table(pa.table({"game_id": ["f3", "f3", "last", "last"], "player": list("abab"), "place": [1, 2, 1, 2]}), c,
                   use_dictionary=False)
    empty, one = tmp_path / "empty.csv", tmp_path / "one.csv"
    empty.write_text("game_id,player,place\n")
    one.write_text("game_id,player,place\nsolo,a,1\nsolo,b,2\nsolo,c,3\n")
    store = Store(tmp_path / "store")
    reports = store.ingest([a, b, c, empty, one], "games")
    assert [(r.status, r.rows_accepted, r.rows_quarantined) for r in reports] == [
        ("ingested", 66, 0), ("ingested", 4, 6), ("ingested", 2, 2), ("ingested", 0, 0), ("ingested", 3, 0)]
    first_in_a = [(2, 2), (3, 3), (5, 66), (6, 2), (7, 3), (8, 66)]
    assert [(q["line"], q["reason"]) for q in quarantine(store, reports[1])] == [
        (line, f"duplicate game_id (first in a.csv, line {first})") for line, first in first_in_a]
    assert [(q["line"], q["reason"]) for q in quarantine(store, reports[2])] == [
        (line, "duplicate game_id (first in a.csv, line 11)") for line in (1, 2)]
    entry = json.loads((store.root / "manifest.json").read_text())["ids"]["games"]
    ordinal = {r.source: entry["files"].index(r.sha256[:16]) for r in reports}
    indexed = {"g1": (a, 2), "G1": (a, 3), **{f"f{n}": (a, 5 + 2 * n) for n in range(30)}, "g\u00e9": (a, 66),
               "new": (b, 1), "g\u00c9": (b, 9), "last": (c, 3), "solo": (one, 2)}
    high, low = key_hashes(pl.Series(list(indexed)))
    at = [int(where(ordinal[str(path)], np.array([line]))[0]) for path, line in indexed.values()]
    runs = np.concatenate([np.load(store.root / run["path"]) for run in entry["runs"]], axis=1)
    assert sorted(map(tuple, runs.T.tolist())) == sorted(zip(high.tolist(), low.tolist(), at))


def test_look_alike_names_are_kept_apart_and_reported(tmp_path, good):
    other = tmp_path / "other.csv"
    other.write_text(HEADER + "c1,M0,m1,tie,\nc2,\u043c1,m_2,tie,\nc3,m0,m1,tie,\n")  # m0, m1, m2 known; \u043c is Cyrillic
    store = Store(tmp_path / "store")
    store.ingest([good], "battles")
    [report] = store.ingest([other], "battles")
    assert sorted(report.look_alikes) == ["agents 'M0' looks like 'm0'", "agents 'm_2' looks like 'm2'",
                                          "agents '\u043c1' looks like 'm1'"]
    assert {"M0", "m_2", "\u043c1"} <= set(store.dictionary("agents").names)  # kept apart, not merged
    assert store.manifest.files[report.sha256].look_alikes == report.look_alikes


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_grown_log_without_ids_is_read_from_where_it_ended(tmp_path, suffix):
    rows = [{"model_a": "a", "model_b": f"b{i}", "winner": "tie"} for i in range(6)]

    def write(n):
        if suffix == ".csv":
            log.write_text("model_a,model_b,winner\n" + "".join(f"{r['model_a']},{r['model_b']},{r['winner']}\n" for r in rows[:n]))
        else:
            log.write_text("".join(json.dumps(r) + "\n" for r in rows[:n]))

    log = tmp_path / f"log{suffix}"
    write(4)
    store = Store(tmp_path / "store")
    [first] = store.ingest([log], "battles")
    write(6)
    log.write_text(log.read_text().replace('"b5"', '"b5", "extra": 1') if suffix == ".jsonl" else log.read_text())
    [grown] = store.ingest([log], "battles")
    assert grown.continues == first.sha256 and (grown.rows_in, grown.rows_accepted) == (2, 2)
    stored = pl.concat([pl.read_parquet(store.path(p)) for p in store.partitions("battles")])
    assert stored.height == 6
    moved = tmp_path / f"moved{suffix}"  # the same grown content under another name is skipped as a whole
    moved.write_bytes(log.read_bytes())
    assert store.ingest([moved], "battles")[0].status == "skipped"
    changed = tmp_path / f"changed{suffix}"  # an edited start is a new file, read whole
    changed.write_bytes(log.read_bytes().replace(b"b0", b"c0"))
    assert store.ingest([changed], "battles")[0].rows_in == 6


def test_digest_hashes_prefixes_that_end_lines(tmp_path):
    import hashlib

    from pipeline.store import files

    path = tmp_path / "f"
    path.write_bytes(b"ab\ncd\nef")
    digest = files.digest_file(path, [3, 4, 6, 100])
    assert digest.prefixes == {3: hashlib.sha256(b"ab\n").hexdigest(), 6: hashlib.sha256(b"ab\ncd\n").hexdigest()}
    assert (digest.sha256, digest.size, digest.newlines) == (hashlib.sha256(b"ab\ncd\nef").hexdigest(), 8, 2)


def test_the_index_spills_merges_and_collects_its_runs(tmp_path, monkeypatch):
    from pipeline.store import index

    from pipeline.logs import delimited

    monkeypatch.setattr(index, "SPILL", 8)  # a file's ids go to disk past 8
    monkeypatch.setattr(delimited, "CHUNK_BYTES", 300)  # and come in many batches
    spilled = []
    spill = index.FileIds._spill
    monkeypatch.setattr(index.FileIds, "_spill", lambda self, run: spilled.append(len(run)) or spill(self, run))
    store = Store(tmp_path / "store")
    for part in range(6):
        path = tmp_path / f"part{part}.csv"
        path.write_text(HEADER + battles(range(10 * part, 10 * part + 25)))  # overlaps the next part by 15
        [report] = store.ingest([path], "battles")
        assert report.rows_accepted == (25 if part == 0 else 10)
    manifest = json.loads((store.root / "manifest.json").read_text())
    runs = manifest["ids"]["battles"]["runs"]
    assert sum(r["ids"] for r in runs) == 75 and len(runs) < 6  # merged as they grew
    assert {str(p.relative_to(store.root)) for p in (store.root / "ids").rglob("*") if p.is_file()} == {r["path"] for r in runs}
    everything = tmp_path / "all.jsonl"
    everything.write_text("".join(json.dumps({"battle_id": f"b{i}", "model_a": "x", "model_b": "y", "winner": "tie"}) + "\n"
                                  for i in range(80)))
    [last] = store.ingest([everything], "battles")
    assert (last.rows_accepted, last.rows_quarantined) == (5, 75)
    assert spilled and not list(store.root.rglob(".*tmp-*"))


def test_mapped_runs_released_after_each_lookup_still_find_every_duplicate(tmp_path, monkeypatch):
    from pipeline.logs import delimited
    from pipeline.store import index

    monkeypatch.setattr(index, "SPILL", 8)  # runs go to disk, memory-mapped
    monkeypatch.setattr(index, "RESIDENT", 0)  # and their pages are released after every lookup
    monkeypatch.setattr(delimited, "CHUNK_BYTES", 300)
    released = []
    release = index.release_mapped
    monkeypatch.setattr(index, "release_mapped", lambda runs: released.append(
        sum(isinstance(r.data.base, index.mmap.mmap) for r in runs)) or release(runs))
    store = Store(tmp_path / "store")
    first, again = tmp_path / "first.csv", tmp_path / "again.csv"
    first.write_text(HEADER + battles(range(60)) + battles(range(0, 60, 7)))  # repeats within the file
    again.write_text(HEADER + battles(range(50, 90)))  # and across files
    reports = store.ingest([first], "battles") + store.ingest([again], "battles")
    assert [(r.rows_accepted, r.rows_quarantined) for r in reports] == [(60, 9), (30, 10)]
    assert max(released) > 0  # mapped runs were released, and read back for the next lookups


def test_a_log_written_to_while_it_is_read_is_not_half_ingested(tmp_path, good, monkeypatch):
    store = Store(tmp_path / "store")
    real = store_module.read_batches

    def appending(path, kind, **options):
        for batch in real(path, kind, **options):
            with open(path, "a") as handle:
                handle.write("b99,m0,m1,tie,2024-01-01\n")  # a writer appends while we read
            yield batch

    monkeypatch.setattr(store_module, "read_batches", appending)
    [report] = store.ingest([good], "battles")
    assert report.status == "unreadable" and report.error == f"{good} changed while it was read; ingest it again"
    assert store.partitions("battles") == [] and report.sha256 not in store.manifest.files  # tried again next time
    monkeypatch.undo()
    [again] = store.ingest([good], "battles")
    assert (again.status, again.rows_accepted) == ("ingested", 6)


def test_a_rebuilt_index_keeps_the_file_ordinals_so_ingest_positions_keep_increasing(tmp_path, good):
    """A refused file used up an ordinal: a rebuild that renumbered the files would give the next
    file an ordinal (and ingest positions) below those already stored."""
    from pipeline.logs.identity import INGEST_POSITION

    store = Store(tmp_path / "store")
    bad = tmp_path / "bad.csv"
    bad.write_text("model_a,model_b\nx,y\n")  # no winner column: refused, but numbered
    later = tmp_path / "later.csv"
    later.write_text(HEADER + battles(range(10, 13)))
    store.ingest([good, bad, later], "battles")
    as_built_by_another_hasher(store)
    last = tmp_path / "last.csv"
    last.write_text(HEADER + battles(range(20, 23)))
    reports = store.ingest([last], "battles")

    def positions(report) -> list[int]:
        return sorted(p for part in report.partitions for p in pq.read_table(store.root / part.path)[INGEST_POSITION].to_pylist())

    stored = [positions(r) for r in store.manifest.files.values() if r.status == "ingested" and r.sha256 != reports[0].sha256]
    assert len(stored) == 2
    assert min(positions(reports[0])) > max(max(p) for p in stored)


def ingest_three_overlapping_files(root, tmp_path) -> list[tuple]:
    """Reports, stored rows and quarantined rows of three files ingested into a store at `root`,
    the last after the store is opened again (its index read back from disk)."""
    from pipeline.store import index

    first, second, third = (tmp_path / f"{name}.csv" for name in ("first", "second", "third"))
    first.write_text(HEADER + battles(range(80)) + battles(range(0, 80, 9)))  # duplicates within the file
    second.write_text(HEADER + battles(range(60, 140)))  # and of the first file
    third.write_text(HEADER + battles(range(130, 200)) + battles(range(5, 150, 11)))  # of both, read back from disk
    store = Store(root)
    reports = store.ingest([first, second], "battles")
    reports += Store(root).ingest([third], "battles")
    stored = [pq.read_table(root / p.path).to_pylist() for r in reports for p in r.partitions]
    runs = sorted(json.loads((root / "manifest.json").read_text())["ids"]["battles"]["runs"], key=lambda r: r["ids"])
    ids = np.concatenate([index._load(root / r["path"]).data for r in runs], axis=1)
    return [(r.rows_in, r.rows_accepted, r.rows_quarantined) for r in reports], stored, \
        [quarantine(store, r) for r in reports], ids[:, np.lexsort(ids[::-1])].tolist()


def test_the_filter_changes_no_stored_row_quarantine_reason_or_index_entry(tmp_path, monkeypatch):
    from pipeline.logs import delimited, identity
    from pipeline.store import index

    monkeypatch.setattr(delimited, "CHUNK_BYTES", 300)  # many batches
    monkeypatch.setattr(index, "SPILL", 16)  # runs on disk, memory-mapped
    monkeypatch.setattr(identity, "MIN_FILTER_IDS", 8)  # the filters fill and are rebuilt
    small = ingest_three_overlapping_files(tmp_path / "small", tmp_path)  # few ids: numpy's passes, no filter
    monkeypatch.setattr(identity, "SMALL_BATCH", 0)  # the compiled passes and the filter, as a big store runs them
    passed = []
    check = identity.IdFilter.may_hold
    monkeypatch.setattr(identity.IdFilter, "may_hold", lambda self, high: passed.append(check(self, high).mean()) or check(self, high))
    filtered = ingest_three_overlapping_files(tmp_path / "filtered", tmp_path)
    assert min(passed) < 1  # the filter ruled ids out
    monkeypatch.setattr(identity.IdFilter, "may_hold", lambda self, high: np.ones(len(high), bool))  # every id searched
    unfiltered = ingest_three_overlapping_files(tmp_path / "unfiltered", tmp_path)
    assert filtered[0] == unfiltered[0] == [(89, 80, 9), (80, 60, 20), (84, 60, 24)]
    assert filtered == unfiltered == small
    reasons = {q["reason"] for q in filtered[2][2]}  # b5 of the first file, b130 of the second, b148 of this one
    assert {"duplicate battle_id (first in first.csv, line 7)", "duplicate battle_id (first in second.csv, line 72)",
            "duplicate battle_id (first at line 20)"} <= reasons


KILLED_IN_COMMIT = """
import os, signal, sys
from pathlib import Path
from pipeline.store import Store
from pipeline.store import store as store_module

def killed(self, path):  # the partitions are in place, the manifest not yet written
    os.kill(os.getpid(), signal.SIGKILL)

store_module.Manifest.save = killed
Store(Path(sys.argv[1])).ingest([Path(sys.argv[2])], "battles")
"""


def test_partitions_of_a_commit_killed_before_its_manifest_are_removed_by_the_next_ingest(tmp_path, good):
    # SIGKILL between the renames and the manifest: the files stay, unlisted (readers never see them),
    # and the log grows before the next run, so no later ingest rewrites their names.
    import subprocess
    import sys

    store = Store(tmp_path / "store")
    store.ingest([good], "battles")
    log = tmp_path / "log.csv"
    log.write_text(HEADER + battles(range(10, 14), day="2024-02-01") + "b10,m1,m2,model_a,2024-02-01T10:00:00Z\n")
    killed = subprocess.run([sys.executable, "-c", KILLED_IN_COMMIT, str(store.root), str(log)], capture_output=True)
    assert killed.returncode == -9, killed.stderr
    left = {p.relative_to(store.root).as_posix() for p in store.root.rglob("*.parquet")}
    assert {"battles/date=2024-02-01", "quarantine/battles"} <= {p.rpartition("/")[0] for p in left}
    assert [r.rows_accepted for r in store.manifest.files.values()] == [5]  # the killed commit is not listed

    with log.open("a") as handle:
        handle.write(battles(range(14, 16), day="2024-03-01"))
    [report] = store.ingest([log], "battles")
    assert (report.status, report.rows_accepted, report.rows_quarantined) == ("ingested", 6, 1)
    listed = {p.path for r in store.manifest.files.values() for p in r.partitions} | {report.quarantine}
    assert {p.relative_to(store.root).as_posix() for p in store.root.rglob("*.parquet") if "dictionaries" not in p.parts} == listed
    assert sum(pq.read_metadata(store.path(p)).num_rows for p in store.partitions("battles")) == 11
