"""Seeded fan-out of independent random rounds (bootstrap fits, shuffled Elo) on Dask.

Rounds are cut into chunks of a fixed size and each chunk gets its own child of
`np.random.SeedSequence(seed)`. The chunks run on the distributed Client given (the registry
passes the caller's, see `pipeline.methods.registry.run`), or on local threads without one;
never on whatever client happens to be active in the process. The chunk size, not the number of
workers, fixes which random numbers each round sees, and every chunk runs with one BLAS thread,
so results do not depend on the cluster.
"""

from __future__ import annotations

from collections.abc import Callable

import dask.threaded  # passed as the scheduler: its name, "threads", would make dask import distributed (~1 s)
import numpy as np

from pipeline.methods.numerics.threads import one_blas_thread
from pipeline.progress import local_tasks_advance, stage

CHUNK = 50
# Rounds of one fan-out at most: every round's row is kept for the percentiles, and past this a
# 95% percentile's Monte Carlo error is below 0.3% of the spread (a typo of 1e11 rounds refused
# at once instead of memory growing until the process is killed).
MAX_ROUNDS = 100_000


def fan_out(work: Callable[[object, int, np.random.Generator], np.ndarray], payload: object, rounds: int, seed: int,
            chunk: int = CHUNK, *, client=None) -> np.ndarray:
    """`work(payload, size, rng)` returns `size` rows; the rows of all rounds, stacked in order.

    On `client` (a `distributed.Client`) when given, else on local threads."""
    if not 1 <= rounds <= MAX_ROUNDS:
        raise ValueError(f"rounds must be between 1 and {MAX_ROUNDS:,}, not {rounds:,}")
    sizes = [min(chunk, rounds - start) for start in range(0, rounds, chunk)]
    children = np.random.SeedSequence(seed).spawn(len(sizes))
    with stage("rounds", rounds) as advance:
        if client is not None:
            from distributed import as_completed

            shared = client.scatter(payload, hash=False)  # sent once, not once per chunk
            futures = [client.submit(_run, work, shared, size, child, pure=False) for size, child in zip(sizes, children)]
            position = {future.key: k for k, future in enumerate(futures)}
            chunks: list[np.ndarray | None] = [None] * len(futures)
            # each chunk's rows fetched as it ends, while the others compute (fetched at the end, 1000 rounds of
            # 53k agents, 850 MB, added 10-15 s of wall time after the last chunk)
            for future, rows in as_completed(futures, with_results=True):
                chunks[position[future.key]] = rows
                advance(sizes[position[future.key]])
            return np.concatenate(chunks, axis=0)  # in chunk order, whatever order they ended in
        shared = dask.delayed(payload, traverse=False)
        tasks = [dask.delayed(_run)(work, shared, size, child) for size, child in zip(sizes, children)]
        with local_tasks_advance(advance, {task.key: size for task, size in zip(tasks, sizes)}):
            return np.concatenate(dask.compute(*tasks, scheduler=dask.threaded.get), axis=0)


def _run(work: Callable, payload: object, size: int, child: np.random.SeedSequence) -> np.ndarray:
    with one_blas_thread():  # the chunk may run on any worker: same bits everywhere
        return work(payload, size, np.random.default_rng(child))
