import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

from pipeline.backtest.evaluate import RESULT_SCHEMA
from pipeline.backtest.summary import plot_summary, summarise, t_interval, write_backtest
from pipeline.report.publish import RunRecord


def _results(errors: dict[str, list[float]]) -> pa.Table:
    rows = [{"split": s, "label": "", "method": m, "seed": 0, "train_units": 9, "test_units": 1, "rated_agents": 3,
             "test_pairs": 21, "unseen_pairs": 2, "kendall": e, "kendall_normalised": e / 21,
             "log_loss": None, "brier": None, "auc": None}
            for m, values in errors.items() for s, e in enumerate(values)]
    return pa.Table.from_pylist(rows, schema=RESULT_SCHEMA)


def test_t_interval_matches_scipy():
    x = np.array([3.0, 4.0, 6.0, 5.5, 4.2])
    mean, low, high = t_interval(x)
    ref = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    assert (low, high) == pytest.approx(ref) and mean == pytest.approx(x.mean())
    assert np.isnan(t_interval(np.array([1.0]))[1])


def test_paired_verdicts_against_the_reference():
    base = [8.0, 8.5, 7.9, 8.2, 8.1]
    results = _results({
        "elo": base,
        "copeland": [b - 0.5 + 0.01 * k for k, b in enumerate(base)],  # always about 0.5 lower: better
        "borda": [b + 0.4 + 0.02 * k for k, b in enumerate(base)],  # always higher: worse
        "plurality": [b + d for b, d in zip(base, [0.3, -0.3, 0.2, -0.25, 0.05])],  # either way
    })
    summary = {r["method"]: r for r in summarise(results, ["elo", "copeland", "borda", "plurality"], "elo").to_pylist()}
    assert [summary[m]["verdict"] for m in ("elo", "copeland", "borda", "plurality")] == ["reference", "better", "worse", "not significant"]
    assert summary["copeland"]["diff_mean"] == pytest.approx(-0.48)
    assert summary["copeland"]["p_value"] == pytest.approx(stats.ttest_rel(results.column("kendall").to_numpy()[5:10], base).pvalue)
    no_ref = summarise(results, ["copeland", "borda"], "elo").to_pylist()
    assert all(r["verdict"] is None and r["diff_mean"] is None for r in no_ref)


def test_outputs_are_listed_in_run_json(tmp_path):
    results = _results({"borda": [8.0, 8.4, 8.1], "copeland": [7.0, 7.3, 7.2]})
    summary = summarise(results, ["borda", "copeland"], "borda")
    record = RunRecord("games", ["borda", "copeland"], "store", [])
    written = write_backtest(tmp_path, results, summary, record, "test", "borda")
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["outputs"] == ["errors.png", "results.parquet", "run.json", "summary.md", "summary.parquet"]
    assert sorted(p.name for p in written) == run["outputs"]
    assert pq.read_table(tmp_path / "results.parquet").schema.equals(RESULT_SCHEMA)
    assert {"method", "mean", "ci_low", "ci_high", "diff_mean", "verdict"} <= set(pq.read_schema(tmp_path / "summary.parquet").names)
    assert (tmp_path / "errors.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| copeland | 3 |" in (tmp_path / "summary.md").read_text()


def test_a_method_the_results_do_not_name_is_refused_in_one_line():
    results = pa.table({"split": [0, 1], "method": ["elo:k=4", "elo:k=4"], "kendall": [0.2, 0.3], "unseen_pairs": [0.0, 0.0]})
    with pytest.raises(ValueError, match=r"^no results for elo; the results name elo:k=4$"):
        summarise(results, ["elo"], "elo")


def test_the_error_plot_fits_long_method_names_without_a_matplotlib_warning(tmp_path):
    # m-Elo's canonical spelling (8 parameters) under the rotated ticks: matplotlib printed "Tight layout
    # not applied" above `vase backtest`'s table on the Arena-Bench score table.
    import warnings

    m_elo = "m-elo:anchor=1000.0,bootstrap=0,games=pairs,max_iter=100,prior=0.0,scale=400.0,ties=half,tol=1e-07"
    results = _results({"borda": [8.0, 8.4, 8.1], m_elo: [7.0, 7.3, 7.2]})
    summary = summarise(results, ["borda", m_elo], "borda")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plot_summary(summary, tmp_path / "errors.png", "backtest: scores, random splits", "kendall")
    assert (tmp_path / "errors.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_method_that_failed_on_one_split_is_paired_on_the_splits_both_rated():
    # Issue 33: one failure stopped the backtest (exit 1). Now its row carries the reason and null metrics.
    from pipeline.backtest.evaluate import RESULT_SCHEMA
    from pipeline.backtest.summary import failed_splits, summarise, summary_markdown

    reference = [0.30, 0.20, 0.25, 0.35]
    other = [0.10, None, 0.15, 0.20]  # did not rate split 1
    rows = [{"split": s, "label": f"s{s}", "method": m, "seed": 0, "train_units": 9, "test_units": 3, "unseen_pairs": 0,
             "kendall": v, "error": None if v is not None else "kemeny: the kemeny order MIP was not solved within time_limit"}
            for m, values in (("elo", reference), ("kemeny", other)) for s, v in enumerate(values)]
    results = pa.Table.from_pylist(rows, schema=RESULT_SCHEMA)
    summary = {r["method"]: r for r in summarise(results, ["elo", "kemeny"]).to_pylist()}
    assert summary["kemeny"]["splits"] == 3 and summary["elo"]["splits"] == 4
    assert summary["kemeny"]["mean"] == pytest.approx(0.15)
    # paired on splits 0, 2, 3 only: differences -0.20, -0.10, -0.15
    assert summary["kemeny"]["diff_mean"] == pytest.approx(-0.15)
    assert failed_splits(results) == [("kemeny", 1, "kemeny: the kemeny order MIP was not solved within time_limit")]
    text = summary_markdown(summarise(results, ["elo", "kemeny"]), "t", "elo", "kendall", failed_splits(results))
    assert "- kemeny, split 1: kemeny: the kemeny order MIP was not solved within time_limit" in text
