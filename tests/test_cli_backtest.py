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


def test_vase_backtest_summary_is_whole_at_80_columns_and_a_test_size_too_big_stops_before_work(tmp_path):
    runner = CliRunner()
    store = str(tmp_path / "store")
    assert runner.invoke(app, ["ingest", str(SAMPLES / "f1" / "races_2021_2023.csv"), "--kind", "games", "--store", store]).exit_code == 0
    args = ["backtest", "--store", store, "--kind", "games", "-m", "borda", "-m", "approval:k=3", "--splits", "3", "--seed", "1",
            "--reference", "borda", "--workers", "0"]
    too_big = runner.invoke(app, [*args, "--test-size", "100000", "--out", str(tmp_path / "big")])
    assert too_big.exit_code == 2 and "test size must be between 1 and" in too_big.output and "--test-size" in too_big.output
    assert not (tmp_path / "big").exists()
    negative_seed = runner.invoke(app, [*args, "--seed", "-1", "--test-size", "5", "--out", str(tmp_path / "seed")])
    assert negative_seed.exit_code == 2 and "--seed" in negative_seed.output  # was numpy's words after loading the log
    wrong_kind = runner.invoke(app, [*args, "-m", "am-elo", "--test-size", "5", "--out", str(tmp_path / "kind")])
    assert wrong_kind.exit_code == 2 and "am-elo does not rate games files" in " ".join(wrong_kind.output.split())
    out = tmp_path / "out"
    result = runner.invoke(app, [*args, "--test-size", "5", "--out", str(out)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "…" not in result.output and "approval" in result.output and "reference" in result.output
    assert result.output.splitlines()[-1] == f"report: {out.resolve() / 'index.html'}"


def test_vase_backtest_without_its_reference_among_the_methods_says_so(tmp_path):
    # The default reference, elo, cannot rate scores: the table was titled "diff = method - elo:..." over
    # empty columns, and the report's header read "reference elo".
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["backtest", "--store", f1_store(tmp_path), "--kind", "games", "-m", "borda", "-m", "copeland",
                                      "--splits", "3", "--test-size", "5", "--seed", "1", "--workers", "0", "--out", str(out)],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "no reference: elo:games=pairs,initial=1000.0,k=4.0,scale=400.0,shuffles=0 is not among the methods" in result.output
    assert "diff = method -" not in result.output
    page = (out / "index.html").read_text()
    assert "none (elo is not among the methods)" in page


def f1_store(tmp_path) -> str:
    store = str(tmp_path / "store")
    assert CliRunner().invoke(app, ["ingest", str(SAMPLES / "f1" / "races_2021_2023.csv"), "--kind", "games", "--store", store]).exit_code == 0
    return store


def test_vase_backtest_refuses_more_splits_than_it_can_hold_before_any_work(tmp_path):
    args = ["backtest", "--store", f1_store(tmp_path), "--kind", "games", "-m", "borda", "--workers", "0", "--out", str(tmp_path / "out")]
    huge = CliRunner().invoke(app, [*args, "--splits", str(10**9), "--test-size", "5"])  # grew memory until MemoryError
    assert huge.exit_code == 2 and "splits must be between 1 and 1,000" in " ".join(huge.output.split()), huge.output
    assert not (tmp_path / "out").exists()


def test_vase_backtest_refuses_a_window_that_is_not_a_span_of_time_before_any_work(tmp_path):
    args = ["backtest", "--store", f1_store(tmp_path), "--kind", "games", "-m", "borda", "--workers", "0", "--out", str(tmp_path / "out"),
            "--split", "temporal", "--splits", "2"]
    for days in ("inf", "-inf", "nan", "1e300"):  # inf was an OverflowError (exit 1) after loading the log
        result = CliRunner().invoke(app, [*args, "--window-days", days])
        assert result.exit_code == 2 and "window_days" in result.output, (days, result.output)
    assert not (tmp_path / "out").exists()


def test_vase_backtest_on_a_folder_that_is_not_a_store_or_holds_no_logs_of_the_kind_is_one_line(tmp_path):
    # Both were "ValueError: the store at ... holds no games (--debug shows the traceback)" with exit 1.
    (tmp_path / "empty").mkdir()
    args = ["backtest", "--kind", "games", "-m", "borda", "--workers", "0", "--out", str(tmp_path / "out")]
    not_a_store = CliRunner().invoke(app, [*args, "--store", str(tmp_path / "empty")])
    assert not_a_store.exit_code == 2 and not_a_store.output == f"error: {tmp_path / 'empty'} is not a store (no manifest.json); ingest logs into it first\n"
    store = f1_store(tmp_path)
    other_kind = CliRunner().invoke(app, [*args, "--store", store, "--kind", "battles", "-m", "elo"])
    assert other_kind.exit_code == 1 and other_kind.output == f"error: the store at {store} holds no battles\n", other_kind.output
    assert not (tmp_path / "out").exists()
