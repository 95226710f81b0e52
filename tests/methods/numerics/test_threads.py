"""The solver-heavy methods give the same bytes with one or two BLAS threads in the calling process,
in a Dask worker process, and with their fan-out on a cluster (methods pin BLAS to one thread)."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from pipeline.methods import run
from pipeline.methods.numerics.threads import one_blas_thread
from pipeline.stats import reduce_store
from pipeline.store import Store
from tests.conftest import SAMPLES

pytestmark = pytest.mark.slow

CROWD = ("battles", SAMPLES / "llmfao" / "crowd_battles.csv", ("m-elo:bootstrap=300", "am-elo", "maximal-lotteries"))
# Kemeny's default time limit (60 s) is this test's bound only on a quiet machine: at load 25 one of its four
# solves ran out; the claim here is equal bytes, not speed.
LIVEBENCH = ("scores", SAMPLES / "livebench" / "livebench_2024-08-31.csv", ("kemeny:time_limit=900", "nash-averaging", "deviation"))


@pytest.fixture(scope="module")
def statistics(tmp_path_factory):
    made = {}
    for kind, path, _ in (CROWD, LIVEBENCH):
        store = Store(tmp_path_factory.mktemp(kind) / "store")
        store.ingest([path], kind)
        made[kind] = reduce_store(store, kind, {"pairwise", "pairwise_per_game", "annotators", "game_data"} if kind == "battles"
                                  else {"pairwise", "pairwise_per_game", "game_data"})
    return made


def as_bytes(ratings) -> list[bytes]:
    return [ratings.agents.tobytes(), ratings.score.tobytes(), ratings.rank.tobytes(),
            *(np.asarray(ratings.extras[k]).tobytes() for k in sorted(ratings.extras))]


@pytest.mark.parametrize(("kind", "spec"), [(kind, spec) for kind, _, specs in (CROWD, LIVEBENCH) for spec in specs])
def test_same_bytes_with_one_or_two_blas_threads_and_in_a_worker(statistics, dask_client, kind, spec):
    stats = statistics[kind]
    with threadpool_limits(limits=1, user_api="blas"):
        one = as_bytes(run(spec, stats))
    with threadpool_limits(limits=2, user_api="blas"):
        two = as_bytes(run(spec, stats))
    in_worker = as_bytes(dask_client.submit(run, spec, stats, pure=False).result())
    fanned_out = as_bytes(run(spec, stats, client=dask_client))  # a method that fans out sends its chunks to the workers
    assert one == two == in_worker == fanned_out


def blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_one_blas_thread_inside_and_as_before_after_each_time():
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        assert before and set(before) == {2}
        for _ in range(3):  # the libraries found the first time are reused
            with one_blas_thread():
                assert blas_threads() == [1] * len(before)
            assert blas_threads() == before


PINNED_AFTER_SCIPY = """
import importlib.util, sys
import numpy
from threadpoolctl import threadpool_info
spec = importlib.util.spec_from_file_location("threads", sys.argv[1])  # alone: pipeline.methods would load scipy
threads = importlib.util.module_from_spec(spec)
spec.loader.exec_module(threads)
blas = lambda: [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
with threads.one_blas_thread():
    first = blas()
import scipy.linalg  # scipy's own OpenBLAS loads here
with threads.one_blas_thread():
    print(first, blas())
"""


def test_a_blas_loaded_after_the_first_use_is_pinned_too():
    import subprocess
    import sys

    import pipeline.methods.numerics.threads as threads

    shown = subprocess.run([sys.executable, "-c", PINNED_AFTER_SCIPY, threads.__file__], capture_output=True, text=True,
                           check=True).stdout
    first, then = shown.split("] [")
    assert first == "[1" and len(then.split(",")) > 1 and set(then.rstrip("]\n").split(", ")) == {"1"}, shown
