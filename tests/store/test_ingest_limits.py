"""Ingest that scales with files and lines: the earlier versions of a file are found without
scanning the manifest; a manifest naming a path outside the store is refused in one line."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.store import Store
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
