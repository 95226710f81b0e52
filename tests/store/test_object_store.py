"""A store in object storage, against a real S3 server process (moto's, on 127.0.0.1: `tests.s3server`).

The commands are the user's (`vase ingest|rate|backtest --store s3://...`), with credentials and
the endpoint from the standard AWS variables only. Every refusal is one line naming the URL,
and leaves every object of the store as it was (their ETags compared)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.store import Store
from pipeline.store.commit import ObjectCommit
from pipeline.store import store as store_module
from pipeline.store.objects import LEASE, ObjectStore, StoreBusy, manifest_text
from tests.conftest import SAMPLES
from tests.infra.processes import free_port
from tests.s3server import s3  # noqa: F401 (the fixture)

ARENA = SAMPLES / "arena_bench" / "arena_hard_battles.csv"
LLMFAO = SAMPLES / "llmfao" / "crowd_battles.csv"
runner = CliRunner()


@pytest.fixture
def aws(s3, monkeypatch, tmp_path):  # noqa: F811
    """The server's credentials in the environment, a new bucket, and a working folder of its own
    (a URL taken for a path would leave a folder `s3:` in it)."""
    from s3fs import S3FileSystem

    for name, value in s3.environment().items():
        monkeypatch.setenv(name, value)
    S3FileSystem.clear_instance_cache()  # an instance made for another server (or key) is not reused
    monkeypatch.chdir(tmp_path)
    yield s3.bucket()
    S3FileSystem.clear_instance_cache()
    assert not Path("s3:").exists()


def one_line_error(result) -> str:
    lines = result.output.strip().splitlines()
    assert result.exit_code != 0 and len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


@pytest.mark.slow
def test_ingest_rate_and_backtest_with_the_store_on_s3_give_what_a_local_store_gives(aws, s3, tmp_path):  # noqa: F811
    url = f"s3://{aws}/stores/arena"
    for store in (url, str(tmp_path / "local")):
        ingested = runner.invoke(app, ["ingest", str(ARENA), "--kind", "battles", "--store", store])
        assert ingested.exit_code == 0 and "rows in 2136 = accepted 2136 + quarantined 0" in ingested.output, ingested.output
    before = s3.objects(aws)
    again = runner.invoke(app, ["ingest", str(ARENA), "--kind", "battles", "--store", url])
    assert again.exit_code == 0 and "1 file already in the store, skipped" in again.output, again.output
    assert s3.objects(aws) == before  # a no-op: not one object written, not even the lease
    assert sorted(Path(k).name for k in before if "/manifests/" in k) == ["0000000001.json"]
    for where, store in (("s3", url), ("local", str(tmp_path / "local"))):
        rated = runner.invoke(app, ["rate", "--kind", "battles", "-m", "elo", "-m", "copeland", "--store", store,
                                    "--out", str(tmp_path / f"rate-{where}")])
        assert rated.exit_code == 0, rated.output
        tested = runner.invoke(app, ["backtest", "--kind", "battles", "-m", "elo", "-m", "copeland", "--store", store,
                                     "--splits", "3", "--test-size", "200", "--workers", "0", "--out", str(tmp_path / f"bt-{where}")])
        assert tested.exit_code == 0, tested.output
    for name in ("rate-{}/ratings.parquet", "bt-{}/summary.parquet"):
        assert (tmp_path / name.format("s3")).read_bytes() == (tmp_path / name.format("local")).read_bytes(), name
    assert json.loads((tmp_path / "rate-s3" / "run.json").read_text())["store"] == url
    written = [p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()]
    written += [s3.client().get_object(Bucket=aws, Key=k)["Body"].read() for k in s3.objects(aws) if k.endswith(".json")]
    assert not any(s3.secret.encode() in data or s3.key.encode() in data for data in written)  # credentials stay in the environment


def test_refusals_are_one_line_naming_the_url_and_change_nothing(aws, s3, monkeypatch):  # noqa: F811
    url = f"s3://{aws}/store"
    assert runner.invoke(app, ["ingest", str(ARENA), "--kind", "battles", "--store", url]).exit_code == 0
    before = s3.objects(aws)
    ingest = ["ingest", str(LLMFAO), "--kind", "battles", "--store", url]

    from s3fs import S3FileSystem

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-key")
    S3FileSystem.clear_instance_cache()  # a process reads its credentials once; the tests change them
    assert "access refused" in one_line_error(runner.invoke(app, ingest)).removeprefix(f"error: {url}: ")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3.secret)
    S3FileSystem.clear_instance_cache()

    missing = runner.invoke(app, ["ingest", str(LLMFAO), "--kind", "battles", "--store", "s3://no-such-bucket/store"])
    assert one_line_error(missing) == "error: s3://no-such-bucket/store: the bucket 'no-such-bucket' does not exist; create it first"

    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")  # nothing listens there
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    S3FileSystem.clear_instance_cache()
    assert "the object store cannot be reached" in one_line_error(runner.invoke(app, ingest)).removeprefix(f"error: {url}: ")
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)
    S3FileSystem.clear_instance_cache()

    manifest = f"store/manifests/{1:010d}.json"  # edited by hand: valid JSON, one count changed
    text = s3.client().get_object(Bucket=aws, Key=manifest)["Body"].read().decode().replace('"rows_in": 2136', '"rows_in": 2137')
    s3.client().put_object(Bucket=aws, Key=manifest, Body=text.encode())
    before = s3.objects(aws)
    for command in (ingest, ["rate", "--kind", "battles", "-m", "elo", "--store", url, "--out", "out"]):
        line = one_line_error(runner.invoke(app, command))
        assert line.startswith(f"error: {url}/{manifest.removeprefix('store/')}: the manifest was changed after it was committed")
    assert s3.objects(aws) == before and not Path("out").exists()


def test_a_second_writer_stops_in_one_line_while_the_lease_is_held(aws, s3):  # noqa: F811
    url = f"s3://{aws}/store"
    holder = ObjectStore(url)
    holder.acquire()
    before = s3.objects(aws)
    line = one_line_error(runner.invoke(app, ["ingest", str(ARENA), "--kind", "battles", "--store", url]))
    assert line.startswith(f"error: {url}: another writer (") and "holds the store's lease until" in line
    assert s3.objects(aws) == before
    holder.release()
    assert runner.invoke(app, ["ingest", str(ARENA), "--kind", "battles", "--store", url]).exit_code == 0


def test_of_two_writers_building_on_the_same_manifest_one_commits_and_the_other_stops(aws, s3, monkeypatch):  # noqa: F811
    # Both passed the lease (the first one's expired while it worked): the manifest's conditional
    # create lets one commit; the other commits nothing and leaves no object behind.
    monkeypatch.setenv("VASE_LEASE_SECONDS", "0.1")
    url = f"s3://{aws}/store"
    first, second = Store(url), Store(url)
    entered = []
    real_enter = ObjectCommit.__enter__

    def enter(commit):  # the second writer starts its whole ingest while the first is between reading and committing
        entered.append(commit)
        real_enter(commit)
        if len(entered) == 1:
            import time

            time.sleep(0.2)  # the first's lease expires
            second.ingest([str(LLMFAO)], "battles")
            commit.objects.acquire()  # ...and the first takes the lease back before it commits
        return commit

    monkeypatch.setattr(ObjectCommit, "__enter__", enter)
    with pytest.raises(StoreBusy, match=f"^{url}: another writer committed manifest 1 first; nothing of this ingest"):
        first.ingest([str(ARENA)], "battles")
    manifest = Store(url).manifest
    assert [Path(r.source).name for r in manifest.files.values()] == ["crowd_battles.csv"]
    keys = s3.objects(aws)
    assert not any(first.objects.token in key for key in keys)  # the loser's uploads are gone
    assert sum(r.rows_accepted for r in manifest.files.values()) == 8931


KILLED = textwrap.dedent("""
    import os, signal, sys
    from pipeline.store import Store
    from pipeline.store.objects import ObjectStore

    def killed(self, sequence, data):  # SIGKILL between the uploads and the manifest: the worst moment
        os.kill(os.getpid(), signal.SIGKILL)

    ObjectStore.create_manifest = killed
    Store(sys.argv[1]).ingest([sys.argv[2]], "battles")
""")


@pytest.mark.slow
def test_an_ingest_killed_mid_commit_leaves_the_previous_manifest_and_the_next_writer_removes_its_orphans(aws, s3, monkeypatch):  # noqa: F811
    url = f"s3://{aws}/store"
    assert runner.invoke(app, ["ingest", str(ARENA), "--kind", "battles", "--store", url]).exit_code == 0
    committed = s3.objects(aws)
    env = os.environ | s3.environment(VASE_LEASE_SECONDS="20") | {"PYTHONPATH": str(Path(__file__).parents[2])}
    killed = subprocess.run([sys.executable, "-c", KILLED, url, str(LLMFAO)], env=env, capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    left = s3.objects(aws)
    orphans = set(left) - set(committed) - {f"store/{LEASE}"}
    assert orphans and all("/battles/" in k or "/ids/" in k or "/dictionaries/" in k for k in orphans)
    assert {k: e for k, e in left.items() if k in committed} == committed  # nothing committed was touched
    assert [Path(r.source).name for r in Store(url).manifest.files.values()] == ["arena_hard_battles.csv"]

    # Its lease holds until it expires: the next writer stops, naming the URL, and changes nothing.
    line = one_line_error(runner.invoke(app, ["ingest", str(LLMFAO), "--kind", "battles", "--store", url]))
    assert line.startswith(f"error: {url}: another writer (") and s3.objects(aws) == left

    import time

    expires = json.loads(s3.client().get_object(Bucket=aws, Key=f"store/{LEASE}")["Body"].read())["expires"]
    time.sleep(max(0.0, expires - time.time()) + 0.5)
    result = runner.invoke(app, ["ingest", str(LLMFAO), "--kind", "battles", "--store", url])
    assert result.exit_code == 0 and "rows in 8931 = accepted 8931 + quarantined 0" in result.output, result.output
    now = s3.objects(aws)
    assert not orphans & set(now) and f"store/{LEASE}" not in now
    manifest = Store(url).manifest
    assert sum(r.rows_accepted for r in manifest.files.values()) == 2136 + 8931


def test_logs_in_object_storage_are_ingested_by_url_and_named_by_it(aws, s3):  # noqa: F811
    client = s3.client()
    client.upload_file(str(LLMFAO), aws, "logs/llmfao/crowd_battles.csv")
    client.upload_file(str(ARENA), aws, "logs/arena/arena_hard_battles.csv")
    client.put_object(Bucket=aws, Key="logs/llmfao/notes.txt", Body=b"not a log")
    url = f"s3://{aws}/store"
    assert runner.invoke(app, ["ingest", str(ARENA), "--kind", "battles", "--store", f"s3://{aws}/logs/arena-store"]).exit_code == 0
    result = runner.invoke(app, ["ingest", f"s3://{aws}/logs", "--kind", "battles", "--store", url])
    assert result.exit_code == 0 and "rows in 11067 = accepted 11067 + quarantined 0" in result.output, result.output
    sources = sorted(r.source for r in Store(url).manifest.files.values())  # not the arena store's partitions under logs/
    assert sources == [f"s3://{aws}/logs/arena/arena_hard_battles.csv", f"s3://{aws}/logs/llmfao/crowd_battles.csv"]
    again = runner.invoke(app, ["ingest", str(LLMFAO), f"s3://{aws}/logs/arena/arena_hard_battles.csv", "--kind", "battles",
                                "--store", url])
    assert again.exit_code == 0 and "2 files already in the store, skipped" in again.output, again.output
    missing = runner.invoke(app, ["ingest", f"s3://{aws}/logs/none.csv", "--kind", "battles", "--store", url])
    assert missing.exit_code == 1 and f"unreadable: s3://{aws}/logs/none.csv: " in missing.output, missing.output


WRITER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from pipeline.store import Store
    from pipeline.store.objects import StoreBusy

    url, log, ready = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    (ready / str(os.getpid())).touch()
    while len(list(ready.iterdir())) < 2:  # both writers begin together, their imports done
        time.sleep(0.01)
    for attempt in range(600):
        try:
            report = Store(url).ingest([log], "battles")[0]
            print(report.status, report.rows_accepted, "after", attempt, "refusals")
            break
        except StoreBusy as busy:
            print("busy:", busy, file=sys.stderr)
            time.sleep(0.2)
""")


@pytest.mark.slow
def test_two_writer_processes_at_once_each_commit_once_and_nothing_is_lost(aws, s3, tmp_path):  # noqa: F811
    url = f"s3://{aws}/store"
    env = os.environ | s3.environment() | {"PYTHONPATH": str(Path(__file__).parents[2])}
    (tmp_path / "ready").mkdir()
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, url, str(log), str(tmp_path / "ready")], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE) for log in (ARENA, LLMFAO)]
    outputs = [writer.communicate(timeout=600) for writer in writers]
    assert [w.returncode for w in writers] == [0, 0], outputs
    assert sorted(out.split(" after")[0] for out, _ in outputs) == ["ingested 2136", "ingested 8931"], outputs
    refusals = [line for _, err in outputs for line in err.splitlines() if line.startswith("busy: ")]
    assert refusals and all(line.startswith(f"busy: {url}: another writer (") for line in refusals), outputs  # they did overlap
    manifest = Store(url).manifest
    assert sorted(r.rows_accepted for r in manifest.files.values()) == [2136, 8931]
    assert not any("lease.json" in key for key in s3.objects(aws))


def test_the_partial_cache_of_a_store_on_s3_spares_reading_its_partitions_again(aws, s3):  # noqa: F811
    from pipeline.stats import reduce_store

    url = f"s3://{aws}/store"
    Store(url).ingest([str(LLMFAO)], "battles")
    first = reduce_store(Store(url), "battles", use_cache=True)
    keys = s3.objects(aws)
    assert any(k.startswith("store/cache/battles/") for k in keys)
    for key in (k for k in keys if "/battles/source=" in k or "/battles/date=" in k):  # damaged: only the cache can answer
        s3.client().put_object(Bucket=aws, Key=key, Body=b"not parquet")
    again = reduce_store(Store(url), "battles", use_cache=True)
    assert again.pairwise.dense().wins.tobytes() == first.pairwise.dense().wins.tobytes()


def write_battles(path: Path, agents: tuple[str, str], count: int = 2) -> Path:
    path.write_text("".join(json.dumps({"battle_id": f"{path.stem}-{i}", "model_a": agents[0], "model_b": agents[1],
                                        "winner": "model_a"}) + "\n" for i in range(count)))
    return path


def test_an_ingest_of_many_files_commits_checkpoints_and_a_lost_one_leaves_the_one_before_whole(aws, s3, tmp_path, monkeypatch):  # noqa: F811
    # Each file brings agents of its own, so every checkpoint commits a changed dictionary.
    logs = [str(write_battles(tmp_path / f"battles-{i}.jsonl", (f"a{i}", f"b{i}"))) for i in range(5)]
    monkeypatch.setattr(store_module, "COMMIT_EVERY", 2)
    url = f"s3://{aws}/store"
    create = ObjectStore.create_manifest

    def lost_at_the_second_checkpoint(objects, sequence, data):
        if sequence == 2:
            raise StoreBusy(f"{objects.url}: another writer committed manifest 2 first")
        create(objects, sequence, data)

    monkeypatch.setattr(ObjectStore, "create_manifest", lost_at_the_second_checkpoint)
    with pytest.raises(StoreBusy):
        Store(url).ingest(logs, "battles")
    monkeypatch.setattr(ObjectStore, "create_manifest", create)
    store = Store(url)
    assert sorted(r.source for r in store.manifest.files.values()) == logs[:2]  # the first checkpoint holds
    assert sorted(store.dictionary("agents").names) == ["a0", "a1", "b0", "b1"]  # and its dictionary, not removed with the lost one's
    assert [r.status for r in store.ingest(logs, "battles")] == ["skipped"] * 2 + ["ingested"] * 3
    assert sorted(Path(k).name for k in s3.objects(aws) if "/manifests/" in k) == ["0000000002.json", "0000000003.json"]
    assert sorted(store.dictionary("agents").names) == sorted(f"{side}{i}" for i in range(5) for side in "ab")


def test_a_manifest_on_s3_naming_a_path_outside_the_store_is_refused_in_one_line(aws, s3, tmp_path):  # noqa: F811
    url = f"s3://{aws}/store"
    Store(url).ingest([str(write_battles(tmp_path / "first.jsonl", ("x", "y")))], "battles")
    key = f"store/manifests/{1:010d}.json"
    data = json.loads(s3.client().get_object(Bucket=aws, Key=key)["Body"].read())
    data.pop("sha256")
    data["files"][0]["partitions"][0]["path"] = "battles/../../elsewhere/outside.parquet"
    body = manifest_text(data | {"sha256": hashlib.sha256(manifest_text(data).encode()).hexdigest()})  # its checksum recomputed
    s3.client().put_object(Bucket=aws, Key=key, Body=body.encode())
    before = s3.objects(aws)
    more = str(write_battles(tmp_path / "more.jsonl", ("x", "z")))
    for command in (["ingest", more, "--kind", "battles", "--store", url], ["rate", "--kind", "battles", "-m", "elo", "--store", url, "--out", "out"]):
        line = one_line_error(runner.invoke(app, command))
        assert line.startswith(f"error: {url}/manifests/0000000001.json: ") and "'battles/../../elsewhere/outside.parquet'" in line, line
        assert "outside the store" in line
    assert s3.objects(aws) == before


def test_a_nightly_on_s3_extends_the_kept_sequence_by_the_new_rows_as_a_reduction_from_scratch_gives(aws, s3, tmp_path, monkeypatch):  # noqa: F811
    from pipeline.stats import reduce_store
    from tests.stats.test_cache import SAMPLE_STORES, assert_identical, split_sample
    from tests.stats.test_incremental import finalized_rows, sequence_rows

    url = f"s3://{aws}/store"
    *old, new = split_sample(SAMPLES / SAMPLE_STORES["games"], tmp_path / "sample")  # races in time order
    Store(url).ingest([str(path) for path in old], "games")
    reduce_store(Store(url), "games", {"sequence"}, use_cache=True)
    before = s3.objects(aws)
    Store(url).ingest([str(new)], "games")
    finalized = finalized_rows(monkeypatch)
    nightly = reduce_store(Store(url), "games", {"sequence"}, use_cache=True)
    assert finalized == [sequence_rows(tmp_path, [new], "games")]  # the new races alone
    after = {key: etag for key, etag in s3.objects(aws).items() if key.startswith("store/cache/")}
    assert len(after.keys() - before.keys()) == 2  # the new unit's partials: its sequence run, and the rest
    assert len([key for key in after.keys() & before.keys() if after[key] != before[key]]) == 2  # the snapshot, extended, and the units' sum
    assert_identical(reduce_store(Store(url), "games", {"sequence"}), nightly)
