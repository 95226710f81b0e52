"""Per-method summary of a backtest, paired comparison with a reference, plot and outputs.

[VasE] section 4.3, figure 5: the mean over splits of each method's average error per test game,
with a 95% interval, and which methods are significantly better or worse than Elo. Here:
- the interval is Student's t over splits: mean +- t(0.975, S - 1) * sd / sqrt(S);
- the comparison is paired by split: d_s = error(method, s) - error(reference, s), with the same t
  interval on the mean of d and a paired t-test p-value; a method is `better` when the whole
  interval of d is below 0, `worse` when it is above 0, else `not significant`.
Splits of one log overlap (random splits share most training games), so these intervals describe
the spread over splits, as in the paper, not a sampling distribution over independent logs.
The reference is a parameter (default `elo`); without it in the run, the comparison is left empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from scipy import stats as st

from pipeline.report.publish import RunRecord
from pipeline.store.files import atomic_write, write_json, write_parquet, write_text

METRICS = ("kendall", "kendall_normalised", "log_loss", "brier", "auc")
PREDICTIVE = ("log_loss", "brier", "auc")


def t_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and Student-t interval of the mean (NaN bounds for fewer than two values)."""
    values = np.asarray(values, dtype=np.float64)
    mean = float(values.mean()) if len(values) else float("nan")
    if len(values) < 2:
        return mean, float("nan"), float("nan")
    half = float(st.t.ppf(0.5 + level / 2, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values)))
    return mean, mean - half, mean + half


def _column(results: pa.Table, spec: str, name: str) -> np.ndarray:
    rows = results.filter(pc.equal(results.column("method"), spec)).sort_by("split")
    return np.array([np.nan if v is None else v for v in rows.column(name).to_pylist()], dtype=np.float64)


def summarise(results: pa.Table, specs: Sequence[str], reference: str = "elo", metric: str = "kendall") -> pa.Table:
    """One row per method: mean error with its interval, comparison with `reference`, predictive means."""
    named = set(results.column("method").to_pylist())
    if unknown := [spec for spec in specs if spec not in named]:
        raise ValueError(f"no results for {', '.join(unknown)}; the results name {', '.join(sorted(named))}")
    base = _column(results, reference, metric) if reference in specs else None
    rows = []
    for spec in specs:
        err = _column(results, spec, metric)  # NaN on the splits the method did not rate
        mean, low, high = t_interval(err[np.isfinite(err)])
        row = {"method": spec, "splits": int(np.isfinite(err).sum()), "mean": mean, "ci_low": low, "ci_high": high,
               "unseen_pairs": float(np.nanmean(_column(results, spec, "unseen_pairs"))) if np.isfinite(err).any() else None,
               "diff_mean": None, "diff_low": None, "diff_high": None, "p_value": None, "verdict": None}
        if base is not None and spec == reference:
            row["verdict"] = "reference"
        elif base is not None:
            d = (err - base)[np.isfinite(err) & np.isfinite(base)]  # the splits both rated
            err_both, base_both = err[np.isfinite(err) & np.isfinite(base)], base[np.isfinite(err) & np.isfinite(base)]
            row["diff_mean"], row["diff_low"], row["diff_high"] = t_interval(d)
            p = st.ttest_rel(err_both, base_both).pvalue if len(d) > 1 and np.any(d != d[0]) else float("nan")
            row["p_value"] = float(p)
            significant = len(d) > 1 and np.isfinite(row["diff_high"])
            row["verdict"] = ("better" if significant and row["diff_high"] < 0 else
                              "worse" if significant and row["diff_low"] > 0 else "not significant")
        for name in PREDICTIVE:
            values = _column(results, spec, name)
            row[name] = float(np.mean(values)) if len(values) and not np.all(np.isnan(values)) else None
        rows.append(row)
    return pa.Table.from_pylist(rows)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return "" if not np.isfinite(value) else f"{value:.4g}"
    return "" if value is None else str(value)


def summary_markdown(summary: pa.Table, title: str, reference: str, metric: str,
                     failures: Sequence[tuple[str, int, str]] = ()) -> str:
    columns = ["method", "splits", "mean", "ci_low", "ci_high", "diff_mean", "diff_low", "diff_high", "p_value", "verdict",
               "unseen_pairs", *PREDICTIVE]
    lines = [f"# {title}", "", f"Error: {metric} (Kendall-tau distance per test game, averaged over games), mean over splits "
             f"with a 95% t interval; diff = method - {reference}, paired by split.", "",
             "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in summary.to_pylist():
        lines.append("| " + " | ".join(_cell(row.get(c)) for c in columns) + " |")
    if failures:
        lines += ["", "Not rated (these splits are left out of the method's mean and of its paired comparison):", ""]
        lines += [f"- {method}, split {split}: {reason}" for method, split, reason in failures]
    return "\n".join(lines) + "\n"


def failed_splits(results: pa.Table) -> list[tuple[str, int, str]]:
    """(method, split, reason) for every split a method did not rate."""
    if "error" not in results.column_names:
        return []
    return [(r["method"], r["split"], r["error"]) for r in results.to_pylist() if r["error"] is not None]


def plot_summary(summary: pa.Table, path: Path, title: str, metric: str) -> None:
    """Mean error per method with its 95% interval (the shape of [VasE] figure 5)."""
    from matplotlib.figure import Figure

    rows = summary.to_pylist()
    mean = np.array([r["mean"] for r in rows], dtype=np.float64)
    low = np.array([r["ci_low"] for r in rows], dtype=np.float64)
    high = np.array([r["ci_high"] for r in rows], dtype=np.float64)
    err = np.nan_to_num(np.vstack([mean - low, high - mean]))
    colours = {"better": "tab:green", "worse": "tab:red", "reference": "black"}
    fig = Figure(figsize=(max(4.0, 1.1 * len(rows) + 1.5), 4.0), dpi=100)
    ax = fig.add_subplot()
    x = np.arange(len(rows))
    ax.bar(x, mean, color=[colours.get(r["verdict"], "tab:blue") for r in rows], alpha=0.7)
    ax.errorbar(x, mean, yerr=err, fmt="none", ecolor="black", capsize=4)
    ax.set_xticks(x, [r["method"] for r in rows], rotation=30, ha="right")
    finite = np.r_[low[np.isfinite(low)], mean[np.isfinite(mean)]]
    if len(finite):
        ax.set_ylim(max(0.0, float(finite.min()) * 0.95), float(np.nanmax(np.r_[high[np.isfinite(high)], mean])) * 1.03)
    ax.set_ylabel(f"mean {metric} per test game")
    ax.set_title(title)
    # The canvas grows to fit the ticks: tight_layout cannot fit a long canonical spec (m-Elo's) into a
    # fixed figure, and said so in a warning.
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", bbox_inches="tight", metadata={"Software": None}))


def write_backtest(out: str | Path, results: pa.Table, summary: pa.Table, record: RunRecord, title: str,
                   reference: str, metric: str = "kendall") -> list[Path]:
    """results.parquet, summary.parquet, summary.md, errors.png and run.json listing them."""
    out = Path(out)
    written = {
        "results.parquet": lambda p: write_parquet(p, results),
        "summary.parquet": lambda p: write_parquet(p, summary),
        "summary.md": lambda p: write_text(p, summary_markdown(summary, title, reference, metric, failed_splits(results))),
        "errors.png": lambda p: plot_summary(summary, p, title, metric),
    }
    for name, write in written.items():
        write(out / name)
    record.outputs = sorted(set(record.outputs) | set(written) | {"run.json"})
    write_json(out / "run.json", record.to_json())
    return [out / name for name in record.outputs]
