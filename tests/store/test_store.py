"""The store: partitions, manifest, idempotent ingest, id dictionaries, atomic writes."""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import io
import json
import os
import re
import shutil
import threading
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import pipeline.logs as logs_module
from pipeline.logs import Mapping, log_kind
from pipeline.store import DamagedStore, IdMap, IngestReport, Store, is_store
from pipeline.store import store as store_module
from pipeline.store.footprint import Footprint
from pipeline.store.location import StorageError

BATTLES = "battle_id,model_a,model_b,winner,timestamp\n1,x,y,model_a,2024-01-01T10:00:00Z\n2,y,z,tie,2024-01-02T09:00:00Z\n3,z,x,model_b,\n4,x,x,model_a,\n"


@pytest.fixture
def battles_file(tmp_path):
    path = tmp_path / "logs" / "battles.csv"
    path.parent.mkdir()
    path.write_text(BATTLES)
    return path


def test_ingest_partitions_by_date_and_by_source(tmp_path, battles_file):
    store = Store(tmp_path / "store")
    [report] = store.ingest([battles_file], "battles")
    assert (report.status, report.rows_in, report.rows_accepted, report.rows_quarantined) == ("ingested", 4, 3, 1)
    short = report.sha256[:16]
    assert [p.path for p in store.partitions("battles")] == [
        f"battles/date=2024-01-01/{short}.parquet", f"battles/date=2024-01-02/{short}.parquet",
        f"battles/source={short}/part.parquet"]  # the row without a timestamp
    assert [p.rows for p in store.partitions("battles")] == [1, 1, 1]
    quarantined = pq.read_table(tmp_path / "store" / report.quarantine).to_pylist()
    assert [(q["line"], q["reason"]) for q in quarantined] == [(5, "a model against itself")]


def test_columns_of_distinct_values_are_stored_without_a_dictionary(tmp_path, battles_file):
    store = Store(tmp_path / "store")
    store.ingest([battles_file], "battles")
    metadata = pq.ParquetFile(store.path(store.partitions("battles")[0])).metadata
    columns = {metadata.schema.column(i).path: metadata.row_group(0).column(i) for i in range(metadata.num_columns)}
    plain = {name for name, column in columns.items() if not column.has_dictionary_page and "." not in name}  # (features: empty)
    assert plain == {"battle_id", "timestamp", "ingest_position"}, plain


def test_a_games_id_and_timestamp_shared_by_its_rows_keep_their_dictionary(tmp_path):
    path = tmp_path / "games.csv"
    path.write_text("game_id,player,place,timestamp\n" + "".join(
        f"g{game},{player},{place},2024-01-01T10:0{game}:00Z\n" for game in range(3) for place, player in enumerate("ab", 1)))
    store = Store(tmp_path / "store")
    store.ingest([path], "games")
    [partition] = store.partitions("games")
    metadata = pq.ParquetFile(store.path(partition)).metadata
    columns = {metadata.schema.column(i).path: metadata.row_group(0).column(i) for i in range(metadata.num_columns)}
    assert {"game_id", "timestamp", "ingest_position"} <= columns.keys()
    assert {name for name, column in columns.items() if not column.has_dictionary_page and "." not in name} == {"ingest_position"}


def test_names_become_dense_ids_and_winner_a_code(tmp_path, battles_file):
    store = Store(tmp_path / "store")
    store.ingest([battles_file], "battles")
    assert store.dictionary("agents").names == ["x", "y", "z"]  # new names of a batch in sorted order
    rows = [r for p in store.partitions("battles") for r in pq.read_table(store.path(p)).to_pylist()]
    assert [(r["model_a"], r["model_b"], r["winner"]) for r in rows] == [(0, 1, 0), (1, 2, 2), (2, 0, 1)]


def test_reingest_is_a_noop_whatever_the_name(tmp_path, battles_file):
    store = Store(tmp_path / "store")
    store.ingest([battles_file], "battles")
    manifest = (tmp_path / "store" / "manifest.json").read_bytes()
    copy = tmp_path / "copy.csv"
    shutil.copy(battles_file, copy)
    reports = store.ingest([battles_file, copy], "battles")
    assert [r.status for r in reports] == ["skipped", "skipped"]
    assert (tmp_path / "store" / "manifest.json").read_bytes() == manifest
    assert store.ingest([copy], "games")[0].error.endswith("already ingested as battles")


def test_ids_persist_and_only_grow(tmp_path, battles_file):
    store = Store(tmp_path / "store")
    store.ingest([battles_file], "battles")
    more = tmp_path / "more.csv"
    more.write_text("model_a,model_b,winner\nw,x,model_a\n")
    store.ingest([more], "battles")
    assert store.dictionary("agents").names == ["x", "y", "z", "w"]


def test_unreadable_file_is_reported_and_others_go_on(tmp_path, battles_file):
    store = Store(tmp_path / "store")
    reports = store.ingest([tmp_path / "nope.csv", battles_file], "battles")
    assert [r.status for r in reports] == ["unreadable", "ingested"]
    assert "nope.csv" in reports[0].error


def test_interrupted_ingest_leaves_nothing_visible(tmp_path, battles_file, monkeypatch):
    store = Store(tmp_path / "store")

    def crash(self, path):
        raise KeyboardInterrupt("killed while committing")

    monkeypatch.setattr(store_module.Manifest, "save", crash)
    with pytest.raises(KeyboardInterrupt):
        store.ingest([battles_file], "battles")
    # No manifest lists the partition files: readers see an empty store, and the commit took
    # back the files it had put in place.
    assert store.partitions("battles") == [] and store.kinds() == []
    assert not list((tmp_path / "store" / "battles").rglob("*.parquet"))
    assert not list((tmp_path / "store" / "quarantine").rglob("*.parquet"))
    assert not list((tmp_path / "store" / "ids").rglob("*.npy"))
    assert not list((tmp_path / "store").rglob(".*tmp-*"))  # no temporary file left behind
    monkeypatch.undo()
    [report] = store.ingest([battles_file], "battles")  # a rerun rewrites the same names
    assert report.status == "ingested" and len(store.partitions("battles")) == 3


def test_a_commit_that_fails_takes_back_what_it_put_in_place(tmp_path, battles_file):
    # A real fault halfway through the commit, after the partitions are in place: a file where
    # the id index's folder goes (as a full disk would fail the index's write).
    store = Store(tmp_path / "store")
    first = tmp_path / "first.csv"
    first.write_text("battle_id,model_a,model_b,winner\n10,x,y,tie\n")
    store.ingest([first], "battles")
    runs = tmp_path / "store" / "ids" / "battles"
    shutil.rmtree(runs)
    runs.write_text("in the way")
    files = lambda: sorted(p for p in (tmp_path / "store").rglob("*") if p.is_file())  # noqa: E731
    before = files()
    with pytest.raises(OSError):
        store.ingest([battles_file], "battles")
    assert files() == before  # nothing of the failed ingest is left behind
    runs.unlink()
    [report] = store.ingest([battles_file], "battles")  # the index is rebuilt, and the retry commits
    assert report.status == "ingested" and len(store.partitions("battles")) == 4


def test_idmap_round_trip_and_validation(tmp_path):
    ids = IdMap(["b", "a"])
    assert ids.ids(["a", "b"]).tolist() == [1, 0]
    ids.save(tmp_path / "d.parquet")
    assert IdMap.load(tmp_path / "d.parquet").names == ["b", "a"]
    with pytest.raises(ValueError, match="duplicate"):
        IdMap(["a", "a"])


def test_ballots_are_stored_as_sorted_id_lists(tmp_path):
    path = tmp_path / "v.jsonl"
    path.write_text('{"ranking": "z>y=x>w"}\n')
    store = Store(tmp_path / "store")
    store.ingest([path], "ballots")
    row = pq.read_table(store.path(store.partitions("ballots")[0])).to_pylist()[0]
    names = store.dictionary("agents").names
    assert [names[i] for i in row["agents"]] == ["z", "x", "y", "w"]  # within a tie: by id
    assert row["levels"] == [0, 1, 1, 2] and row["ranking"] == "z>x=y>w"


def test_winner_labels_become_their_codes_and_unknown_labels_raise():
    import pyarrow as pa

    from pipeline.logs.battles import WINNERS

    labels = pa.chunked_array([["tie (bothbad)", "model_a"], ["tie", "model_b", "model_a"]])
    assert store_module.label_codes(labels, WINNERS).to_pylist() == [3, 0, 2, 1, 0]
    with pytest.raises(ValueError, match="labels outside"):
        store_module.label_codes(pa.chunked_array([["model_a", "draw"]]), WINNERS)


def test_new_names_of_a_file_get_ids_in_sorted_order_across_columns(tmp_path):
    # model_b's names sort before model_a's: ids follow the names, not the columns (nor the rows).
    path = tmp_path / "b.csv"
    path.write_text("model_a,model_b,winner\nzed,amy,model_a\nyan,bea,tie\n")
    swapped = tmp_path / "swapped.csv"
    swapped.write_text("model_a,model_b,winner\nbea,yan,tie\namy,zed,model_b\n")
    for source in (path, swapped):
        store = Store(tmp_path / f"store-{source.stem}")
        store.ingest([source], "battles")
        assert store.dictionary("agents").names == ["amy", "bea", "yan", "zed"]


def test_name_order_sorts_by_code_point():
    ids = IdMap(["b", "B", "a", "é", "Z"])
    assert ids.name_order().tolist() == [3, 0, 2, 4, 1]  # "B" < "Z" < "a" < "b" < "é": code points, not a locale


class _Sequential:
    """Partition writes in the caller's thread: ingest as it ran before its stages overlapped."""

    def __init__(self, consume):
        self.put = consume

    def finish(self) -> None:
        pass

    def cancel(self) -> None:
        pass


def test_overlapped_ingest_stores_the_bytes_of_a_sequential_one_whatever_the_batches(tmp_path, monkeypatch):
    from pipeline.logs import delimited
    from pipeline.store import partitions

    monkeypatch.setattr(partitions, "BUFFER_ROWS", 700)  # partition buffers flushed many times
    lines = [f"b{i},m{i % 7},m{(i + 1 + i % 5) % 7},{('model_a', 'model_b', 'tie')[i % 3]},{1_700_000_000 + 3_613 * i}\n"
             for i in range(6_000)]
    log = tmp_path / "battles.csv"
    log.write_text("battle_id,model_a,model_b,winner,timestamp\n" + "".join(lines) + lines[10])  # one duplicate
    stored = []
    for name, sequential in (("overlapped", False), ("sequential", True)):
        with monkeypatch.context() as patch:
            patch.setattr(delimited, "CHUNK_BYTES", 4_096)  # many small batches
            if sequential:
                patch.setattr(store_module, "read_ahead", lambda batches: batches)
                patch.setattr(logs_module, "read_ahead", lambda batches: batches)
                patch.setattr(store_module, "Behind", _Sequential)
                patch.setattr(partitions, "FLUSH_THREADS", 1)
            store = Store(tmp_path / name)
            [report] = store.ingest([log], "battles")
        assert (report.rows_accepted, report.rows_quarantined) == (6_000, 1)
        files = sorted(p for p in store.root.rglob("*.parquet") if "dictionaries" not in p.parts)
        stored.append({str(p.relative_to(store.root)): p.read_bytes() for p in files})
    assert len(stored[0]) > 50 and stored[0] == stored[1]


def test_dictionary_arrays_give_the_names_their_rows_use(tmp_path):
    import pyarrow as pa

    # A reader's dictionary holds names of rejected rows and unused or null values: none becomes an agent.
    names = pa.array(["zed", None, "unused", "amy", "rejected-only"])
    table = pa.table({"model_a": pa.DictionaryArray.from_arrays(pa.array([0, 3, None, 4], pa.int32()), names),
                      "model_b": pa.DictionaryArray.from_arrays(pa.array([3, 0, 0, 0], pa.int32()), names)})
    ids = IdMap(["amy"])
    nobody = pa.nulls(4, pa.string())
    table = table.append_column("winner", pa.array(["tie"] * 4)).append_column("judge", nobody).append_column("prompt", nobody)
    encoded = store_module.encode(log_kind("battles"), table, {"agents": ids, "judges": IdMap(), "prompts": IdMap()})
    assert ids.names == ["amy", "rejected-only", "zed"]  # (the row of `rejected-only` is kept here: only used names)
    assert encoded.column("model_a").to_pylist() == [2, 0, None, 1] and encoded.column("model_b").to_pylist() == [0, 2, 2, 2]
    used = store_module.used_values(table.column("model_b").combine_chunks())
    assert used.dictionary.to_pylist() == ["zed", "amy"] and used.to_pylist() == table.column("model_b").to_pylist()


def test_parquet_dictionaries_differing_by_file_give_one_id_per_name(tmp_path):
    import pyarrow as pa

    first, second = tmp_path / "first.parquet", tmp_path / "second.parquet"
    labels = pa.schema([("battle_id", pa.string())] + [(c, pa.dictionary(pa.int32(), pa.string())) for c in ("model_a", "model_b", "winner")])
    pq.write_table(pa.table({"battle_id": ["1", "2", "3"], "model_a": [" zed", "amy", "only-rejected"],
                             "model_b": ["amy", "zed", "amy"], "winner": ["model_a", "Tie", "draw"]}).cast(labels), first)
    pq.write_table(pa.table({"battle_id": ["4", "5"], "model_a": ["bea", "zed"], "model_b": ["zed", "amy "],
                             "winner": ["model_b"] * 2}), second)
    store = Store(tmp_path / "store")
    reports = store.ingest([first, second], "battles")
    assert [(r.rows_accepted, r.rows_quarantined) for r in reports] == [(2, 1), (2, 0)]
    assert store.dictionary("agents").names == ["amy", "zed", "bea"]
    rows = pa.concat_tables(pq.read_table(store.path(p)) for p in store.partitions("battles")).sort_by("ingest_position")
    assert rows.column("model_a").to_pylist() == [1, 0, 2, 1] and rows.column("model_b").to_pylist() == [0, 1, 1, 0]
    assert rows.column("winner").to_pylist() == [0, 2, 1, 1]


def _stored(store: Store, sha: str) -> dict[str, bytes]:
    """Every file of a store but the manifest, by path with the source's hash left out; the id
    index's runs (named at random) by their order."""
    files = sorted(p for p in store.root.rglob("*") if p.is_file() and p.name != "manifest.json" and "ids" not in p.parts)
    runs = sorted(p.read_bytes() for p in (store.root / "ids").rglob("*.npy"))
    return {str(p.relative_to(store.root)).replace(sha[:16], "<sha>"): p.read_bytes() for p in files} | {
        f"run {i}": run for i, run in enumerate(runs)}


def _rows(store: Store, kind: str, path: str, header: int = 0) -> list[dict]:
    """A stored Parquet file's rows, lines (and the lines a reason names) less `header`, without its file name."""
    import re

    rows = pq.read_table(store.root / path).to_pylist()
    for row in rows:
        row.pop("file", None)
        if "line" in row:
            row["line"] -= header
            row["reason"] = re.sub(r"line (\d+)", lambda found: f"line {int(found.group(1)) - header}", row["reason"])
        if "ingest_position" in row:
            row["ingest_position"] -= header
    return rows


@pytest.mark.parametrize("kind", ["games", "scores"])
def test_csv_and_parquet_with_and_without_dictionaries_store_the_same_bytes(tmp_path, kind):
    from tests.conftest import write_label_formats
    from tests.logs.test_games import adversarial_games
    from tests.logs.test_scores import adversarial_scores

    files = write_label_formats(adversarial_games() if kind == "games" else adversarial_scores(), tmp_path, kind)
    stores, reports = {}, {}
    for name, path in files.items():
        stores[name] = Store(tmp_path / f"store-{name}")
        [reports[name]] = stores[name].ingest([path], kind)
        assert reports[name].status == "ingested" and reports[name].rows_quarantined > 20
    # Names are stripped and in NFC, case kept; names of rejected rows only are no agents.
    expected = ["Alice", "alice", "caf\u00e9", "erin", "frank"] if kind == "games" else ["A", "a", "b", "c", "caf\u00e9"]
    assert stores["dictionary"].dictionary("agents").names == expected
    stored = {name: _stored(stores[name], reports[name].sha256) for name in files}
    assert stored["csv"].keys() == stored["dictionary"].keys() == stored["plain"].keys()
    dated = [f"{kind}/date=2024-01-01/<sha>.parquet"] if kind == "games" else []  # (the other days' games are rejected)
    assert sorted(p for p in stored["csv"] if p.startswith(kind)) == dated + [f"{kind}/source=<sha>/part.parquet"]

    def rows(name: str, path: str) -> list[dict]:  # CSV lines count the header: its lines and positions are one more
        return _rows(stores[name], kind, path.replace("<sha>", reports[name].sha256[:16]), header=int(name == "csv"))

    for path, content in stored["dictionary"].items():
        if path.startswith("quarantine"):  # (which names its file)
            assert rows("csv", path) == rows("dictionary", path) == rows("plain", path), path
        elif path.startswith("run"):  # hash high, hash low, file << 40 | line
            assert stored["plain"][path] == content
            run, csv_run = (np.load(io.BytesIO(stored[name][path]), allow_pickle=False) for name in ("dictionary", "csv"))
            assert np.array_equal(csv_run - np.array([[0], [0], [1]], np.uint64), run)
        else:
            assert stored["plain"][path] == content, path
            assert stored["csv"][path] == content or rows("csv", path) == rows("dictionary", path), path


def test_a_fifo_or_a_device_is_refused_in_one_line_without_being_opened(tmp_path, battles_file):
    # Reading a named pipe waits for a writer forever, and /dev/zero never ends: each is refused
    # (the ingest runs on a thread, so that a regression fails here instead of hanging the suite).
    fifo = tmp_path / "incoming.csv"
    os.mkfifo(fifo)
    store = Store(tmp_path / "store")
    reports: list = []
    ingest = threading.Thread(target=lambda: reports.extend(store.ingest([fifo, Path("/dev/zero"), battles_file], "battles")),
                              daemon=True)
    ingest.start()
    ingest.join(60)
    assert not ingest.is_alive(), "ingest of a FIFO hung"
    assert [r.status for r in reports] == ["unreadable", "unreadable", "ingested"]
    assert reports[0].error == f"{fifo}: not a regular file but a named pipe (FIFO): vase reads log files only"
    assert "a character device" in reports[1].error
    assert [r.status for r in store.manifest.files.values()] == ["ingested"]  # nothing recorded for them


@pytest.mark.parametrize("damage", ['{"files": [', "[]", '{"files": 3}', '{"files": [{"sha256": "ab"}]}', "\udcff"])
def test_a_damaged_manifest_is_named_in_one_line(tmp_path, battles_file, damage):
    store = Store(tmp_path / "store")
    store.ingest([battles_file], "battles")
    (tmp_path / "store" / "manifest.json").write_text(damage, encoding="utf-8", errors="surrogateescape")
    for read in (lambda: store.partitions("battles"), lambda: store.ingest([battles_file], "battles")):
        with pytest.raises(DamagedStore) as raised:
            read()
        assert str(raised.value).startswith(f"{tmp_path / 'store' / 'manifest.json'}: a file of the store cannot be read (")
        assert "\n" not in str(raised.value)


def test_a_damaged_dictionary_is_named(tmp_path, battles_file):
    store = Store(tmp_path / "store")
    store.ingest([battles_file], "battles")
    path = tmp_path / "store" / "dictionaries" / "agents.parquet"
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(DamagedStore, match=f"^{path}: a file of the store cannot be read"):
        store.dictionary("agents")


def test_a_damaged_id_index_is_rebuilt_and_still_finds_duplicates(tmp_path, battles_file, caplog):
    store = Store(tmp_path / "store")
    store.ingest([battles_file], "battles")
    [run] = (tmp_path / "store" / "ids" / "battles").glob("run-*.npy")
    run.write_bytes(run.read_bytes()[:50])  # the index is derived data: a damaged run is no reason to stop
    again = tmp_path / "again.csv"
    again.write_text("battle_id,model_a,model_b,winner\n2,y,z,tie\n9,x,z,tie\n")
    [report] = store.ingest([again], "battles")
    assert (report.status, report.rows_accepted, report.rows_quarantined) == ("ingested", 1, 1)
    [warning] = [r.getMessage() for r in caplog.records if "rebuilding" in r.getMessage()]
    said = re.fullmatch(rf"{re.escape(str(run))}: cannot be read \((.+)\); rebuilding the battles id index from the stored partitions",
                        warning)
    assert said and said.group(1) != "None", warning  # the damage named
    assert not run.exists()  # replaced by the rebuilt runs


def test_a_file_seen_before_is_reported_under_its_own_name_with_the_earlier_counts_and_mapping(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("left,right,winner\na,b,model_a\nb,c,model_b\nc,c,tie\n")  # the last: a model against itself
    copy = tmp_path / "copy.csv"
    shutil.copy(path, copy)
    store = Store(tmp_path / "store")
    straight = Mapping.parse(columns="model_a=left,model_b=right")
    [first] = store.ingest([path], "battles", straight)
    assert (first.rows_in, first.rows_accepted, first.rows_quarantined) == (3, 2, 1)
    [again] = store.ingest([copy], "battles", straight)
    assert again == IngestReport(str(copy), "battles", first.sha256, "skipped", 3, 2, 1, mapping=first.mapping)
    [other] = store.ingest([copy], "games", straight)
    assert other == IngestReport(str(copy), "games", first.sha256, "unreadable", error=f"{copy}: already ingested as battles",
                                 mapping=first.mapping)


def test_a_refused_file_under_another_name_is_refused_naming_it_and_read_again_as_another_kind(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("task,agent,score\nt1,a,1\nt1,b,2\n")  # no battles: scores
    store = Store(tmp_path / "store")
    [first] = store.ingest([bad], "battles")
    assert first.status == "unreadable" and first.error.startswith(f"{bad}: ")
    renamed = tmp_path / "renamed.csv"
    shutil.copy(bad, renamed)
    [again] = store.ingest([renamed], "battles")
    reason = first.error.removeprefix(f"{bad}: ")
    assert again == dataclasses.replace(first, source=str(renamed), error=(
        f"{renamed}: {reason} (refused on {first.ingested_at}; not read again until the file changes)"))
    [scores] = store.ingest([renamed], "scores")  # refused as battles only: read as scores
    assert (scores.status, scores.rows_accepted) == ("ingested", 2)


@pytest.mark.parametrize(("error", "said"), [
    (RuntimeError(), "could not be read (RuntimeError: ); this is a bug of vase, please report it"),
    (OSError(errno.EIO, "Input/output error"), "Input/output error")])
def test_a_failure_while_reading_is_one_line_naming_the_file(tmp_path, battles_file, monkeypatch, error, said):
    def failing(*args, **kwargs):
        raise error

    monkeypatch.setattr(store_module, "read_batches", failing)
    [report] = Store(tmp_path / "store").ingest([battles_file], "battles")
    assert (report.status, report.error) == ("unreadable", f"{battles_file}: {said}")


def test_a_local_stores_addresses_inputs_and_footprint(tmp_path, battles_file, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = Store("store")  # a relative root: readers on other processes get absolute paths
    assert not store.exists() and not is_store(tmp_path / "store")
    [report] = store.ingest([battles_file], "battles")
    assert store.exists() and is_store(tmp_path / "store")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "manifest.json").write_text("{}")
    assert not is_store(tmp_path / "notes")  # a manifest without dictionaries
    [first, *_] = store.partitions("battles")
    assert store.locate(first) == store.locate(first.path) == str((tmp_path / "store" / first.path).resolve())
    assert store.inputs("battles") == [report] and store.inputs("games") == []
    # the three accepted battles: x-y, y-z, z-x, each a ballot of two
    assert store.footprint("battles") == Footprint(**report.footprint) == Footprint(3, 3, 0, 3, 6, new_agents=3)
    assert store.footprint("games") is None
    before = store.manifest
    more = tmp_path / "a-more.csv"  # named before the first: inputs come by name, not by ingest
    more.write_text("model_a,model_b,winner\nw,x,model_a\n")
    [added] = store.ingest([more], "battles")
    assert store.inputs("battles") == [added, report] and store.inputs("battles", before) == [report]
    assert store.footprint("battles", before) == Footprint(**report.footprint)  # as that manifest lists them
    assert store.dictionary().names == ["x", "y", "z", "w"]  # the agents' by default


def test_a_store_in_object_storage_names_its_objects_by_url(tmp_path, battles_file, caplog):
    # fsspec's in-memory filesystem: object storage within the process (the S3 tests start a server)
    url = f"memory://vase-{tmp_path.name}/store"
    store = Store(url)
    assert not store.exists()
    assert store.dictionary("agents").names == []
    store.ingest([battles_file], "battles")
    more = tmp_path / "more.csv"
    more.write_text("model_a,model_b,winner\nw,x,model_a\n")
    with caplog.at_level("WARNING"):
        store.ingest([more], "battles")
    assert not caplog.records  # the id index's runs were fetched, not rebuilt
    assert store.exists() and store.dictionary("agents").names == ["x", "y", "z", "w"]
    manifest = store.manifest
    assert store.dictionary("agents", manifest).names == ["x", "y", "z", "w"]
    assert store.dictionary("judges", manifest).names == []
    [first, *_] = store.partitions("battles")
    assert store.locate(first) == store.locate(first.path) == f"{url}/{first.path}"


@pytest.mark.parametrize("listed", ["", "/etc/passwd", "../outside.parquet", "battles/../../outside.parquet", "battles\\x.parquet"])
def test_a_manifest_listing_a_path_outside_the_store_is_refused_naming_it(listed):
    with pytest.raises(ValueError) as refused:
        store_module.check_inside_store(listed)
    assert str(refused.value) == f"it lists {listed!r}, a path outside the store (absolute or with '..')"


def test_a_manifest_of_no_files_and_an_entry_written_before_look_alikes_were_kept_still_load():
    assert store_module.Manifest.from_data({}) == store_module.Manifest()
    store_module.check_inside_store("battles/date=2024-01-01/abc.parquet")  # inside: no error
    entry = {"source": "a.csv", "kind": "battles", "sha256": "ab", "status": "ingested",
             "partitions": [{"path": "battles/source=ab/part.parquet", "rows": 2}]}
    manifest = store_module.Manifest.from_data({"files": [entry], "dictionaries": {"agents": "dictionaries/agents-1.parquet"}})
    assert manifest.files == {"ab": IngestReport("a.csv", "battles", "ab", "ingested",
                                                 partitions=(store_module.Partition("battles/source=ab/part.parquet", 2),))}
    assert manifest.dictionaries == {"agents": "dictionaries/agents-1.parquet"} and manifest.ids == {}


def test_a_damaged_id_run_in_object_storage_is_rebuilt_from_the_stored_objects(tmp_path, battles_file, caplog):
    # The rebuild reads the partitions where the store keeps them (by URL), not in the ingest's scratch folder.
    url = f"memory://vase-{tmp_path.name}/store"
    store = Store(url)
    store.ingest([battles_file], "battles")
    [run] = [r["path"] for r in store.objects.newest()[1]["ids"]["battles"]["runs"]]
    store.objects.fs.pipe_file(store.objects.key(run), b"damaged")
    again = tmp_path / "again.csv"
    again.write_text("battle_id,model_a,model_b,winner\n2,y,z,tie\n9,x,z,tie\n")  # battle 2 is stored already
    with caplog.at_level("WARNING"):
        [report] = store.ingest([again], "battles")
    assert [r.getMessage() for r in caplog.records if "rebuilding" in r.getMessage()]
    assert (report.status, report.rows_accepted, report.rows_quarantined) == ("ingested", 1, 1)


def test_a_manifest_in_object_storage_listing_a_path_outside_the_store_is_named(tmp_path, battles_file):
    # A hand edit that recomputed the manifest's checksum: the path check still refuses it, naming the manifest.
    url = f"memory://vase-{tmp_path.name}/store"
    store = Store(url)
    store.ingest([battles_file], "battles")
    sequence, data = store.objects.newest()
    edited = json.loads(json.dumps(data))  # (a deep copy: the store keeps the committed one, without its checksum)
    edited["files"][0]["partitions"][0]["path"] = "../outside.parquet"
    store.objects.create_manifest(sequence + 1, edited)
    with pytest.raises(DamagedStore) as raised:
        store.partitions("battles")
    assert str(raised.value).startswith(f"{store.objects.manifest_url(sequence + 1)}: a file of the store cannot be read (")
    assert "'../outside.parquet'" in str(raised.value)


def test_an_index_rebuilt_without_its_entry_numbers_the_files_as_their_rows_positions_do(tmp_path):
    # The manifest's id index entry lost: the rebuild numbers the stored files by when they were
    # ingested (an entry without a date first: written before dates were kept), not by content hash,
    # so each file's ordinal is still the one its rows' ingest positions hold.
    from pipeline.logs.identity import INGEST_POSITION, LINE_BITS

    contents = [f"battle_id,model_a,model_b,winner\n{i},x,y,tie\n" for i in range(3)]
    contents.sort(key=lambda text: hashlib.sha256(text.encode()).hexdigest(), reverse=True)  # ingested against hash order
    sources = []
    for number, text in enumerate(contents):
        sources.append(tmp_path / f"log-{number}.csv")
        sources[-1].write_text(text)
    store = Store(tmp_path / "store")
    reports = store.ingest(sources, "battles")
    path = tmp_path / "store" / "manifest.json"
    manifest = json.loads(path.read_text())
    dated = dict(zip((r.sha256 for r in reports), (None, "2024-01-01T00:00:00+00:00", "2024-01-02T00:00:00+00:00")))
    for entry in manifest["files"]:
        entry["ingested_at"] = dated[entry["sha256"]]
    del manifest["ids"]["battles"]
    path.write_text(json.dumps(manifest))
    last = tmp_path / "last.csv"
    last.write_text("battle_id,model_a,model_b,winner\n7,x,y,tie\n1,x,y,tie\n")  # battle 1 is stored already
    [report] = store.ingest([last], "battles")
    assert (report.rows_accepted, report.rows_quarantined) == (1, 1)
    files = json.loads(path.read_text())["ids"]["battles"]["files"]
    assert files == [r.sha256[:16] for r in reports + [report]]
    for stored in reports + [report]:
        positions = {p >> LINE_BITS for part in stored.partitions for p in pq.read_table(store.path(part))[INGEST_POSITION].to_pylist()}
        assert positions == {files.index(stored.sha256[:16])}


def test_a_stores_url_is_its_normal_path_or_its_url_without_the_trailing_slash(tmp_path):
    # (in messages and run records: "the store at <url>"; a store in object storage's addresses are built on it)
    assert Store(f"{tmp_path}/./store/").url == str(tmp_path / "store")
    url = f"memory://vase-{tmp_path.name}/boX"  # (a name ending in a letter stays whole)
    store = Store(f"{url}/")
    assert store.url == url and store.locate("battles/part.parquet") == f"{url}/battles/part.parquet"
    with pytest.raises(StorageError, match=f"^{re.escape(url)}: a store in object storage has no local folder$"):
        store.root  # noqa: B018 (a local path made of a URL would be a folder of that name)


def test_a_local_manifest_says_its_format_and_lists_files_by_key_and_ids(tmp_path, battles_file):
    # Format 1: the files (sorted by key) and the id index; a local store's dictionaries have fixed paths, so no list of them.
    more = tmp_path / "more.csv"
    more.write_text("model_a,model_b,winner\nw,x,model_a\n")
    Store(tmp_path / "store").ingest([battles_file, more], "battles")
    saved = json.loads((tmp_path / "store" / "manifest.json").read_text())
    assert saved.keys() == {"format", "files", "ids"} and saved["format"] == 1
    keys = [IngestReport.from_json(entry).key for entry in saved["files"]]
    assert len(keys) == 2 and keys == sorted(keys) and saved["ids"].keys() == {"battles"}


def test_a_json_array_that_starts_with_an_ingested_one_is_read_whole(tmp_path):
    # Appending to a JSON array does not append records: only line-based formats continue a file.
    objects = ['{"model_a": "x", "model_b": "y", "winner": "tie"}', '{"model_a": "y", "model_b": "z", "winner": "model_a"}']
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text("[\n" + ",\n".join(objects) + "\n]\n")
    second.write_text(first.read_text() + "\n")  # the same array, and a blank line after it
    store = Store(tmp_path / "store")
    [earlier] = store.ingest([first], "battles")
    [report] = store.ingest([second], "battles")
    assert (earlier.status, earlier.rows_accepted) == ("ingested", len(objects))
    assert (report.status, report.continues, report.rows_in) == ("ingested", None, len(objects))


def test_an_ingest_commits_every_commit_every_changed_files_and_nothing_when_none_changed(tmp_path, monkeypatch):
    # A store in object storage: each commit is a manifest of its own, so its checkpoints can be read one by one.
    from pipeline.store.objects import ObjectStore

    monkeypatch.setattr(store_module, "COMMIT_EVERY", 2)
    logs = []
    for number in range(5):  # each file with battles and agents of its own
        logs.append(tmp_path / f"log-{number}.csv")
        logs[-1].write_text(f"battle_id,model_a,model_b,winner\nb{number},a{number},z{number},tie\n")
    copy, missing = tmp_path / "copy.csv", tmp_path / "missing.csv"
    shutil.copy(logs[0], copy)
    committed = []
    create = ObjectStore.create_manifest
    monkeypatch.setattr(ObjectStore, "create_manifest", lambda objects, sequence, data: committed.append(
        json.loads(json.dumps(data))) or create(objects, sequence, data))  # (a copy: a manifest's ids grow on)
    store = Store(f"memory://vase-{tmp_path.name}/store")
    # changed files: 2 (a checkpoint), the copy (skipped) and the missing file (refused, no content) do not count, 2 more
    # (a checkpoint), the last one (the final commit)
    reports = store.ingest([logs[0], logs[1], copy, missing, logs[2], logs[3], logs[4]], "battles")
    assert [r.status for r in reports] == ["ingested", "ingested", "skipped", "unreadable"] + ["ingested"] * 3
    assert [sorted(Path(entry["source"]).name for entry in data["files"]) for data in committed] == [
        [p.name for p in logs[:2]], [p.name for p in logs[:4]], [p.name for p in logs]]
    assert [(data["ids"].keys(), len(data["ids"]["battles"]["files"])) for data in committed] == [({"battles"}, n) for n in (2, 4, 5)]
    assert all(data["dictionaries"].keys() == {"agents", "judges", "prompts"} for data in committed)
    assert store.dictionary("agents").names == [f"{side}{n}" for n in range(5) for side in "az"]
    assert [r.status for r in store.ingest([copy, missing, *logs], "battles")] == ["skipped", "unreadable"] + ["skipped"] * 5
    assert len(committed) == 3  # nothing changed: nothing committed


def test_a_reports_time_of_ingest_is_in_utc(tmp_path, battles_file):
    import datetime as dt

    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    [report] = Store(tmp_path / "store").ingest([battles_file], "battles")
    ingested_at = dt.datetime.fromisoformat(report.ingested_at)
    assert ingested_at.utcoffset() == dt.timedelta(0) and before <= ingested_at <= dt.datetime.now(dt.UTC)


def test_kinds_without_record_ids_have_no_id_index_nor_ingest_positions(tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text("task,agent,score\nt1,a,1\nt1,b,2\n")
    store = Store(tmp_path / "store")
    [report] = store.ingest([path], "scores")
    assert report.status == "ingested" and not log_kind("scores").record_id
    assert store.manifest.ids == {} and not (tmp_path / "store" / "ids").exists()
    assert "ingest_position" not in pq.read_schema(store.path(store.partitions("scores")[0])).names


def test_logs_in_object_storage_are_reported_and_recorded_under_their_urls(tmp_path):
    import fsspec

    bucket = f"logs-{tmp_path.name}"
    url = f"memory://{bucket}"
    memory = fsspec.filesystem("memory")
    memory.pipe_file(f"/{bucket}/good.csv", b"battle_id,model_a,model_b,winner\n1,x,y,tie\n")
    memory.pipe_file(f"/{bucket}/same.csv", b"battle_id,model_a,model_b,winner\n1,x,y,tie\n")
    memory.pipe_file(f"/{bucket}/bad.csv", b"model_a,model_b\nx,y\n")  # no winner
    memory.mkdir(f"/{bucket}/folder.csv")
    store = Store(tmp_path / "store")
    sources = [f"{url}/{name}" for name in ("good.csv", "bad.csv", "missing.csv", "folder.csv")] + ["nosuch://logs/x.csv"]
    good, bad, missing, folder, unknown = store.ingest(sources, "battles")
    assert (good.source, good.status, good.rows_accepted) == (sources[0], "ingested", 1)
    assert (bad.source, bad.status) == (sources[1], "unreadable")
    assert bad.error.startswith(f"{sources[1]}: line 1, field 'winner': missing column 'winner'")  # the object, not its copy
    assert {r.key: (r.source, r.status, r.error) for r in store.manifest.files.values()} == {
        good.key: (sources[0], "ingested", None), bad.key: (sources[1], "unreadable", bad.error)}
    assert (missing.source, missing.kind, missing.sha256, missing.status) == (sources[2], "battles", "", "unreadable")
    assert missing.error.startswith(f"{sources[2]}: ") and missing.error.endswith("/missing.csv") and "\n" not in missing.error
    assert folder == IngestReport(sources[3], "battles", "", "unreadable",
                                  error=f"{sources[3]}: not a regular file but a folder: vase reads log files only")
    assert (unknown.source, unknown.status, unknown.sha256) == (sources[4], "unreadable", "")
    assert unknown.error.startswith(f"{sources[4]}: ") and unknown.error.count(sources[4]) == 1 and "nosuch" in unknown.error
    [same] = store.ingest([f"{url}/same.csv"], "battles")
    assert same == IngestReport(f"{url}/same.csv", "battles", good.sha256, "skipped", 1, 1, 0)


def test_an_ingest_with_nothing_to_commit_removes_the_orphans_of_a_killed_writer(tmp_path, battles_file, caplog):
    # In object storage: an unchanged manifest is committed over the orphans first, fencing off the writer that left them.
    store = Store(f"memory://vase-{tmp_path.name}/store")
    store.ingest([battles_file], "battles")
    [(sequence, data)] = [store.objects.newest()]
    orphan = "battles/date=2024-01-01/0123456789abcdef-feedfacefeedface.parquet"
    store.objects.fs.pipe_file(store.objects.key(orphan), b"left by a writer killed before its commit")
    with caplog.at_level("WARNING"):
        [report] = store.ingest([battles_file], "battles")
    assert report.status == "skipped"
    assert store.objects.newest() == (sequence + 1, data) and not store.objects.fs.exists(store.objects.key(orphan))
    assert [r.getMessage() for r in caplog.records] == [
        f"{store.url}: removing 1 object(s) that no manifest lists (left by an interrupted or beaten writer)"]


def test_ballot_members_tied_are_stored_by_id_not_by_name(tmp_path):
    # y gets its id before x: within the tie y=x the stored order is by id (y, x), which the names' order is not.
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    first.write_text('{"ranking": "y>w"}\n')
    second.write_text('{"ranking": "z>x=y>w"}\n')
    store = Store(tmp_path / "store")
    store.ingest([first, second], "ballots")
    names = store.dictionary("agents").names
    assert names.index("y") < names.index("x")
    rows = [row for p in store.partitions("ballots") for row in pq.read_table(store.path(p)).to_pylist()]
    [row] = [row for row in rows if len(row["agents"]) == 4]
    assert [names[i] for i in row["agents"]] == ["z", "y", "x", "w"] and row["levels"] == [0, 1, 1, 2]


def test_the_same_file_read_through_another_mapping_is_another_input(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("left,right,winner\na,b,model_a\n")
    straight, swapped = Mapping.parse(columns="model_a=left,model_b=right"), Mapping.parse(columns="model_a=right,model_b=left")
    store = Store(tmp_path / "store")
    [first] = store.ingest([path], "battles", straight)
    [second] = store.ingest([path], "battles", swapped)
    assert (first.status, first.mapping) == ("ingested", straight.record())
    assert (second.status, second.mapping) == ("ingested", swapped.record()) and second.key != first.key
    assert store.ingest([path], "battles", swapped)[0].status == "skipped"


def test_a_log_read_through_a_mapping_grows_from_the_version_read_the_same_way(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("id,left,right,winner\n1,a,b,model_a\n")
    mapping = Mapping.parse(columns="battle_id=id,model_a=left,model_b=right")
    store = Store(tmp_path / "store")
    [first] = store.ingest([path], "battles", mapping)
    with path.open("a") as log:
        log.write("2,b,c,tie\n")
    [grown] = store.ingest([path], "battles", mapping)
    assert (grown.status, grown.continues, grown.rows_in, grown.rows_accepted) == ("ingested", first.sha256, 1, 1)


def test_a_missing_file_or_a_folder_read_through_a_mapping_is_reported_under_its_name_and_mapping(tmp_path):
    mapping = Mapping.parse(columns="model_a=left,model_b=right")
    missing, folder = tmp_path / "missing.csv", tmp_path / "folder.csv"
    folder.mkdir()
    reports = Store(tmp_path / "store").ingest([missing, folder], "battles", mapping)
    for path, report in zip((missing, folder), reports):
        assert (report.source, report.kind, report.sha256, report.status, report.mapping) == (
            str(path), "battles", "", "unreadable", mapping.record())
        assert report.error.startswith(f"{path}: ") and "\n" not in report.error
    assert reports[0].error == f"{missing}: {os.strerror(errno.ENOENT)}"  # the system's reason, without its errno


def test_a_log_grown_twice_continues_from_its_longest_ingested_version(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("battle_id,model_a,model_b,winner\n")
    store = Store(tmp_path / "store")
    reports = []
    for battle in range(3):
        with path.open("a") as log:
            log.write(f"{battle},a,b,tie\n")
        reports += store.ingest([path], "battles")
    assert [r.continues for r in reports] == [None, reports[0].sha256, reports[1].sha256]
    assert [(r.rows_in, r.rows_accepted, r.rows_quarantined) for r in reports] == [(1, 1, 0)] * 3  # the new row only


def test_objects_written_to_object_storage_carry_the_writers_token(tmp_path, battles_file):
    # Never overwritten: a beaten writer's partitions and quarantine cannot replace the committed ones.
    store = Store(f"memory://vase-{tmp_path.name}/store")
    [report] = store.ingest([battles_file], "battles")
    written = [p.path for p in report.partitions] + [report.quarantine]
    assert len(written) == 4 and all(path.endswith(f"-{store.objects.token}.parquet") for path in written), written


def test_a_file_refused_midway_forgets_only_its_own_names(tmp_path, battles_file, monkeypatch):
    from pipeline.logs import delimited

    monkeypatch.setattr(delimited, "CHUNK_BYTES", 256)  # batches encoded (their names given ids) before the bad line
    store = Store(tmp_path / "store")
    store.ingest([battles_file], "battles")
    bad = tmp_path / "bad.csv"
    bad.write_bytes(("battle_id,model_a,model_b,winner\n" + "".join(f"n{i},new{i},x,tie\n" for i in range(40))).encode()
                    + b"n40,caf\xe9,x,tie\n")  # not UTF-8
    [report] = store.ingest([bad], "battles")
    assert report.status == "unreadable" and "not UTF-8" in report.error
    assert store.dictionary("agents").names == ["x", "y", "z"]


def test_a_refused_file_of_a_kind_without_record_ids_is_refused_in_one_line(tmp_path):
    import datetime as dt

    bad = tmp_path / "scores.csv"
    bad.write_bytes(b"task,who,score\nt1,caf\xe9,1\n")  # not UTF-8
    mapping = Mapping.parse(columns="agent=who")
    [report] = Store(tmp_path / "store").ingest([bad], "scores", mapping)
    assert report.status == "unreadable" and report.error.startswith(f"{bad}: ") and "not UTF-8" in report.error
    assert report.mapping == mapping.record() and dt.datetime.fromisoformat(report.ingested_at).utcoffset() == dt.timedelta(0)


def test_a_files_footprint_counts_the_agents_new_to_the_store(tmp_path, battles_file):
    more = tmp_path / "more.csv"
    more.write_text("model_a,model_b,winner\nw,x,model_a\n")  # w new, x known
    _, added = Store(tmp_path / "store").ingest([battles_file, more], "battles")
    assert added.footprint["new_agents"] == 1
