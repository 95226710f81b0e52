"""Footprints (issue 33): the counts a cost model reads, kept per file at ingest, equal to what the reduction
finds on a store of one file, and merged as lower bounds for several."""

import pytest

from benchmarks.datasets import ROOT, dataset
from pipeline.board import input_size, stored_size
from pipeline.methods.registry import Size
from pipeline.stats import reduce_store
from pipeline.stats.extras import kind_statistics
from pipeline.store import Store
from pipeline.store.footprint import Footprint

SLICES = [("llmfao", "battles", 400), ("arena_hard_auto", "scores", 15), ("wta_matches", "games", 15), ("f1_race_results", "ballots", 15)]


@pytest.mark.skipif(not (ROOT / "arena_hard_auto").exists(), reason="the shared data sets are absent")
@pytest.mark.parametrize(("name", "kind", "limit"), SLICES)
def test_a_stores_footprint_is_the_size_its_reduction_finds(tmp_path, name, kind, limit):
    path = dataset(name, kind).write(tmp_path, limit)
    store = Store(tmp_path / "store")
    store.ingest([path], kind)
    wanted = {"pairwise", "histogram", "game_data"} & kind_statistics(kind)
    reduced = input_size(reduce_store(store, kind, wanted))
    assert reduced.agents > 1 and reduced.pairs and reduced.ballots and reduced.members > reduced.ballots
    assert stored_size(store, kind) == reduced, reduced


def test_footprints_merge_to_what_is_certain_of_the_union():
    # Two files of 5 and 4 agents, 3 of them new in the second: at least 8 agents, and each count at least the larger file's.
    merged = Footprint.merged([Footprint(5, 10, 2, 7, 20, new_agents=5), Footprint(4, 6, 3, 9, 18, new_agents=3)])
    assert merged == Footprint(8, 10, 3, 9, 20, new_agents=8)
    assert Footprint.merged([Footprint(6, 15, 0, 1, 6, new_agents=6), Footprint(6, 15, 0, 1, 6, new_agents=0)]).agents == 6


def test_a_store_written_before_footprints_has_none(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("task,agent,score\nt1,a,1\nt1,b,2\n")
    store = Store(tmp_path / "store")
    store.ingest([path], "scores")
    assert stored_size(store, "scores") == Size(2, 1, 1, 1, 2, "scores")
    manifest = store.manifest
    for report in manifest.files.values():
        object.__setattr__(report, "footprint", None)
    manifest.save(tmp_path / "store" / "manifest.json")
    assert stored_size(store, "scores") is None
