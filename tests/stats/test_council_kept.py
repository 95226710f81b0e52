"""The kept council reviews (`Held`): a snapshot extended by new reviews, spliced by position, equals
the reviews and the snapshot that every review finalized from scratch gives, bit for bit."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from pipeline.stats.council import COUNCIL_REVIEWS, Held, Ragged, Row, ranges
from pipeline.stats.reduce import plan_units
from tests.stats.test_cache import assert_identical
from tests.store.test_object_store import aws, s3  # noqa: F401 (the fixtures)

NAME_ORDERS = {"agents": np.arange(400)[::-1].copy()}  # names in the reverse of id order: the tie-break is not the ids'
PRESENT = np.arange(400)


def review(query: str, reviewer: int, order: tuple[int, ...], models: tuple[int, ...] = (1, 2, 3), *, micros: int | None = None,
           category: str | None = None, abstained: bool = False, from_scores: bool = False) -> Row:
    return (query, reviewer, micros is not None, micros or 0, category is not None, category or "", abstained,
            tuple(sorted(models)), order, from_scores)


def nightly(old: list[Row], new: list[Row]):
    """The reviews and snapshot of `old` extended by `new`, and those of both from scratch."""
    kept = COUNCIL_REVIEWS.kept
    _, snapshot = kept.finalize(tuple(sorted(old)), PRESENT, NAME_ORDERS)
    extended = kept.extend(snapshot, tuple(sorted(new)), PRESENT, NAME_ORDERS)
    scratch = kept.finalize(COUNCIL_REVIEWS.merge(tuple(sorted(old)), tuple(sorted(new))), PRESENT, NAME_ORDERS)
    return extended, scratch


def assert_as_from_scratch(old: list[Row], new: list[Row]):
    (reviews, snapshot), (expected, expected_snapshot) = nightly(old, new)
    assert_identical(expected, reviews, "reviews")
    assert_identical(expected_snapshot, snapshot, "snapshot")
    return reviews


OLD = [review("q1", 1, (1, 2, 3)), review("q1", 2, (3, 1)), review("q3", 1, (2, 1, 3), category="b"),
       review("q5", 3, (), abstained=True, micros=5)]


def test_new_queries_land_between_the_kept_ones_and_at_both_ends():
    new = [review("q0", 2, (1, 3, 2)), review("q2", 3, (2, 3)), review("q4", 1, (3, 2, 1)), review("q40", 1, (1,)),
           review("q9", 2, (2, 1, 3), micros=-7)]
    reviews = assert_as_from_scratch(OLD, new)
    assert reviews.query_ids.to_pylist() == ["q0", "q1", "q2", "q3", "q4", "q40", "q5", "q9"]


def test_a_reviewer_who_reviews_a_kept_query_again_replaces_the_kept_review():
    again = review("q1", 2, (2, 3, 1), micros=10, category="a")
    reviews = assert_as_from_scratch(OLD, [again, review("q3", 4, (1, 3, 2), from_scores=True)])
    assert reviews.duplicates == 1
    assert reviews.category[0] == "a" and reviews.timestamp[0] == 10  # the query's values computed again


def test_a_new_model_beyond_the_kept_ids_widens_the_snapshot():
    new = [review("q3", 300, (300, 1), models=(1, 2, 3, 300)), review("q6", 2, (300, 2), models=(2, 300))]
    reviews = assert_as_from_scratch(OLD, new)
    assert reviews.candidates[reviews.candidate_offsets[1]:reviews.candidate_offsets[2]].tolist() == [1, 2, 3, 300]


def test_the_same_reviews_twice_count_as_duplicates_as_from_scratch():
    reviews = assert_as_from_scratch(OLD, OLD)
    assert reviews.duplicates == len(OLD)


def test_reviews_that_saw_other_models_than_their_query_keep_their_own():
    old = [review("q1", 1, (1, 2), models=(1, 2)), review("q1", 2, (3, 1), models=(1, 3)), review("q2", 1, (1, 2, 3))]
    reviews = assert_as_from_scratch(old, [review("q1", 3, (2, 1), models=(1, 2)), review("q2", 2, (4, 1), models=(1, 4))])
    assert reviews.size.tolist() == [2, 2, 2, 3, 2]  # the answers each review saw, not its query's candidates


@pytest.mark.parametrize("seed", range(6))
def test_random_nightlies_equal_a_reduction_from_scratch(seed):
    rng = np.random.default_rng(seed)

    def random_review() -> Row:
        models = tuple(int(m) for m in rng.choice(300 if rng.random() < 0.1 else 6, int(rng.integers(1, 5)), replace=False))
        order = tuple(int(m) for m in rng.permutation(models)[: int(rng.integers(0, len(models) + 1))])
        return review(f"q{rng.integers(0, 30)}", int(rng.integers(0, 6)), order, models,
                      micros=int(rng.integers(-5, 5)) if rng.random() < 0.5 else None,
                      category=str(rng.choice(["", "x", "é", "ab"])) if rng.random() < 0.3 else None,
                      abstained=bool(rng.random() < 0.1), from_scores=bool(rng.random() < 0.2))

    rows = [random_review() for _ in range(int(rng.integers(1, 80)))]
    cut = int(rng.integers(1, len(rows) + 1))
    assert_as_from_scratch(rows[:cut], rows[cut:] or rows[:1])


def test_a_replaced_review_that_held_the_only_wide_id_narrows_the_ids_as_from_scratch():
    # q3's only review saw model 300 (the kept ids take 16 bits); its reviewer's later review of q3 does
    # not: no id left needs 16 bits, and from scratch they take 8, in the snapshot and in the statistic.
    old = [review("q1", 1, (1, 2, 3)), review("q3", 4, (300, 1), models=(1, 2, 300))]
    reviews = assert_as_from_scratch(old, [review("q3", 4, (2, 1), models=(1, 2), micros=10)])
    assert reviews.candidates.dtype == reviews.ranked.dtype == np.uint8 and reviews.duplicates == 1


def test_a_snapshot_of_another_layout_is_built_again():
    _, snapshot = COUNCIL_REVIEWS.kept.finalize(tuple(sorted(OLD)), PRESENT, NAME_ORDERS)
    assert COUNCIL_REVIEWS.kept.extend(snapshot | {"held.format": np.asarray(0)}, None, PRESENT, NAME_ORDERS) is None
    assert Held.from_arrays({"table": np.zeros(3, np.uint8)}) is None


def test_a_ragged_splice_removes_and_inserts_whole_items():
    values = Ragged(np.array([2, 0, 3]), np.array([1, 2, 3, 4, 5]))
    spliced = values.spliced(np.array([2]), np.array([0, 2, 3]), Ragged(np.array([1, 1, 2]), np.array([7, 8, 9, 9])))
    assert spliced.lengths.tolist() == [1, 2, 0, 1, 2]
    assert spliced.values.tolist() == [7, 1, 2, 8, 9, 9]
    assert ranges(np.array([3, 0, 5]), np.array([5, 0, 6])).tolist() == [3, 4, 5]


def test_a_nightly_over_a_file_ingested_again_under_another_name_equals_a_reduction_from_scratch(tmp_path):
    # The same reviews again (one more line, so that the store takes the file, which drops the
    # records it holds already): the nightly gives what a reduction from scratch gives.
    from pipeline.stats import reduce_store
    from pipeline.store import Store
    from tests.stats.test_council import RECORDS, write

    store = Store(tmp_path / "store")
    store.ingest([write(tmp_path / "a.jsonl", RECORDS)], "reviews")
    reduce_store(store, "reviews", {"council_reviews"}, use_cache=True)
    extra = {"query_id": "q0", "reviewer": "m3", "ranking": ["A"], "label_to_model": {"A": "m1"}}
    store.ingest([write(tmp_path / "again.jsonl", [*RECORDS, extra])], "reviews")
    nightly = reduce_store(store, "reviews", {"council_reviews"}, use_cache=True)
    fresh = reduce_store(store, "reviews", {"council_reviews"})
    assert fresh.extra["council_reviews"].query_ids.to_pylist() == ["q0", "q1", "q2"]
    assert_identical(fresh, nightly)


def test_a_nightly_on_s3_splices_the_new_reviews_into_the_kept_ones_as_a_reduction_from_scratch_gives(aws, s3, tmp_path):  # noqa: F811
    import json

    from pipeline.stats import reduce_store
    from pipeline.store import Store
    from tests.conftest import SAMPLES

    lines = [line for line in (SAMPLES / "council/reviews.jsonl").read_text(encoding="utf-8").splitlines()
             if not json.loads(line)["query_id"].startswith("bad")]
    (tmp_path / "old.jsonl").write_text("\n".join(lines[::2]) + "\n")  # the queries of both files interleave
    (tmp_path / "new.jsonl").write_text("\n".join(lines[1::2]) + "\n")
    url = f"s3://{aws}/store"
    Store(url).ingest([str(tmp_path / "old.jsonl")], "reviews")
    reduce_store(Store(url), "reviews", {"council_reviews"}, use_cache=True)
    before = s3.objects(aws)
    Store(url).ingest([str(tmp_path / "new.jsonl")], "reviews")
    nightly = reduce_store(Store(url), "reviews", {"council_reviews"}, use_cache=True)
    after = {key: etag for key, etag in s3.objects(aws).items() if key.startswith("store/cache/")}
    assert len([key for key in after.keys() & before.keys() if after[key] != before[key]]) == 2  # the snapshot, extended, and the units' sum
    assert_identical(reduce_store(Store(url), "reviews", {"council_reviews"}), nightly)


def test_the_kept_reviews_live_in_column_files_and_no_unit_caches_its_reviews(tmp_path, caplog):
    from pipeline.stats import reduce_store
    from pipeline.store import Store
    from tests.stats.test_council import RECORDS, write

    store = Store(tmp_path / "store")
    store.ingest([write(tmp_path / "a.jsonl", RECORDS[:2])], "reviews")
    reduce_store(store, "reviews", {"council_reviews"}, use_cache=True)
    store.ingest([write(tmp_path / "b.jsonl", RECORDS[2:])], "reviews")
    nightly = reduce_store(store, "reviews", {"council_reviews"}, use_cache=True)
    assert_identical(reduce_store(store, "reviews", {"council_reviews"}), nightly)
    cache = store.root / "cache" / "reviews"
    columns = sorted(cache.glob("*.col"))
    assert {path.name.split(".", 2)[2].removesuffix(".col") for path in columns} == Held.files()  # one generation: the new one
    units = len(plan_units(store, "reviews"))
    assert len(list(cache.glob("*.npz"))) == units + 2  # each unit's core partial, their sum and the snapshot's index
    order = next(path for path in columns if ".order.values." in path.name)
    order.write_bytes(bytes(order.stat().st_size))  # the same size, other bytes: edited by hand
    with caplog.at_level(logging.WARNING):
        again = reduce_store(store, "reviews", {"council_reviews"}, use_cache=True)
    assert "cached snapshot refused" in caplog.text  # and the units read again, as no partial holds their reviews
    assert_identical(nightly, again)
