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
