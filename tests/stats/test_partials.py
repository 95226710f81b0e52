"""Subtracting partials: the counts of a subset's complement, exactly, or a refusal."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.logs.orders import WeakOrders
from pipeline.stats.partials import Partial, PositionCounter, weak_order_partial

STATISTICS = frozenset({"pairwise", "positions"})


def random_orders(rng: np.random.Generator, ballots: int, n: int) -> WeakOrders:
    """Ballots of 2..5 distinct agents with ties, weights on the grid (some far from 1)."""
    rows = [(b, agent, level) for b in range(ballots)
            for agent, level in zip(rng.choice(n, rng.integers(2, 6), replace=False), rng.integers(0, 3, 5))]
    ballot, agent, level = (np.array(c) for c in zip(*rows))
    weights = rng.choice([1.0, 0.5, 3.25, 2.0**-24, 7e9], ballots)[ballot]
    return WeakOrders.from_rows(ballot, agent, level.astype(float), weights)


@pytest.mark.parametrize("dense", [True, False])
def test_whole_minus_held_out_equals_the_rest_counted(dense):
    rng = np.random.default_rng(5)
    orders = random_orders(rng, 400, 120)  # most pairs meet once: held-out ballots leave some with no weight
    held = np.sort(rng.choice(400, 60, replace=False))
    rest = np.setdiff1d(np.arange(400), held)
    count = lambda chosen: weak_order_partial(orders.select(chosen), 120, STATISTICS, dense)  # noqa: E731
    difference, counted = count(np.arange(400)) - count(held), count(rest)
    assert np.array_equal(difference.appearances, counted.appearances)
    assert sorted(difference.positions.groups) == sorted(counted.positions.groups)
    for key, units in counted.positions.groups.items():
        assert np.array_equal(difference.positions.groups[key], units)
    assert np.array_equal(difference.pairs.wins, counted.pairs.wins)
    assert np.array_equal(difference.pairs.ties, counted.pairs.ties)
    if not dense:  # a pair met only in held-out ballots leaves no cell behind
        assert np.array_equal(difference.pairs.keys, counted.pairs.keys)
    present = np.flatnonzero(counted.appearances)
    a, b = difference.pairs.finalize(present).dense(), counted.pairs.finalize(present).dense()
    assert np.array_equal(a.wins, b.wins) and np.array_equal(a.ties, b.ties)


def test_a_group_left_empty_is_dropped():
    whole = PositionCounter(3, {(2, 0, 1): np.array([2, 1, 0]), (3, 0, 3): np.array([1, 1, 1])})
    left = whole - PositionCounter(3, {(3, 0, 3): np.array([1, 1, 1])})
    assert list(left.groups) == [(2, 0, 1)]


@pytest.mark.parametrize("dense", [True, False])
def test_subtracting_what_was_not_counted_is_refused(dense):
    rng = np.random.default_rng(6)
    orders = random_orders(rng, 50, 12)
    first, second = (weak_order_partial(orders.select(np.arange(lo, lo + 25)), 12, STATISTICS, dense) for lo in (0, 25))
    with pytest.raises(ValueError, match="exceed|do not"):
        first - second


def test_a_histogram_is_not_subtracted():
    orders = random_orders(np.random.default_rng(7), 20, 8)
    whole = weak_order_partial(orders, 8, frozenset({"histogram"}), True)
    with pytest.raises(ValueError, match="histogram"):
        whole - weak_order_partial(orders.select(np.arange(5)), 8, frozenset({"histogram"}), True)


def test_an_extra_without_subtract_is_refused():
    whole = Partial(2, np.array([2, 2]), extra={"sequence": None})
    with pytest.raises(ValueError, match="sequence"):
        whole - Partial(2, np.array([1, 1]), extra={"sequence": None})
