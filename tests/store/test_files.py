"""Atomic writes, content hashes, the store's errors and its temporary files (`pipeline.store.files`),
each on small real files under tmp_path."""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import pickle

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.store import files
from pipeline.store.files import DamagedStore, StoreDiskFull
from pipeline.store.location import StorageError

RESTORE = "restore it from a backup, or ingest the logs into a new store"


def test_an_error_reading_a_store_file_is_damage_naming_it_in_one_line(tmp_path):
    path = tmp_path / "manifest.json"
    with pytest.raises(DamagedStore) as missing, files.reading_store_file(path):
        path.read_text()
    assert str(missing.value) == f"{path}: a file of the store cannot be read (FileNotFoundError: No such file or directory); {RESTORE}"
    assert (missing.value.path, missing.value.reason) == (str(path), "FileNotFoundError: No such file or directory")
    for error, reason in ((ValueError("bad json\nat line 2"), "ValueError: bad json"), (KeyError("files"), "KeyError: 'files'"),
                          (TypeError(""), "TypeError: "), (AttributeError("no"), "AttributeError: no"),
                          (OSError("no strerror"), "OSError: no strerror")):
        with pytest.raises(DamagedStore) as raised, files.reading_store_file("s3://b/store/x.parquet"):
            raise error
        assert raised.value.reason == reason and str(raised.value).startswith(f"s3://b/store/x.parquet: a file of the store cannot be read ({reason}); ")
        assert raised.value.__cause__ is error
    for said in (DamagedStore("said already"), StorageError("s3://b: access refused")):  # the words of who said it
        with pytest.raises(type(said)) as kept, files.reading_store_file(path):
            raise said
        assert kept.value is said
    with pytest.raises(RuntimeError), files.reading_store_file(path):  # not a reading error: a bug, raised as it is
        raise RuntimeError("bug")


def test_damage_crosses_pickling_with_its_message():
    damaged = pickle.loads(pickle.dumps(DamagedStore("x: damaged", "x", "why")))  # as a Dask worker's error comes back
    assert type(damaged) is DamagedStore and str(damaged) == "x: damaged"
    assert (damaged.path, damaged.reason) == ("x", "why")
    assert (DamagedStore("said").path, DamagedStore("said").reason) == ("", "")  # parts not given: unknown, not made up


def test_a_full_disk_is_said_as_such_whatever_error_says_it(tmp_path):
    full = StoreDiskFull(tmp_path, OSError(errno.ENOSPC, "No space left on device"))
    assert full.errno == errno.ENOSPC and str(full) == (
        f"{tmp_path}: the store's disk is full (No space left on device); free space there, or move the store, and ingest "
        "again: what it read since its last commit was not committed")
    elsewhere = StoreDiskFull("s", OSError("arrow says\nmore"), disk="the scratch disk", remedy="set TMPDIR")
    assert str(elsewhere).startswith("s: the scratch disk is full (arrow says); free space there, or set TMPDIR, and ingest")
    assert str(StoreDiskFull("s", OSError())).startswith("s: the store's disk is full (OSError); ")
    assert files.disk_full(OSError(errno.ENOSPC, "No space left on device"))
    assert files.disk_full(OSError(errno.EDQUOT, "Disk quota exceeded"))
    quota = OSError("Disk quota exceeded")  # an errno set apart from the text (as StoreDiskFull sets its own)
    quota.errno = errno.EDQUOT
    assert files.disk_full(quota)
    assert files.disk_full(OSError("IOError: [Errno 28] No space left on device"))  # Arrow's: the errno in its text
    assert files.disk_full(OSError(f"[errno {errno.EDQUOT}] Disk quota exceeded"))
    assert files.disk_full(OSError("4096 requested and 1024 written"))  # numpy's short write
    assert files.disk_full(full)
    assert not files.disk_full(OSError(errno.EIO, "Input/output error"))
    assert not files.disk_full(OSError("[errno 5] Input/output error"))
    assert not files.disk_full(ValueError("[errno 28] not an OSError"))


def test_a_temporary_path_is_hidden_beside_its_file_and_of_the_names_removed(tmp_path):
    path = tmp_path / "dictionaries" / "agents.parquet"
    temporary = files.temporary_path(path)
    assert temporary.parent == path.parent and files.TEMPORARY.match(temporary.name)
    assert temporary.name.startswith(".agents.parquet.tmp-") and temporary != files.temporary_path(path)


def test_digests_hash_the_file_and_its_prefixes_that_end_lines_across_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "_HASH_BLOCK", 4)  # prefixes inside blocks and at their edges
    data = b"ab\ncdef\n\ngh\nij"
    path = tmp_path / "log"
    path.write_bytes(data)
    ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]  # 3, 8, 9, 12: 8 ends a block
    digest = files.digest_file(path, [0, 2, 3, 8, 8, 9, 12, 15, 100])
    assert digest == files.Digest(hashlib.sha256(data).hexdigest(), len(data), len(ends),
                                  {end: hashlib.sha256(data[:end]).hexdigest() for end in ends})
    assert files.sha256_file(path, chunk=3) == hashlib.sha256(data).hexdigest()
    assert files.digest_file(path).prefixes == {}
    path.write_bytes(b"abc\n")  # a prefix the size of the file, ending the last block
    assert files.digest_file(path, [4]).prefixes == {4: hashlib.sha256(b"abc\n").hexdigest()}
    path.write_bytes(b"\nab\n")  # a log whose first line is empty: its one-byte prefix ends a line
    assert files.digest_file(path, [1, 4]).prefixes == {1: hashlib.sha256(b"\n").hexdigest(), 4: hashlib.sha256(b"\nab\n").hexdigest()}


def test_an_atomic_write_replaces_the_file_whole_or_leaves_it(tmp_path):
    path = tmp_path / "new" / "folder" / "notes.txt"
    files.write_text(path, "first")
    assert path.read_text() == "first"

    def half(tmp):
        tmp.write_text("half")
        raise OSError(errno.EIO, "Input/output error")

    with pytest.raises(OSError):
        files.atomic_write(path, half)
    assert path.read_text() == "first" and os.listdir(path.parent) == ["notes.txt"]  # no temporary left
    files.write_json(path, {"b": 1, "a": {"when": files.Digest("x", 1, 0)}})
    assert path.read_text() == json.dumps({"a": {"when": str(files.Digest("x", 1, 0))}, "b": 1}, indent=2) + "\n"


def test_parquet_is_written_zstd_in_row_groups(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "ROW_GROUP_ROWS", 2)
    path = tmp_path / "part.parquet"
    table = pa.table({"x": [1, 2, 3, 4, 5]})
    files.write_parquet(path, table)
    metadata = pq.read_metadata(path)
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [2, 2, 1]
    assert metadata.row_group(0).column(0).compression == "ZSTD" and pq.read_table(path).equals(table)


def test_sync_files_syncs_each_file_then_their_folders_and_refuses_a_missing_one(tmp_path, monkeypatch):
    written = [tmp_path / "a" / "1", tmp_path / "b" / "2", tmp_path / "b" / "3"]
    for path in written:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"x")
    synced, fsync = [], os.fsync
    monkeypatch.setattr(files.os, "fsync", lambda fd: synced.append(os.readlink(f"/proc/self/fd/{fd}")) or fsync(fd))
    files.sync_files(iter(written))  # (an iterator: read once)
    assert sorted(synced[:3]) == [str(p) for p in written] and sorted(synced[3:]) == [str(tmp_path / "a"), str(tmp_path / "b")]
    files.sync_files([])
    with pytest.raises(FileNotFoundError):
        files.sync_files([tmp_path / "none"])


def test_only_the_stores_own_temporary_names_are_removed(tmp_path):
    deep, shallow = tmp_path / "battles", tmp_path / "root"
    name = files.temporary_path(deep / "x.parquet").name
    removed = [deep / "date=2024-01-01" / name, deep / name, shallow / files.temporary_path(shallow / "m.json").name]
    kept = [deep / ".x.parquet.tmp-short", deep / "x.parquet", shallow / "sub" / name]
    for path in removed + kept:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    (deep / "folder" / name).mkdir(parents=True)  # a folder of that name is no file of ours
    found = files.remove_temporary([deep, tmp_path / "missing"], shallow=[shallow, tmp_path / "missing"])
    assert sorted(found) == sorted(removed) and not any(p.exists() for p in removed)
    assert all(p.exists() for p in kept) and (deep / "folder" / name).is_dir()


def test_the_exclusive_lock_is_held_inside_the_block_only(tmp_path):
    path = tmp_path / "new" / ".lock"

    def taken() -> bool:
        descriptor = os.open(path, os.O_RDWR)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)  # refused only by an exclusive lock
            return False
        except BlockingIOError:
            return True
        finally:
            os.close(descriptor)

    with files.exclusive_lock(path):
        assert taken()
    assert not taken()
