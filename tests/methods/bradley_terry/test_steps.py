"""The sparse Hessian's layout (`Adjacency`, `Banded`) built by counting sorts, against np.lexsort.

The oracles below are the implementations the counting sorts replaced (two np.lexsort passes): the
new ones must give the same arrays, bit for bit and dtype for dtype, whatever the graph: pairs in
several cells in either orientation, agents in no cell, one or two agents, no cells at all."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import csr_array
from scipy.sparse.csgraph import reverse_cuthill_mckee

from pipeline.methods.bradley_terry.steps import Adjacency, Banded, stable_order

FIELDS = ("start", "split", "cell", "other")


def lexsort_adjacency(n: int, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    m = len(x)
    rows, others = np.r_[x, y], np.r_[y, x]
    order = np.lexsort((others, rows))
    start = np.r_[0, np.cumsum(np.bincount(rows, minlength=n))].astype(np.int64)
    split = start[:-1] + np.bincount(np.maximum(x, y), minlength=n)
    index = np.int32 if 2 * m < 2**31 else np.int64
    return start, split.astype(np.int64), np.r_[np.arange(m), np.arange(m)][order].astype(index), others[order].astype(index)


def lexsort_banded(n: int, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    pattern = csr_array((np.ones(2 * len(x)), (np.r_[x, y], np.r_[y, x])), shape=(n, n))
    order = reverse_cuthill_mckee(pattern, symmetric_mode=True).astype(np.int64)
    number = np.empty(n, dtype=np.int64)
    number[order] = np.arange(n)
    x, y = number[x], number[y]
    cells = np.lexsort((np.maximum(x, y), np.minimum(x, y)))
    x, y = x[cells], y[cells]
    return (order, cells, x, y, *lexsort_adjacency(n, x, y))


def assert_identical(got: tuple[np.ndarray, ...], expected: tuple[np.ndarray, ...]) -> None:
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b)


def banded_fields(banded: Banded) -> tuple[np.ndarray, ...]:
    return (banded.order, banded.cells, banded.x, banded.y, *(getattr(banded.adjacency, f) for f in FIELDS))


def random_graph(n: int, m: int, seed: int, repeat_share: float, spread: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """m cells on n agents (x != y, in either orientation); `repeat_share` of them repeat an earlier
    cell's pair, half of those flipped; with `spread`, agents meet only agents near them in a random
    numbering (a banded graph with scattered ids)."""
    rng = np.random.default_rng(seed)
    if spread is None:
        x, y = rng.integers(0, n, m), rng.integers(0, n, m)
    else:
        position = rng.permutation(n)
        a = rng.integers(0, n, m)
        b = np.clip(a + rng.integers(-spread, spread + 1, m), 0, n - 1)
        x, y = position[a], position[b]
    keep = x != y
    x, y = x[keep], y[keep]
    repeat = np.flatnonzero(rng.random(len(x)) < repeat_share)
    repeat = repeat[repeat > 0]
    earlier = rng.integers(0, repeat)
    flip = rng.random(len(repeat)) < 0.5
    x[repeat], y[repeat] = np.where(flip, y[earlier], x[earlier]), np.where(flip, x[earlier], y[earlier])
    return x.astype(np.int64), y.astype(np.int64)


GRAPHS = [
    pytest.param(40, 300, 0.0, None, id="dense-chance-repeats"),
    pytest.param(40, 300, 0.3, None, id="dense-repeats"),
    pytest.param(5000, 900, 0.0, None, id="no-repeats"),
    pytest.param(500, 900, 0.0, None, id="sparse-isolated-agents-chance-repeats"),
    pytest.param(500, 3000, 0.2, 4, id="banded-repeats"),
    pytest.param(2000, 20000, 0.05, 30, id="banded-large"),
    pytest.param(3, 50, 0.9, None, id="three-agents-many-repeats"),
]


@pytest.mark.parametrize(("n", "m", "repeat_share", "spread"), GRAPHS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_banded_and_adjacency_are_those_of_the_lexsorts(n, m, repeat_share, spread, seed):
    x, y = random_graph(n, m, seed, repeat_share, spread)
    assert_identical(banded_fields(Banded.of(n, x, y)), lexsort_banded(n, x, y))
    adjacency = Adjacency.of(n, x, y)
    assert_identical(tuple(getattr(adjacency, f) for f in FIELDS), lexsort_adjacency(n, x, y))


def test_repeated_pairs_in_both_orientations_are_listed_as_the_lexsort_lists_them():
    # agents 0..2; the pair {0, 1} in four cells, two each way, interleaved with {1, 2}
    x, y = np.array([0, 1, 2, 1, 0, 2, 1]), np.array([1, 0, 1, 0, 1, 1, 2])
    banded = Banded.of(3, x, y)
    assert_identical(banded_fields(banded), lexsort_banded(3, x, y))
    adjacency = Adjacency.of(3, x, y)
    assert_identical(tuple(getattr(adjacency, f) for f in FIELDS), lexsort_adjacency(3, x, y))
    row = slice(adjacency.start[0], adjacency.start[1])  # agent 0 is x of cells 0 and 4, y of cells 1 and 3
    assert adjacency.cell[row].tolist() == [0, 4, 1, 3]


@pytest.mark.parametrize(("n", "x", "y"), [
    pytest.param(1, [], [], id="one-agent"),
    pytest.param(5, [], [], id="no-cells"),
    pytest.param(2, [1], [0], id="two-agents"),
    pytest.param(2, [0, 1, 0], [1, 0, 1], id="two-agents-repeated"),
    pytest.param(6, [5], [2], id="one-cell-among-isolated-agents"),
])
def test_small_and_empty_graphs_are_those_of_the_lexsorts(n, x, y):
    x, y = np.array(x, dtype=np.int64), np.array(y, dtype=np.int64)
    assert_identical(banded_fields(Banded.of(n, x, y)), lexsort_banded(n, x, y))
    adjacency = Adjacency.of(n, x, y)
    assert_identical(tuple(getattr(adjacency, f) for f in FIELDS), lexsort_adjacency(n, x, y))


def test_cells_of_any_integer_type_give_the_same_layout():
    x, y = random_graph(300, 2000, 4, 0.1, 5)
    expected = banded_fields(Banded.of(300, x, y))
    for dtype in (np.int32, np.uint16, np.intp):
        assert_identical(banded_fields(Banded.of(300, x.astype(dtype), y.astype(dtype))), expected)


@pytest.mark.parametrize("pool", ["wta_like", "diplomacy_like"])
def test_the_benchmark_pools_are_laid_out_as_the_lexsorts_lay_them(pool):
    from benchmarks import bench_m_elo_sparse

    cells = getattr(bench_m_elo_sparse, pool)()
    assert_identical(banded_fields(Banded.of(cells.n, cells.x, cells.y)), lexsort_banded(cells.n, cells.x, cells.y))


def test_stable_order_is_a_stable_sort_with_the_runs_of_each_key():
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 30, 1000)
    items = rng.permutation(1000) + 7
    ordered, starts = stable_order(keys, 40, items)
    assert np.array_equal(ordered, items[np.argsort(keys, kind="stable")])
    assert np.array_equal(starts, np.r_[0, np.cumsum(np.bincount(keys, minlength=40))])
    assert starts.dtype == np.int64 and ordered.dtype == items.dtype
    assert np.array_equal(stable_order(keys, 30)[0], np.argsort(keys, kind="stable"))
