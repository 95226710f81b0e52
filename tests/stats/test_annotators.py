"""Per-annotator pairwise counts."""

import numpy as np

ROWS = [
    {"model_a": "A", "model_b": "B", "winner": "model_a", "judge": "j1"},
    {"model_a": "B", "model_b": "A", "winner": "model_a", "judge": "j1"},
    {"model_a": "B", "model_b": "A", "winner": "tie", "judge": "j2"},
    {"model_a": "A", "model_b": "C", "winner": "model_b", "judge": None},
]


def test_cells_count_each_annotators_votes(log_stats):
    stats, store = log_stats(ROWS, {"annotators"})
    counts = stats.extra["annotators"]
    # j1 voted A over B once and B over A once; j2 tied A and B; the unjudged battle has C beat A
    judges = store.dictionary("judges").names
    assert [judges[j] if j >= 0 else None for j in counts.judges] == [None, "j1", "j2"]  # ids only: -1 has no judge
    cells = sorted(zip(counts.judge.tolist(), counts.x.tolist(), counts.y.tolist(), counts.x_wins.tolist(),
                       counts.y_wins.tolist(), counts.ties.tolist()))
    assert cells == [(0, 0, 2, 0.0, 1.0, 0.0), (1, 0, 1, 1.0, 1.0, 0.0), (2, 0, 1, 0.0, 0.0, 1.0)]
    assert counts.records.tolist() == [1.0, 2.0, 1.0]


def test_the_counts_do_not_depend_on_the_partitioning(log_stats):
    rows = [row | {"battle_id": f"{i}"} for i, row in enumerate(ROWS * 4)]
    one, _ = log_stats(rows, {"annotators"})
    four, _ = log_stats(rows, {"annotators"}, files=4, target_rows=1)
    assert one.extra["annotators"].records.sum() == 16
    a, b = one.extra["annotators"], four.extra["annotators"]
    for name in ("judge", "x", "y", "x_wins", "y_wins", "ties"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
