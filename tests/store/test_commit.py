"""The commit of an ingest (`pipeline.store.commit`): a local folder's (flock, rename into place,
the manifest last) and object storage's (a lease, objects named by the writer's token, the next
manifest created only if absent). Object storage here is fsspec's in-memory filesystem, in the
test's process (no server: the S3 server's tests are test_object_store.py, 30-50 s each)."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import tempfile
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipeline.store import Store, StoreDiskFull
from pipeline.store import commit as commit_module
from pipeline.store import store as store_module
from pipeline.store.commit import FolderCommit, ObjectCommit
from pipeline.store.dictionary import IdMap
from pipeline.store.objects import (
    LEASE,
    MANIFESTS,
    ObjectStore,
    StoreBusy,
    listed_objects,
)


@pytest.fixture
def url(memory_url):
    """A store's URL in object storage (fsspec's in-memory filesystem)."""
    return f"{memory_url}/store"


def objects(url: str) -> set[str]:
    """Every object of the store, relative to its URL."""
    store = ObjectStore(url)
    store.fs.invalidate_cache(store.path)
    return {key[len(store.path) + 1:] for key in store.fs.find(store.path)}


def manifest_sequences(url: str) -> list[int]:
    return ObjectStore(url).sequences()


def battles(path: Path, rows: list[tuple[str, str]], prompt: str | None = None) -> Path:
    """A JSONL log of battles (model_a wins each), ids from the file's name."""
    path.write_text("".join(json.dumps({"battle_id": f"{path.stem}-{i}", "model_a": a, "model_b": b, "winner": "model_a"}
                                       | ({"prompt": prompt} if prompt else {})) + "\n" for i, (a, b) in enumerate(rows)))
    return path


def test_checkpoints_in_object_storage_list_objects_named_by_the_writers_token_and_commit(url, tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "COMMIT_EVERY", 2)
    logs = [battles(tmp_path / f"b{i}.jsonl", [(f"a{i}", f"b{i}")]) for i in range(3)]
    store = Store(url)
    token = store.objects.token
    reports = store.ingest(logs, "battles")
    # Two files, a checkpoint (manifest 1); the third, the end (manifest 2), both kept (readers of 1).
    assert manifest_sequences(url) == [1, 2]
    manifest = store.manifest
    for report in reports:  # undated battles: one partition each, named by the file and the writer's token
        assert [p.path for p in manifest.files[report.key].partitions] == [
            f"battles/source={report.sha256[:16]}/part-{token}.parquet"]
    # Each dictionary is a new object when it changed, named by the token and the manifest that first lists it:
    # the agents changed at both commits; no judge nor prompt is named, so theirs stay those of manifest 1.
    assert manifest.dictionaries == {"agents": f"dictionaries/agents-{token}-2.parquet",
                                     "judges": f"dictionaries/judges-{token}-1.parquet",
                                     "prompts": f"dictionaries/prompts-{token}-1.parquet"}
    assert sorted(store.dictionary("agents").names) == sorted(f"{side}{i}" for i in range(3) for side in "ab")
    runs = [run["path"] for run in manifest.ids["battles"]["runs"]]  # the id index committed with them
    assert runs and sum(run["ids"] for run in manifest.ids["battles"]["runs"]) == 3
    listed = listed_objects(ObjectStore(url).manifest(2)) | listed_objects(ObjectStore(url).manifest(1))
    assert set(runs) <= listed
    assert objects(url) == listed | {f"{MANIFESTS}/{s:010d}.json" for s in (1, 2)}  # nothing else: no lease, no orphan

    before = objects(url)
    assert [r.status for r in Store(url).ingest(logs, "battles")] == ["skipped"] * 3
    assert objects(url) == before  # nothing new: not one object written

    # A new prompt alone: the prompts change, the agents and judges (loaded by this ingest) do not.
    again = Store(url)
    [added] = again.ingest([battles(tmp_path / "prompted.jsonl", [("a0", "b1")], prompt="p1")], "battles")
    assert added.status == "ingested" and manifest_sequences(url) == [2, 3]
    assert again.manifest.dictionaries == {"agents": f"dictionaries/agents-{token}-2.parquet",
                                           "judges": f"dictionaries/judges-{token}-1.parquet",
                                           "prompts": f"dictionaries/prompts-{again.objects.token}-3.parquet"}
    assert again.dictionary("prompts").names == ["p1"]


def test_a_commit_beaten_to_its_manifest_removes_every_object_it_uploaded(url, tmp_path, monkeypatch):
    first = battles(tmp_path / "first.jsonl", [("x", "y")])
    Store(url).ingest([first], "battles")
    before = objects(url)
    create = ObjectStore.create_manifest

    def beaten(objects_, sequence, data):  # another writer commits manifest `sequence` just before this one
        create(ObjectStore(url), sequence, {"files": []})
        create(objects_, sequence, data)

    monkeypatch.setattr(ObjectStore, "create_manifest", beaten)
    loser = Store(url)
    with pytest.raises(StoreBusy, match=f"^{re.escape(url)}: another writer committed manifest 2 first"):
        loser.ingest([battles(tmp_path / "second.jsonl", [("x", "z"), ("z", "w")])], "battles")
    # Its partition, id run and dictionaries (new agents) were uploaded, and are all removed again.
    assert objects(url) == before | {f"{MANIFESTS}/{2:010d}.json"}
    assert not any(loser.objects.token in key for key in objects(url))


def test_a_full_scratch_disk_is_said_to_be_the_local_scratch_folders_and_commits_nothing(url, tmp_path, monkeypatch):
    Store(url).ingest([battles(tmp_path / "first.jsonl", [("x", "y")])], "battles")
    before = objects(url)

    def no_space(idmap, path):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(IdMap, "save", no_space)  # the dictionaries are saved in the scratch folder, then uploaded
    with pytest.raises(StoreDiskFull) as raised:
        Store(url).ingest([battles(tmp_path / "second.jsonl", [("x", "z")])], "battles")
    scratch = re.escape(str(Path(tempfile.gettempdir()) / "vase-ingest-"))
    assert re.fullmatch(
        rf"{scratch}\S+: the disk of the local scratch folder of the ingest into {re.escape(url)} is full "
        r"\(No space left on device\); free space there, or set TMPDIR to a folder on a disk with room, and ingest "
        r"again: what it read since its last commit was not committed", str(raised.value)), str(raised.value)
    assert objects(url) == before  # the uploaded partition and id run removed, no manifest, the lease released


def test_orphans_found_by_an_ingest_with_nothing_new_are_fenced_off_by_a_manifest_and_removed(url, tmp_path, caplog):
    log = battles(tmp_path / "first.jsonl", [("x", "y")])
    store = Store(url)
    store.ingest([log], "battles")
    for i in range(2):  # manifests 1, 2 and 3, of which 2 and 3 are kept
        store.ingest([battles(tmp_path / f"more-{i}.jsonl", [("x", f"z{i}")])], "battles")
    assert manifest_sequences(url) == [2, 3]
    # What a writer killed before its manifest leaves: an object that no manifest lists.
    [partition] = store.manifest.files[store.ingest([log], "battles")[0].key].partitions
    orphan = partition.path.replace(store.objects.token, "0123456789abcdef")
    fs = ObjectStore(url).fs
    fs.pipe_file(ObjectStore(url).key(orphan), fs.cat_file(ObjectStore(url).key(partition.path)))
    replaced = listed_objects(ObjectStore(url).manifest(2)) - listed_objects(ObjectStore(url).manifest(3))
    assert replaced <= objects(url)  # kept for the readers of manifest 2, until manifest 3 is the one before the newest
    caplog.clear()  # (the commits of 2 and 3 removed the objects of 1 they replaced)
    with caplog.at_level("WARNING", logger=commit_module.__name__):
        assert Store(url).ingest([log], "battles")[0].status == "skipped"
    # An unchanged manifest 4 first (the killed writer could only have committed a manifest 4), then the orphan goes.
    assert manifest_sequences(url) == [3, 4] and ObjectStore(url).manifest(4) == ObjectStore(url).manifest(3)
    assert objects(url) == listed_objects(ObjectStore(url).manifest(3)) | {f"{MANIFESTS}/{s:010d}.json" for s in (3, 4)}
    assert [r.getMessage() for r in caplog.records] == [  # the orphan, and what manifest 2 alone listed
        f"{url}: removing {1 + len(replaced)} object(s) that no manifest lists (left by an interrupted or beaten writer)"]


def test_the_scratch_folder_and_the_lease_are_the_commits_only_while_it_is_open(url):
    with ObjectCommit(ObjectStore(url)) as commit:
        # named so that what a killed ingest leaves in the temporary folder is recognised
        assert commit.root.parent == Path(tempfile.gettempdir()) and commit.root.name.startswith("vase-ingest-")
        assert commit.root.is_dir() and LEASE in objects(url)
    assert not commit.root.exists() and LEASE not in objects(url)


def test_the_lease_is_renewed_a_third_of_its_time_after_the_last_renewal(url, monkeypatch):
    monkeypatch.setenv("VASE_LEASE_SECONDS", "300")  # renewed past 100 s
    now = [1000.0]
    monkeypatch.setattr(commit_module, "time", SimpleNamespace(monotonic=lambda: now[0]))
    store = ObjectStore(url)
    renewals = []
    with ObjectCommit(store) as commit:
        renew = store.renew
        monkeypatch.setattr(store, "renew", lambda: (renewals.append(now[0]), renew()))
        for elapsed in (0.0, 99.0, 100.0, 100.5, 150.0, 200.5, 201.0):  # 100.0 and 200.5: exactly a third, not past it
            now[0] = 1000.0 + elapsed
            commit.keep_alive()
    assert renewals == [1100.5, 1201.0]


def stored_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(("error", "raised"), [(errno.EIO, OSError), (errno.ENOSPC, StoreDiskFull)])
def test_a_local_commit_failing_between_its_renames_takes_back_every_file_and_says_why(tmp_path, monkeypatch, error, raised):
    store = Store(tmp_path / "store")
    store.ingest([battles(tmp_path / "first.jsonl", [("x", "y")])], "battles")
    before = stored_files(store.root)
    log = tmp_path / "dated.csv"  # three days: three partitions renamed into place one after the other
    log.write_text("battle_id,model_a,model_b,winner,timestamp\n1,x,y,model_a,2024-01-01T10:00:00Z\n"
                   "2,y,z,tie,2024-01-02T09:00:00Z\n3,z,x,model_b,2024-01-03T00:00:00Z\n")
    replace, renamed = os.replace, []

    def fails_at_the_second_partition(source, target):
        if Path(target).is_relative_to(store.root / "battles"):
            renamed.append(target)
            if len(renamed) == 2:
                raise OSError(error, os.strerror(error), str(target))
        replace(source, target)

    monkeypatch.setattr(commit_module.os, "replace", fails_at_the_second_partition)
    with pytest.raises(raised) as caught:
        store.ingest([log], "battles")
    assert type(caught.value) is raised and caught.value.errno == error  # the fault itself, not one of the clean-up
    if raised is StoreDiskFull:
        assert str(caught.value).startswith(f"{store.root}: the store's disk is full (No space left on device); free space")
    assert stored_files(store.root) == before  # the first partition taken back, the others' temporaries removed


def test_a_local_commit_holds_the_stores_lock_while_it_is_open(tmp_path):
    root = tmp_path / "store"

    def locked_by_another() -> bool:  # a second open file description: flock conflicts even within one process
        descriptor = os.open(root / ".lock", os.O_RDWR)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            return True
        finally:
            os.close(descriptor)  # (and the lock taken, if it was)

    with FolderCommit(root):
        assert locked_by_another()
    assert not locked_by_another()


def test_temporary_files_of_killed_writers_are_removed_when_a_local_commit_opens(tmp_path):
    root = tmp_path / "store"

    def temporary(folder: Path) -> Path:  # the names atomic writes use
        return folder / f".x.parquet.tmp-{uuid.uuid4().hex}"

    removed = [temporary(root), temporary(root / "dictionaries"), temporary(root / "quarantine" / "battles"),
               temporary(root / "battles" / "date=2024-01-01"), temporary(root / "ids" / "battles")]
    kept = [temporary(root / "dictionaries" / "old"),  # the root and dictionaries/ are searched only at their top
            temporary(root / "notes"), root / "battles" / ".x.parquet.tmp-notours"]
    for path in removed + kept:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"half")
    with FolderCommit(root):
        assert [p for p in removed if p.exists()] == [] and all(p.exists() for p in kept)


def test_partitions_no_manifest_lists_are_removed_before_an_ingest_and_never_through_a_link(tmp_path, caplog):
    store = Store(tmp_path / "store")
    first = tmp_path / "first.csv"  # one battle of 2024-01-01, one quarantined (a model against itself)
    first.write_text("battle_id,model_a,model_b,winner,timestamp\n1,x,y,model_a,2024-01-01T10:00:00Z\n"
                     "2,x,x,tie,2024-01-01T11:00:00Z\n")
    [report] = store.ingest([first], "battles")
    # Left by a commit killed before its manifest: a day of its own (its folder goes too) and a quarantine file.
    orphans = [store.root / "battles" / "date=2030-01-01" / "orphan.parquet", store.root / "quarantine" / "battles" / "orphan.parquet"]
    outside = tmp_path / "elsewhere"
    (outside / "date=2024-01-01").mkdir(parents=True)
    behind_links = [outside / "date=2024-01-01" / "theirs.parquet", outside / "file.parquet"]
    for path in orphans + behind_links:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"PAR1")
    (store.root / "games").symlink_to(outside, target_is_directory=True)  # a kind's folder that is a link
    (store.root / "battles" / "date=2024-01-01" / "link.parquet").symlink_to(outside / "file.parquet")
    caplog.set_level("WARNING", logger=commit_module.__name__)
    store.ingest([battles(tmp_path / "second.jsonl", [("x", "z")])], "battles")
    assert [r.getMessage() for r in caplog.records] == [
        f"{store.root}: removed 2 partition file(s) that no manifest lists (left by an interrupted ingest)"]
    assert [p for p in orphans if p.exists()] == [] and not (store.root / "battles" / "date=2030-01-01").exists()
    assert all(p.exists() for p in behind_links) and (store.root / report.quarantine).exists()  # its folder kept
    caplog.clear()
    store.ingest([battles(tmp_path / "third.jsonl", [("y", "z")])], "battles")
    assert caplog.records == []  # nothing left to remove: nothing said
