"""Fan-out of seeded rounds: chunks and seeds, and the bound on the rounds."""

from __future__ import annotations

import time

import numpy as np
import pytest

from pipeline.methods import run
from pipeline.methods.numerics.fanout import CHUNK, MAX_ROUNDS, fan_out


def draws(payload: float, size: int, rng: np.random.Generator) -> np.ndarray:
    return payload + rng.random((size, 1))


def test_rounds_are_the_same_whatever_the_chunks_run_on():
    rounds = 2 * CHUNK + 7
    rows = fan_out(draws, 1.0, rounds, seed=3)
    assert rows.shape == (rounds, 1) and np.all((rows >= 1) & (rows < 2))
    assert fan_out(draws, 1.0, rounds, seed=3).tobytes() == rows.tobytes()
    assert fan_out(draws, 1.0, CHUNK, seed=3).tobytes() == rows[:CHUNK].tobytes()  # chunk by chunk, not by total


@pytest.mark.parametrize("rounds", [0, MAX_ROUNDS + 1])
def test_rounds_out_of_bounds_are_refused_before_any_round(rounds):
    with pytest.raises(ValueError, match=f"rounds must be between 1 and {MAX_ROUNDS:,}"):
        fan_out(draws, 1.0, rounds, seed=0)


def test_a_bootstrap_past_the_bound_is_refused_before_its_rounds(pentathlon):
    # Every round's row is kept: a typo of 1e11 rounds used to grow memory until the process was killed.
    # The spec is refused where it is parsed, before any work.
    with pytest.raises(ValueError, match="m-elo: parameter bootstrap=100001 must be between 0 and 100,000"):
        run(f"m-elo:bootstrap={MAX_ROUNDS + 1}", pentathlon[0])
    with pytest.raises(ValueError, match="borda: parameter bootstrap=100001 must be between 0 and 100,000"):
        run(f"borda:bootstrap={MAX_ROUNDS + 1}", pentathlon[0])


def slow_draws(payload: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """`draws`, after a pause set by the chunk's first uniform: the chunks end in another order than they began."""
    rows = draws(payload, size, rng)
    time.sleep(0.4 * (1.0 - rows[0, 0] + payload))
    return rows


def test_chunks_that_end_out_of_order_come_back_in_chunk_order_on_a_cluster():
    from distributed import Client, LocalCluster

    rounds = 6 * CHUNK
    local = fan_out(slow_draws, 1.0, rounds, seed=4)
    pauses = 1.0 - local[::CHUNK, 0] + 1.0
    assert not np.all(np.diff(pauses) >= 0)  # a later chunk ends first
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        assert fan_out(slow_draws, 1.0, rounds, seed=4, client=client).tobytes() == local.tobytes()
