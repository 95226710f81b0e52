"""Every statistic incremental: after new files (bringing new agents, judges and prompts), a rating
through the cache reads only the new files' units and gives the same bytes as one from scratch."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from pipeline.board import Board, rate, reduce
from pipeline.stats import EXTRAS, reduce_store
from pipeline.stats import reduce as reduce_module
from pipeline.stats import sequence as sequence_module
from pipeline.stats.extras import Kept
from pipeline.store import Store
from tests.conftest import SAMPLES
from tests.stats.test_cache import (SAMPLE_STORES, assert_identical, cache_files, every_statistic, is_snapshot, is_summed, sample_store,
                                    split_sample)

BATTLE_METHODS = ("elo", "m-elo", "copeland", "deviation", "am-elo")


def write_battles(path: Path, rng: np.random.Generator, rows: int, agents: int, judges: int, prompts: int, day: int) -> None:
    lines = ["battle_id,model_a,model_b,winner,judge,prompt,timestamp"]
    for i in range(rows):
        a, b = rng.choice(agents, 2, replace=False)
        winner = ("model_a", "model_b", "tie")[rng.integers(3)]
        lines.append(f"{path.stem}-{i},m{a},m{b},{winner},j{rng.integers(judges)},p{rng.integers(prompts)},"
                     f"2024-01-{day:02d}T00:00:{i % 60:02d}")
    path.write_text("\n".join(lines) + "\n")


def ratings_bytes(store: Store, board: Board, use_cache: bool) -> tuple[object, dict[str, bytes]]:
    stats = reduce(store, board, use_cache=use_cache)
    rated = rate(stats, board.methods)
    assert not rated.refused, rated.refused
    return stats, {r.spec: r.agents.tobytes() + r.score.tobytes() + r.rank.tobytes() for r in rated.ratings}


def read_units(monkeypatch) -> list[str]:
    """The sources of the units read from Parquet (not from the cache) from now on."""
    sources: list[str] = []
    original = reduce_module.reduce_unit

    def recording(unit, *args):
        sources.append(unit.source)
        return original(unit, *args)

    monkeypatch.setattr(reduce_module, "reduce_unit", recording)
    return sources


def check_incremental(tmp_path: Path, monkeypatch, board: Board, old: list[Path], new: list[Path]) -> None:
    store = Store(tmp_path / "store")
    store.ingest(old, board.kind)
    agents_before = len(store.dictionary("agents"))
    ratings_bytes(store, board, use_cache=True)  # fills the cache
    reports = store.ingest(new, board.kind)
    assert all(r.status == "ingested" for r in reports), reports
    assert len(store.dictionary("agents")) > agents_before  # the id space grew: cached partials are re-embedded
    sources = read_units(monkeypatch)
    incremental, incremental_ratings = ratings_bytes(store, board, use_cache=True)
    assert set(sources) == {r.sha256 for r in reports}  # only the new files were read
    monkeypatch.undo()
    fresh, fresh_ratings = ratings_bytes(Store(store.root), board, use_cache=False)
    assert_identical(fresh, incremental)
    assert incremental_ratings == fresh_ratings


def test_battle_boards_read_only_new_files_and_match_a_rating_from_scratch(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    files = []
    for day, (agents, judges, prompts) in enumerate([(5, 2, 3), (5, 2, 3), (7, 3, 4)], start=1):
        files.append(tmp_path / f"battles{day}.csv")
        write_battles(files[-1], rng, 60, agents, judges, prompts, day)
    board = Board("arena", "battles", (), BATTLE_METHODS)
    check_incremental(tmp_path, monkeypatch, board, files[:2], files[2:])


def test_council_board_reads_only_new_files_and_matches_a_rating_from_scratch(tmp_path, monkeypatch):
    lines = (SAMPLES / "council/reviews.jsonl").read_text(encoding="utf-8").splitlines()
    old = tmp_path / "reviews1.jsonl"
    old.write_text("\n".join(lines[: len(lines) // 2]) + "\n")
    target = json.loads(lines[len(lines) * 3 // 4])["query_id"]  # a valid query of the later half (the sample ends with bad lines)
    newcomer = []  # the later reviews, and a model the store has not seen answering a query of its own
    for line in lines[len(lines) // 2:]:
        review = json.loads(line)
        if review["query_id"] == target:
            review = json.loads(line.replace("atlas-70b", "zephyr-3b"))
            review["query_id"] += "-new"
        newcomer.append(json.dumps(review))
    new = tmp_path / "reviews2.jsonl"
    new.write_text("\n".join(newcomer) + "\n")
    board = Board("council", "reviews", (), ("council-borda",))
    check_incremental(tmp_path, monkeypatch, board, [old], [new])


@pytest.mark.parametrize("name", sorted(EXTRAS))
def test_every_registered_extra_declares_how_it_moves_into_a_larger_id_space(name):
    assert EXTRAS[name].resize is not None


def finalized_rows(monkeypatch) -> list[int]:
    """The length of every sequence finalized from sorted runs from now on."""
    lengths: list[int] = []
    original = sequence_module._finalize

    def recording(runs, *args):
        seq = original(runs, *args)
        lengths.append(len(seq))
        return seq

    monkeypatch.setattr(sequence_module, "_finalize", recording)
    return lengths


def sequence_rows(tmp_path: Path, files: list[Path], kind: str) -> int:
    store = Store(tmp_path / f"alone-{files[0].stem}")
    store.ingest(files, kind)
    return len(reduce_store(store, kind, {"sequence"}).extra["sequence"])


@pytest.mark.parametrize("kind", ["battles", "games"])
def test_nightlies_finalize_only_the_new_rows_of_the_sequence_when_they_come_after_the_kept_ones(tmp_path, monkeypatch, kind):
    parts = split_sample(SAMPLES / SAMPLE_STORES[kind], tmp_path / "sample")  # in time (or file) order
    store = Store(tmp_path / "store")
    store.ingest(parts[:1], kind)
    statistics = every_statistic(kind)
    reduce_store(store, kind, statistics, target_rows=200, use_cache=True)  # keeps the sequence of the first part
    for part in parts[1:]:  # two nights: the second extends what the first kept
        store.ingest([part], kind)
        finalized = finalized_rows(monkeypatch)
        nightly = reduce_store(store, kind, statistics, target_rows=200, use_cache=True)
        monkeypatch.undo()
        assert finalized == [sequence_rows(tmp_path, [part], kind)]  # the new part's rows alone
        assert_identical(reduce_store(store, kind, statistics, target_rows=200), nightly)


def test_late_rows_make_the_nightly_finalize_every_row_and_match_a_reduction_from_scratch(tmp_path, monkeypatch):
    first, middle, last = split_sample(SAMPLES / SAMPLE_STORES["games"], tmp_path / "sample")  # races in time order
    store = Store(tmp_path / "store")
    store.ingest([first, last], "games")
    reduce_store(store, "games", {"sequence"}, use_cache=True)
    store.ingest([middle], "games")  # races before the last kept one: they belong inside the kept sequence
    finalized = finalized_rows(monkeypatch)
    nightly = reduce_store(store, "games", {"sequence"}, use_cache=True)
    monkeypatch.undo()
    fresh = reduce_store(store, "games", {"sequence"})
    assert_identical(fresh, nightly)
    assert finalized == [len(fresh.extra["sequence"])]  # every row, not the new ones after the kept
    store.ingest([tmp_path / "sample" / "part0.csv"], "games")  # nothing new: the snapshot of every unit answers
    assert_identical(fresh, reduce_store(store, "games", {"sequence"}, use_cache=True))


def test_a_damaged_snapshot_is_refused_and_the_sequence_built_from_every_unit(tmp_path, caplog):
    store = sample_store(tmp_path, "games")
    expected = reduce_store(store, "games", {"sequence"}, use_cache=True)
    [snapshot] = [path for path in cache_files(store) if is_snapshot(path) and not is_summed(path)]
    with np.load(snapshot, allow_pickle=False) as stored:  # a valid index, its groups counted again, key and checksum kept
        arrays = {name: stored[name] for name in stored.files}
    arrays["groups"] = arrays["groups"] + 1
    with snapshot.open("wb") as handle:
        np.savez(handle, **arrays)
    assert_identical(expected, reduce_store(store, "games", {"sequence"}, use_cache=True))
    assert f"{snapshot}: cached snapshot refused" in caplog.text


def test_a_lost_snapshot_makes_the_nightly_read_the_units_the_sum_of_partials_holds(tmp_path):
    # Planted: the units' sum (`reduce.load_summed`) taken although the sequence's snapshot is gone: the units
    # it counted are then not read at all, and the sequence lacks their rows.
    store = sample_store(tmp_path, "games")
    expected = reduce_store(store, "games", {"sequence"}, use_cache=True)
    [snapshot] = [path for path in cache_files(store) if is_snapshot(path) and not is_summed(path)]
    snapshot.unlink()
    assert_identical(expected, reduce_store(store, "games", {"sequence"}, use_cache=True))


def test_a_nightly_merges_new_reviews_of_kept_queries_again_and_gives_what_a_reduction_from_scratch_gives(tmp_path, monkeypatch):
    lines = [json.loads(line) for line in (SAMPLES / "council/reviews.jsonl").read_text(encoding="utf-8").splitlines()]
    lines = [review for review in lines if not review["query_id"].startswith("bad")]
    old, later = lines[: len(lines) // 2], lines[len(lines) // 2:]
    first = old[0]
    again = first | {"ranking": first["ranking"][::-1], "timestamp": "2030-01-01T00:00:00Z"}  # replaces a kept review
    newcomer = old[1] | {"reviewer": "zephyr-3b", "category": "aaa"}  # a new reviewer of a kept query: its category is the smallest
    (tmp_path / "old.jsonl").write_text("".join(json.dumps(review) + "\n" for review in old))
    (tmp_path / "new.jsonl").write_text("".join(json.dumps(review) + "\n" for review in [again, newcomer, *later]))
    store = Store(tmp_path / "store")
    store.ingest([tmp_path / "old.jsonl"], "reviews")
    reduce_store(store, "reviews", {"council_reviews"}, use_cache=True)
    store.ingest([tmp_path / "new.jsonl"], "reviews")
    extended = []
    extra = EXTRAS["council_reviews"]
    recording = Kept(extra.kept.finalize, lambda *args: extended.append(1) or extra.kept.extend(*args))
    monkeypatch.setitem(EXTRAS, "council_reviews", dataclasses.replace(extra, kept=recording))
    nightly = reduce_store(store, "reviews", {"council_reviews"}, use_cache=True)
    monkeypatch.undo()
    assert extended == [1]
    fresh = reduce_store(store, "reviews", {"council_reviews"})
    assert fresh.extra["council_reviews"].duplicates == 1
    assert_identical(fresh, nightly)
