import json

import pyarrow.parquet as pq
import pytest

from pipeline.backtest import BacktestConfig, backtest as library_backtest
from tests.conftest import SAMPLES


@pytest.mark.slow
def test_backtest_flow_on_f1(tmp_path, dask_cluster):
    from flows.backtest import backtest
    from pipeline.store import Store

    store = Store(tmp_path / "store")
    store.ingest([SAMPLES / "f1" / "races_2021_2023.csv"], "games")
    methods = ["approval:k=3", "copeland"]
    written = backtest(str(store.root), "games", methods, str(tmp_path / "out"), splits=4, test_size=6, seed=3,
                       reference="copeland", scheduler=dask_cluster.scheduler_address)
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert sorted(p.rsplit("/", 1)[1] for p in written) == sorted(run["outputs"] + ["index.html"])  # the report is not in run.json
    # The flow computes what the library computes in one process.
    library_backtest(store, BacktestConfig("games", tuple(methods), 4, 6, 3, reference="copeland"), tmp_path / "lib")
    assert pq.read_table(tmp_path / "out" / "results.parquet").equals(pq.read_table(tmp_path / "lib" / "results.parquet"))
