"""Ingest that scales with files and lines: the earlier versions of a file are found without
scanning the manifest; a manifest naming a path outside the store is refused in one line; a line
past the limit is quarantined unread, in bounded memory; a full disk is said to be the store's."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import tracemalloc

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.logs import formats
from pipeline.logs.records import LINE, MAX_RECORD_BYTES, RawRecords
from pipeline.store import Store
from pipeline.store import partitions
from pipeline.store import store as store_module

runner = CliRunner()


def battle_lines(first: int, count: int) -> str:
    return "".join(json.dumps({"battle_id": f"b{i}", "model_a": "x", "model_b": "y", "winner": "model_a"}) + "\n"
                   for i in range(first, first + count))


def test_a_file_that_grew_is_found_among_many_without_scanning_the_manifest(tmp_path, monkeypatch):
    logs = tmp_path / "logs"
    logs.mkdir()
    for i in range(30):
        (logs / f"one-{i:02d}.jsonl").write_text(battle_lines(1000 * i, 1 + i % 3))
    grown = logs / "grows.jsonl"
    grown.write_text(battle_lines(100_000, 4))
    store = Store(tmp_path / "store")
    store.ingest(sorted(logs.iterdir()), "battles")
    grown.write_text(battle_lines(100_000, 6))  # two lines appended
    scans = []
    real_values = dict.values

    class Counting(dict):
        def values(self):
            scans.append(len(self))
            return real_values(self)

    loaded = store_module.Manifest.load

    def counting_load(path):
        manifest = loaded(path)
        manifest.files = Counting(manifest.files)
        return manifest

    monkeypatch.setattr(store_module.Manifest, "load", staticmethod(counting_load))
    more = [logs / f"new-{i}.jsonl" for i in range(5)]
    for i, path in enumerate(more):
        path.write_text(battle_lines(200_000 + i, 1))
    reports = store.ingest([grown, more[0]], "battles")
    assert [r.status for r in reports] == ["ingested"] * 2
    assert reports[0].continues is not None and reports[0].rows_in == 2  # read from where the earlier version ended
    walks_for_two, scans[:] = len(scans), []
    assert [r.status for r in store.ingest(more[1:], "battles")] == ["ingested"] * 4
    assert len(scans) == walks_for_two  # the manifest is walked a fixed number of times per ingest, not per file

def test_a_manifest_naming_a_path_outside_the_store_is_refused_in_one_line(tmp_path):
    log = tmp_path / "battles.jsonl"
    log.write_text(battle_lines(0, 3))
    store = Store(tmp_path / "store")
    store.ingest([log], "battles")
    manifest = store.root / "manifest.json"
    data = json.loads(manifest.read_text())
    victim = tmp_path / "outside.parquet"
    victim.write_bytes(b"not the store's")
    data["files"][0]["partitions"][0]["path"] = "battles/../../outside.parquet"
    manifest.write_text(json.dumps(data))
    more = tmp_path / "more.jsonl"
    more.write_text(battle_lines(10, 3))
    result = runner.invoke(app, ["ingest", str(more), "--kind", "battles", "--store", str(store.root)])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(manifest) in lines[0] and "'battles/../../outside.parquet'" in lines[0], lines
    assert "outside the store" in lines[0]
    assert victim.read_bytes() == b"not the store's"  # nothing deleted or read through it
    with pytest.raises(ValueError, match="outside the store"):
        store.manifest


LONG_LINE = 120 << 20  # bytes: past `MAX_RECORD_BYTES`, and well past what the readers may hold at once


def write_with_a_long_line(path, header: str, good: str, long_start: str) -> None:
    with path.open("w") as out:
        out.write(header + good.format(1))
        out.write(long_start)
        block = "x" * (1 << 20)
        for _ in range(LONG_LINE >> 20):
            out.write(block)
        out.write("\n" + good.format(3))


@pytest.mark.parametrize("suffix", ["jsonl", "csv"])
def test_a_line_past_the_limit_is_quarantined_unread_in_bounded_memory(tmp_path, suffix):
    path = tmp_path / f"battles.{suffix}"
    if suffix == "csv":
        write_with_a_long_line(path, "battle_id,model_a,model_b,winner\n", "b{0},x,y,model_a\n", "b2,x,y,")
    else:
        write_with_a_long_line(path, "", '{{"battle_id": "b{0}", "model_a": "x", "model_b": "y", "winner": "model_a"}}\n',
                               '{"battle_id": "b2", "model_a": "')
    tracemalloc.start()
    try:
        batches = list(formats.batches(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < LONG_LINE // 2, f"{peak:,} bytes held while reading a line of {LONG_LINE:,}"
    records = RawRecords.concat(batches)
    first_line = 1 if suffix == "jsonl" else 2
    assert records.frame.get_column(LINE).to_list() == [first_line, first_line + 2]  # the lines around it are read
    [(line, reason, text)] = records.unparsable
    assert line == first_line + 1 and "past the limit" in reason and f"{MAX_RECORD_BYTES:,}" in reason
    assert len(text) < 300
    store = Store(tmp_path / "store")
    [report] = store.ingest([path], "battles")
    assert (report.status, report.rows_accepted, report.rows_quarantined) == ("ingested", 2, 1)


@pytest.fixture
def full_disk(tmp_path, monkeypatch):
    """A folder on a 1 MiB tmpfs where this user may mount one (root), and a no-op; elsewhere a
    folder, and the function after which every partition write fails with ENOSPC (injected in
    `write_row_group`, through which all of them go)."""
    folder = tmp_path / "disk"
    folder.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)]
    mounted = os.geteuid() == 0 and shutil.which("mount") and subprocess.run(mount, capture_output=True).returncode == 0

    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    yield folder, (lambda: None) if mounted else (lambda: monkeypatch.setattr(partitions, "write_row_group", no_space))
    if mounted:
        subprocess.run(["umount", "--lazy", str(folder)], check=True)  # mapped id runs may still be open


@pytest.mark.parametrize("rows", [60_000, 300_000])  # on tmpfs: the commit's id runs (numpy's short write), the partitions (Arrow)
def test_a_full_disk_is_said_to_be_the_stores_and_commits_nothing(tmp_path, full_disk, rows):
    disk, fill_it = full_disk
    store = disk / "store"
    small = tmp_path / "small.jsonl"
    small.write_text(battle_lines(0, 3))
    assert runner.invoke(app, ["ingest", str(small), "--kind", "battles", "--store", str(store)]).exit_code == 0
    manifest = (store / "manifest.json").read_bytes()
    big = tmp_path / "big.csv"  # 3 MB or more of battles over 28 days: more than the disk holds
    big.write_text("battle_id,model_a,model_b,winner,timestamp\n" + "".join(
        f"b{i},model-{i % 97},model-{(i * 7 + 1) % 97}-{i % 13},model_a,2024-01-{1 + i % 28:02d}T{i % 24:02d}:00:{i % 60:02d}\n"
        for i in range(rows)))
    fill_it()
    result = runner.invoke(app, ["ingest", str(big), "--kind", "battles", "--store", str(store)])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{store}: the store's disk is full" in lines[0], lines
    assert str(big) not in lines[0]  # the log is not to blame
    assert (store / "manifest.json").read_bytes() == manifest  # nothing committed
    assert [p for p in store.rglob("*") if ".tmp-" in p.name] == []  # and the space of the attempt given back
    assert Store(store).ingest([small], "battles")[0].status == "skipped"  # the store still works


def test_an_ingest_of_many_files_killed_midway_keeps_its_checkpoints(tmp_path, monkeypatch):
    logs = [tmp_path / f"battles-{i}.jsonl" for i in range(5)]
    for i, path in enumerate(logs):
        path.write_text(battle_lines(10 * i, 2))
    monkeypatch.setattr(store_module, "COMMIT_EVERY", 2)
    read = store_module.Store._ingest_one
    calls = []

    def killed_at_the_fourth_file(store, *args):
        calls.append(args[0])
        if len(calls) == 4:
            raise KeyboardInterrupt  # as a signal would stop it
        return read(store, *args)

    monkeypatch.setattr(store_module.Store, "_ingest_one", killed_at_the_fourth_file)
    store = Store(tmp_path / "store")
    with pytest.raises(KeyboardInterrupt):
        store.ingest(logs, "battles")
    monkeypatch.undo()
    assert sorted(r.source for r in store.manifest.files.values()) == [str(p) for p in logs[:2]]  # the checkpoint
    assert [r.status for r in store.ingest(logs, "battles")] == ["skipped"] * 2 + ["ingested"] * 3
