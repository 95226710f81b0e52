"""Footprints (issue 33): the counts a cost model reads, kept per file at ingest, equal to what the reduction
finds on a store of one file, and merged as lower bounds for several."""

import itertools

import numpy as np
import pyarrow as pa
import pytest

from benchmarks.datasets import ROOT, dataset
from pipeline.board import input_size, stored_size
from pipeline.logs import log_kind
from pipeline.logs.orders import WeakOrders
from pipeline.methods.registry import Size
from pipeline.stats import reduce_store
from pipeline.stats.extras import kind_statistics
from pipeline.store import Store, footprint
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
    assert Footprint.merged([]) == Footprint()


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


def orders_of(ballots: list[list[list[int]]]) -> WeakOrders:
    """Weak orders from ballots written as their levels, best first (`[[3], [1, 2]]`: 3 above 1 and 2, tied)."""
    members = [(sorted(level), rank) for ballot in ballots for rank, level in enumerate(ballot)]
    lengths = [sum(len(level) for level in ballot) for ballot in ballots]
    agents = [agent for level, _ in members for agent in level]
    levels = [float(rank) for level, rank in members for _ in level]
    return WeakOrders(np.r_[0, np.cumsum(lengths)].astype(np.int64), np.array(agents, np.int64),
                      np.array(levels), np.ones(len(ballots)))


# agent ids past 2^21: a pair key `low << 32 | high` then needs more than float64's 53 bits
LARGE = 2**30


@pytest.mark.parametrize("per_step", [footprint.PAIRS_PER_STEP, 1])
def test_pair_keys_are_the_distinct_pairs_sharing_a_ballot_as_low_shifted_by_32_or_high(monkeypatch, per_step):
    monkeypatch.setattr(footprint, "PAIRS_PER_STEP", per_step)  # 1: each ballot generated on its own
    ballots = [[[LARGE + 2], [LARGE]], [[5]], [], [[LARGE], [LARGE + 1, LARGE + 2]], [[LARGE + 1], [LARGE]], [[7], [5]]]
    keys = footprint.pair_keys(orders_of(ballots))
    expected = sorted({min(a, b) << 32 | max(a, b) for ballot in ballots
                       for a, b in itertools.combinations([x for level in ballot for x in level], 2)})
    assert keys.dtype == np.int64 and keys.tolist() == expected
    assert len(expected) == 4  # the pair (LARGE, LARGE + 2) and (LARGE, LARGE + 1) each in two ballots
    # ballots of one member or none share no pair
    alone = footprint.pair_keys(orders_of([[[3]], [], [[4]]]))
    assert alone.dtype == np.int64 and len(alone) == 0


def test_ballot_fingerprints_are_equal_exactly_for_equal_weak_orders_each_hash_alone():
    ballots = [[[1], [2]], [[1, 2]], [[2], [1]], [[1], [2], [3]], [[1], [2, 3]], [[1, 2], [3]], [], [[4]],
               [[1], [2], [3]], [[1, 2]], [[1], [2, 3]], [[4]], [[1], [2]], []]  # the second half repeats, in another order
    rows = footprint.ballot_fingerprints(orders_of(ballots))
    assert rows.dtype == np.uint64 and rows.shape == (len(ballots), 3)
    assert rows[:, 2].tolist() == [sum(map(len, ballot)) for ballot in ballots]
    canonical = [tuple((agent, rank) for rank, level in enumerate(ballot) for agent in sorted(level)) for ballot in ballots]
    for column in (0, 1):  # each of the two hashes tells these ballots apart on its own
        for (i, a), (j, b) in itertools.combinations(enumerate(canonical), 2):
            same = (rows[i, column], rows[i, 2]) == (rows[j, column], rows[j, 2])
            assert same == (a == b), (ballots[i], ballots[j], column)
    assert footprint.ballot_fingerprints(orders_of([])).shape == (0, 3)
    assert footprint.ballot_fingerprints(orders_of([])).dtype == np.uint64


def test_pow_mod_is_the_power_modulo_2_to_the_64():
    exponents = np.array([0, 1, 2, 3, 7, 64, 1000, 123_457])
    for base in footprint.FINGERPRINT:
        found = footprint.pow_mod(base, exponents)
        assert found.dtype == np.uint64
        assert found.tolist() == [pow(int(base), int(e), 2**64) for e in exponents]


def test_counts_of_battles_between_agents_of_large_ids_are_exact():
    # Three outcomes between the same two agents count three ballots of two; a pair of ids past 2^21 stays apart from
    # its neighbour; agent 0 never plays.
    a = np.array([LARGE, LARGE + 1, LARGE, LARGE, LARGE + 2, 9], np.int32)
    b = np.array([LARGE + 1, LARGE, LARGE + 1, LARGE + 2, LARGE, 11], np.int32)
    winner = np.array([0, 0, 2, 1, 0, 3], np.int8)  # a wins, a wins (so LARGE + 1 beats LARGE), tie, b, a, tie
    table = pa.table({"model_a": a, "model_b": b, "winner": winner, "weight": np.ones(6),
                      "prompt": pa.array([1, 1, 2, None, 2, 3], pa.int32())})
    counter = footprint.FootprintCounter(log_kind("battles"))
    counter.add(table.slice(0, 3))
    counter.add(table.slice(3))
    counter.add(table.slice(0, 0))
    # ballots: LARGE over LARGE+1, LARGE+1 over LARGE, the tie, LARGE+2 over LARGE (twice, in either column), 9 = 11
    assert counter.footprint(new_agents=2) == Footprint(agents=5, pairs=3, tasks=3, ballots=5, members=10, new_agents=2)


def test_counts_of_ballots_over_several_batches_are_of_their_union():
    # Batch one: 1 > 2 and 3 alone; batch two: 1 > 2 again, 2 = 4. Agents 1-4, pairs {1,2} and {2,4}, three
    # distinct ballots of 2 + 1 + 2 members.
    def batch(agents, levels):
        return pa.table({"agents": pa.array(agents, pa.list_(pa.int32())), "levels": pa.array(levels, pa.list_(pa.int16())),
                         "weight": np.ones(len(agents))})

    counter = footprint.FootprintCounter(log_kind("ballots"))
    counter.add(batch([[1, 2], [3]], [[0, 1], [0]]))
    counter.add(batch([[1, 2], [2, 4]], [[0, 1], [0, 0]]))
    assert counter.footprint(new_agents=0) == Footprint(agents=4, pairs=2, tasks=0, ballots=3, members=5)
