from typer.testing import CliRunner

from pipeline.cli import app
from tests.conftest import SAMPLES


def test_vase_backtest_on_a_scheduler(tmp_path, dask_cluster):
    runner = CliRunner()
    store = str(tmp_path / "store")
    assert runner.invoke(app, ["ingest", str(SAMPLES / "f1" / "races_2021_2023.csv"), "--kind", "games", "--store", store]).exit_code == 0
    out = tmp_path / "out"
    result = runner.invoke(app, ["backtest", "--store", store, "--kind", "games", "--method", "borda", "--method", "copeland",
                                 "--splits", "3", "--test-size", "5", "--seed", "1", "--reference", "borda", "--out", str(out),
                                 "--scheduler", dask_cluster.scheduler_address])
    assert result.exit_code == 0, result.output
    assert "copeland" in result.output and (out / "errors.png").exists()
    bad = runner.invoke(app, ["backtest", "--store", store, "--kind", "games", "--method", "borda", "--unseen", "drop",
                              "--out", str(out)])
    assert bad.exit_code != 0 and "policy" in bad.output
