"""Fan-out of seeded rounds: chunks and seeds, and the bound on the rounds."""

from __future__ import annotations

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
