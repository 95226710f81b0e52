"""The ordered comparisons: a total order that does not depend on the partitioning."""

import numpy as np

BATTLES = [
    {"battle_id": "b3", "model_a": "A", "model_b": "B", "winner": "model_a", "timestamp": "2024-01-03T00:00:00Z"},
    {"battle_id": "b1", "model_a": "B", "model_b": "C", "winner": "tie", "timestamp": "2024-01-01T00:00:00Z"},
    {"battle_id": "b2", "model_a": "C", "model_b": "A", "winner": "model_b", "timestamp": "2024-01-02T00:00:00Z"},
    {"battle_id": "b0", "model_a": "A", "model_b": "C", "winner": "tie (bothbad)", "timestamp": None},
]


def test_battles_are_ordered_by_timestamp_with_unstamped_rows_first(log_stats):
    stats, _ = log_stats(BATTLES, {"sequence"})
    seq = stats.extra["sequence"]
    # agents get ids A=0, B=1, C=2; b0 has no timestamp so it comes first, then b1, b2, b3
    assert seq.a.tolist() == [0, 1, 2, 0]
    assert seq.b.tolist() == [2, 2, 0, 1]
    assert seq.score.tolist() == [0.5, 0.5, 0.0, 1.0]
    assert seq.group.tolist() == [0, 1, 2, 3]  # each battle is its own group


def test_the_sequence_does_not_depend_on_the_partitioning(log_stats):
    rows = [row | {"battle_id": f"{row['battle_id']}-{copy}"} for copy in "zyx" for row in BATTLES]
    one, _ = log_stats(rows, {"sequence"})
    three, _ = log_stats(rows, {"sequence"}, files=3, target_rows=1)
    assert len(one.extra["sequence"]) == 12
    for name in ("a", "b", "score", "weight", "group"):
        assert np.array_equal(getattr(one.extra["sequence"], name), getattr(three.extra["sequence"], name))


def test_a_game_gives_its_pairs_as_one_group(log_stats):
    rows = [{"game_id": "g1", "player": p, "place": place, "timestamp": "2024-01-01"} for p, place in
            [("X", 2), ("Y", 1), ("Z", 2)]]
    rows += [{"game_id": "g0", "player": p, "place": place, "timestamp": "2023-12-31"} for p, place in [("X", 1), ("Y", 2)]]
    stats, _ = log_stats(rows, {"sequence"}, kind="games")
    seq = stats.extra["sequence"]
    # g0 (earlier) first: X beat Y. g1: Y first, then X and Z tied second: Y>X, Y>Z, X=Z
    assert list(zip(seq.a.tolist(), seq.b.tolist(), seq.score.tolist())) == [(0, 1, 1.0), (1, 0, 1.0), (1, 2, 1.0), (0, 2, 0.5)]
    assert seq.group.tolist() == [0, 1, 1, 1]
    assert seq.players.tolist() == [2, 3, 3, 3]


def _random_partials(rng, parts, unpositioned_share):
    """Sorted partials of the `sequence` statistic with many equal timestamps and positions across
    partials, the same battle id in two partials, games, and rows without a timestamp, a position
    (stored before positions were) or an id."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from pipeline.stats.sequence import SCHEMA, SORT_KEY

    tables = []
    for part in range(parts):
        rows = int(rng.integers(0, 40))
        stamp = rng.integers(0, 6, rows)
        unpositioned = rng.random(rows) < unpositioned_share
        ident = [None if not old or rng.random() < 0.05 else f"g{int(rng.integers(0, 12))}" for old in unpositioned]
        sub, a, b = rng.integers(0, 3, rows), rng.integers(0, 5, rows), rng.integers(0, 5, rows)
        table = pa.table([pa.array(stamp, mask=rng.random(rows) < 0.1), pa.array(rng.integers(0, 8, rows), mask=unpositioned),
                          pa.array(ident, pa.string()), pa.array(sub, pa.int32()), pa.array(a, pa.int32()), pa.array(b, pa.int32()),
                          pa.array(rng.integers(0, 3, rows), pa.int8()), pa.array(rng.integers(1, 4, rows)),
                          pa.array(2 + (a + b + sub) % 2, pa.int32())],  # rows equal on the key are equal
                         schema=SCHEMA)
        tables.append(table.take(pc.sort_indices(table, sort_keys=[(k, "ascending", "at_start") for k in SORT_KEY])))
    return tables


def test_merging_sorted_runs_gives_the_bytes_of_one_sort_whatever_the_merge_tree():
    import functools

    import pyarrow as pa
    import pyarrow.compute as pc

    from pipeline.stats.sequence import SEQUENCE, SORT_KEY, Runs, as_run

    rng = np.random.default_rng(11)
    for trial in range(100):
        tables = _random_partials(rng, int(rng.integers(1, 7)), (0.0, 0.5, 1.0)[trial % 3])  # new, mixed, old stores
        everything = pa.concat_tables(tables)
        one_sort = everything.take(pc.sort_indices(everything, sort_keys=[(k, "ascending", "at_start") for k in SORT_KEY]))
        present = np.arange(5)
        expected = SEQUENCE.finalize(Runs([one_sort]), present, {})
        partials = [as_run(t) if trial % 2 else Runs([t]) for t in tables]  # compact runs, or every column
        shuffled = [partials[i] for i in rng.permutation(len(partials))]
        left = functools.reduce(SEQUENCE.merge, shuffled)
        balanced = shuffled
        while len(balanced) > 1:
            balanced = [SEQUENCE.merge(*balanced[i: i + 2]) if i + 1 < len(balanced) else balanced[i]
                        for i in range(0, len(balanced), 2)]
        merged_ones = [SEQUENCE.decode(SEQUENCE.encode(left)), left] + ([balanced[0]] if balanced[0] is not left else [])
        for merged in merged_ones:  # each finalized once: finalizing takes the runs out
            got = SEQUENCE.finalize(merged, present, {})
            for name in ("a", "b", "score", "weight", "players", "group"):
                assert np.asarray(getattr(got, name)).tobytes() == np.asarray(getattr(expected, name)).tobytes(), (trial, name)


def test_finalizing_takes_the_runs_out_and_leaves_the_merged_partials_usable():
    import pytest

    from pipeline.stats.sequence import SEQUENCE, as_run

    tables = _random_partials(np.random.default_rng(5), 3, 0.5)
    parts = [as_run(t) for t in tables]
    merged = SEQUENCE.merge(SEQUENCE.merge(parts[0], parts[1]), parts[2])
    first = SEQUENCE.finalize(merged, np.arange(5), {})
    with pytest.raises(ValueError, match="finalized already"):
        SEQUENCE.finalize(merged, np.arange(5), {})
    with pytest.raises(ValueError, match="finalized already"):
        SEQUENCE.encode(merged)
    again = SEQUENCE.finalize(SEQUENCE.merge(SEQUENCE.merge(parts[2], parts[0]), parts[1]), np.arange(5), {})
    assert len(first) == sum(t.num_rows for t in tables)
    for name in ("a", "b", "score", "weight", "players", "group"):
        assert np.asarray(getattr(first, name)).tobytes() == np.asarray(getattr(again, name)).tobytes(), name


def test_a_pickled_sequence_keeps_its_uniform_columns_as_one_value():
    """Dask pickles the sequence from the worker that finalized it: a column of one value stays one
    value (numpy alone would copy its view to the log's length), the others are the same bytes."""
    import pickle

    from pipeline.arrays import is_uniform, uniform
    from pipeline.stats.sequence import ComparisonSequence

    m = 100_000
    rng = np.random.default_rng(3)
    seq = ComparisonSequence(np.arange(4), rng.integers(0, 4, m).astype(np.int32), rng.integers(0, 4, m).astype(np.int32),
                             rng.choice(np.array([0, 0.5, 1], np.float32), m), uniform(np.float64(2.5), m),
                             uniform(np.int32(2), m), np.arange(m, dtype=np.int32))
    data = pickle.dumps(seq, protocol=5)
    assert len(data) < 17 * m  # a, b, score and group: 4 bytes a row each; weight and players nothing (copied: 12 more)
    back = pickle.loads(data)
    assert is_uniform(back.weight) and is_uniform(back.players) and not is_uniform(back.a)
    for name in ("agents", "a", "b", "score", "weight", "players", "group"):
        assert getattr(back, name).dtype == getattr(seq, name).dtype, name
        assert np.asarray(getattr(back, name)).tobytes() == np.asarray(getattr(seq, name)).tobytes(), name
    assert pickle.loads(pickle.dumps(ComparisonSequence(*(np.zeros(0, np.int32) for _ in range(7))))).a.shape == (0,)


def _drop_positions(store) -> None:
    """Rewrite the store's partitions as they were written before rows carried ingest positions."""
    import pyarrow.parquet as pq

    from pipeline.logs.identity import INGEST_POSITION

    for part in store.partitions("battles"):
        path = store.path(part)
        pq.write_table(pq.read_table(path).drop_columns([INGEST_POSITION]), path)


UNSTAMPED = [{"battle_id": f"{tag}{i}", "model_a": "ABCD"[i % 4], "model_b": "ABCD"[(i + 1 + i // 4) % 4],
              "winner": ("model_a", "model_b", "tie")[i % 3]} for i, tag in enumerate("qpmkzxacbynd")]


def _pairs(seq, names):
    return [(names[seq.agents[a]], names[seq.agents[b]], s) for a, b, s in zip(seq.a, seq.b, seq.score)]


def _expected(rows):
    return [(r["model_a"], r["model_b"], {"model_a": 1.0, "model_b": 0.0}.get(r["winner"], 0.5)) for r in rows]


def test_a_store_written_before_ingest_positions_falls_back_to_id_order(log_stats, tmp_path):
    """Without positions, rows without a timestamp go by battle id (as text), as before; rows of
    files ingested later (with positions) come after them at the same timestamp, in file order."""
    import polars as pl

    from pipeline.stats import reduce_store

    rows = UNSTAMPED
    in_order, store = log_stats(rows, {"sequence"})
    names = store.dictionary("agents").names
    assert _pairs(in_order.extra["sequence"], names) == _expected(rows)  # file order
    _drop_positions(store)
    old = reduce_store(store, "battles", {"sequence"}).extra["sequence"]
    by_id = sorted(rows, key=lambda r: r["battle_id"])
    assert by_id != rows and _pairs(old, names) == _expected(by_id)

    later = [dict(r, battle_id=f"later-{9 - i}") for i, r in enumerate(rows)]
    path = tmp_path / "later.csv"
    pl.DataFrame(later).write_csv(path)
    store.ingest([path], "battles")
    for target_rows in (2_000_000, 1):
        mixed = reduce_store(store, "battles", {"sequence"}, target_rows=target_rows).extra["sequence"]
        assert _pairs(mixed, store.dictionary("agents").names) == _expected(by_id + later)


def test_games_without_timestamps_go_by_their_first_row_in_the_file(log_stats):
    rows = [{"game_id": game, "player": p, "place": place} for game, players in
            [("z", [("X", 1), ("Y", 2)]), ("a", [("Y", 1), ("Z", 2), ("X", 3)]), ("m", [("Z", 1), ("X", 2)])]
            for p, place in players]
    rows.append({"game_id": "z", "player": "W", "place": 3})  # z's last player, after every other game's rows
    stats, store = log_stats(rows, {"sequence"}, kind="games")
    seq = stats.extra["sequence"]
    names = store.dictionary("agents").names
    assert [(names[seq.agents[a]], names[seq.agents[b]]) for a, b in zip(seq.a, seq.b)] == [
        ("X", "Y"), ("X", "W"), ("Y", "W"), ("Y", "Z"), ("Y", "X"), ("Z", "X"), ("Z", "X")]
    assert seq.group.tolist() == [0, 0, 0, 1, 1, 1, 2]


def test_records_in_memory_are_in_their_given_order():
    from pipeline.stats.in_memory import statistics_of_records

    stats, names = statistics_of_records(UNSTAMPED, "battles", {"sequence"})
    assert _pairs(stats.extra["sequence"], names) == _expected(UNSTAMPED)
