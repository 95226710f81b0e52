"""The solver-heavy methods give the same bytes with one or two BLAS threads in the calling process,
in a Dask worker process, and with their fan-out on a cluster (methods pin BLAS to one thread)."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from pipeline.methods import run
from pipeline.stats import reduce_store
from pipeline.store import Store
from tests.conftest import SAMPLES

pytestmark = pytest.mark.slow

CROWD = ("battles", SAMPLES / "llmfao" / "crowd_battles.csv", ("m-elo:bootstrap=300", "am-elo", "maximal-lotteries"))
LIVEBENCH = ("scores", SAMPLES / "livebench" / "livebench_2024-08-31.csv", ("kemeny", "nash-averaging", "deviation"))


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
