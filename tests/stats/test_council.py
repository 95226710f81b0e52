"""Reviews through the store: encoding, the core statistics (self-votes excluded) and council_reviews."""

from __future__ import annotations

import json

import numpy as np

from pipeline.methods import run
from pipeline.stats import reduce_store
from pipeline.stats.council import council_profile
from pipeline.store import Store

MAPPING = {"A": "m1", "B": "m2", "C": "m3"}
RECORDS = [
    {"query_id": "q1", "reviewer": "m1", "ranking": ["A", "B", "C"], "label_to_model": MAPPING, "timestamp": "2024-11-01"},
    {"query_id": "q1", "reviewer": "m2", "ranking": ["C", "A"], "label_to_model": MAPPING, "timestamp": "2024-11-01"},
    {"query_id": "q2", "reviewer": "m3", "abstained": True, "label_to_model": MAPPING, "timestamp": "2024-11-02"},
    {"query_id": "q2", "reviewer": "judge", "ranking": ["B", "C", "A"], "label_to_model": MAPPING},
]


def write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_store_reduction_matches_the_in_memory_profile(tmp_path):
    # Two files (and three partitions: two dates and an undated one) give what one profile gives.
    store = Store(tmp_path / "store")
    store.ingest([write(tmp_path / "a.jsonl", RECORDS[:2]), write(tmp_path / "b.jsonl", RECORDS[2:])], "reviews")
    stats = reduce_store(store, "reviews", {"pairwise", "council_reviews"})
    names = store.dictionary().names
    assert names == ["m1", "m2", "m3", "judge"]  # models first (the batch's names sorted), then the other reviewers
    # Self-votes excluded: m1's review counts only m2 > m3; m2's only m3 > m1; judge's m2 > m3 > m1.
    wins = {(names[stats.agents[i]], names[stats.agents[j]]): w for (i, j), w in np.ndenumerate(stats.pairwise.wins) if w}
    assert wins == {("m2", "m3"): 2.0, ("m3", "m1"): 2.0, ("m2", "m1"): 1.0}
    memory, memory_names = council_profile(RECORDS)
    assert memory_names == sorted(names)  # in memory, ids follow the sorted names
    from_store, in_memory = run("council-borda:compare=", stats), run("council-borda:compare=", memory)
    by_name = lambda r, n: {n[int(a)]: (s, k) for a, s, k in zip(r.agents, r.score, r.rank)}  # noqa: E731
    assert by_name(from_store, names) == by_name(in_memory, memory_names)
    # The canonical name order is the same, whatever ids the store gave.
    assert [names[a] for a in stats.agents[np.argsort(stats.agent_keys)]] == sorted(names[a] for a in stats.agents)
    reviews = stats.extra["council_reviews"]
    assert reviews.query_ids.to_pylist() == ["q1", "q2"] and reviews.abstained.tolist() == [False, False, True, False]  # by (query, reviewer id): m3 (2) before judge (3)


def test_duplicate_review_across_files_keeps_the_latest(tmp_path):
    store = Store(tmp_path / "store")
    later = RECORDS[0] | {"ranking": ["B"], "timestamp": "2024-11-03"}
    store.ingest([write(tmp_path / "a.jsonl", RECORDS[:1]), write(tmp_path / "b.jsonl", [later])], "reviews")
    reviews = reduce_store(store, "reviews", {"council_reviews"}).extra["council_reviews"]
    assert reviews.duplicates == 1 and reviews.ranked.tolist() == [store.dictionary().ids(["m2"])[0]]
