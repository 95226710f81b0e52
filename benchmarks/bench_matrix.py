"""The matrix (issue 33): every registered method on every real data set, for every kind it is read as.

For each data set of `benchmarks.datasets` (its first `--limit` units, or all of it), one `vase rate`
(`python -m flows.cli rate`) in a subprocess rates the converted file with every method that rates
its kind, default spec; a second does the same with `bootstrap=R` for the methods that take the
registry's bootstrap. One process per (data set, kind, variant) rather than per cell: under
today's load a process spends a minute starting Dask and ingesting before its first method, which
per cell would have been hours. Each cell is then judged from the run's `run.json`:

- `rated`: the spec's ratings were published; its wall time is the run's `rate <spec>` timing;
- `refused`: refused before any work (the budget: `registry.over_budget`), or refused by the method
  because the data give no estimate (an unconnected comparison graph...); its line is kept;
- `failed`: a solver that gave up (a `ConvergenceError`: not reached, not solved, HiGHS's status),
  an exception, or a process without a `run.json` (its line is kept);
- `over budget`: rated, but past `BUDGET_SECONDS`, or its CPU time past 4x its own cost model's estimate
  (`OVERRUN`; an estimate below `FLOOR_S` counts as that).

Each cell keeps the input's size (agents, pairs, tasks, ballots: what the cost models read) and the spec's CPU
time (`cpu <spec>` of run.json), so that `fit` can calibrate the models from the recorded cells: for each
method with a model, the median of measured CPU over estimate, by which its constant should be multiplied.

A run's CPU time and peak RSS (of the process and its children: `os.wait4`) go with each of its
cells. Writes `docs/matrix.md` (date, machine, load) and `docs/matrix.parquet`.

    python -m benchmarks.bench_matrix [--limit N] [--rounds R] [--timeout S] [--only NAME] [--methods a,b]
    python -m benchmarks.bench_matrix --update --only NAME --methods a,b   # those cells again, the others judged again
    python -m benchmarks.bench_matrix --fit        # the models' calibration from docs/matrix.parquet
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import polars as pl

from benchmarks.datasets import DATASETS, DataSet
from pipeline.board import input_size, rates
from pipeline.methods import REGISTRY, Spec
from pipeline.methods.registry import BUDGET_SECONDS, Cost, Size, estimate, needed_statistics
from pipeline.stats.extras import kind_statistics
from pipeline.stats.in_memory import statistics_of_records

DOCS = Path(__file__).resolve().parents[1] / "docs"
OVERRUN = 4.0  # a method past this multiple of its own estimate is over budget
FLOOR_S = 0.05  # estimates below this are taken as this: starting a method (checks, copies, labels) costs up to 0.03 s


@dataclass
class Cell:
    dataset: str
    kind: str
    spec: str
    outcome: str
    wall_s: float | None
    cpu_s: float | None
    estimate_s: float | None
    agents: int
    pairs: int
    tasks: int
    ballots: int
    members: int
    run_cpu_s: float
    run_peak_rss_mb: float
    line: str

    def size(self) -> Size:
        """The input size its estimate is of."""
        return Size(agents=self.agents, pairs=self.pairs, tasks=self.tasks, ballots=self.ballots, members=self.members,
                    kind=self.kind)


def specs_for(kind: str, rounds: int, methods: frozenset[str] | None = None) -> list[str]:
    """Every method (of `methods`, if given) that rates `kind`, its default spec, or with `bootstrap=rounds` where
    the registry bootstraps it."""
    names = sorted(name for name, m in REGISTRY.items() if rates(m, kind) and (methods is None or name in methods))
    if not rounds:
        return names
    return [f"{name}:bootstrap={rounds}" for name in names if REGISTRY[name].generic_parameters]


def size_of(path: Path, kind: str, specs: list[str]) -> Size:
    """The input size the cost models read, from the same file the run rates."""
    records = pl.read_csv(path, infer_schema_length=0).to_dicts()
    stats, _ = statistics_of_records(records, kind, needed_statistics(specs) & kind_statistics(kind))
    return input_size(stats)


def run_rate(path: Path, kind: str, specs: list[str], out: Path, timeout: float) -> tuple[int | None, float, float, float, str]:
    """`vase rate` in a subprocess: exit code (None when stopped at `timeout`), wall, CPU seconds and peak RSS (MB) of
    the process (`os.wait4`), and stderr's last line."""
    command = [sys.executable, "-m", "flows.cli", "rate", str(path), "--kind", kind, "--out", str(out)]
    for spec in specs:
        command += ["-m", spec]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    stopped = threading.Event()

    def stop() -> None:
        stopped.set()
        os.killpg(process.pid, signal.SIGTERM)

    timer = threading.Timer(timeout, stop)
    timer.start()
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    timer.cancel()
    wall = time.perf_counter() - start
    last = next((line for line in reversed(stderr.splitlines()) if line.strip()), "")
    code = None if stopped.is_set() else os.waitstatus_to_exitcode(status)
    return code, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, last


FAILURE_WORDS = ("Error:", "not reached", "stopped", "converge", "HiGHS", "not solved")  # run.json keeps only the line


def outcome_of_error(line: str) -> str:
    """`refused` for the budget's refusal and a method's own refusal of the data (no estimate exists: an
    unconnected comparison graph, too few agents), `failed` for a solver that gave up or an exception."""
    return "failed" if "over the budget" not in line and any(word in line for word in FAILURE_WORDS) else "refused"


def past_budget(wall: float | None, used: float | None, cost: Cost | None) -> bool:
    """A rated spec past the budget, or whose CPU time is past `OVERRUN` times its model's estimate."""
    return wall is not None and (wall > BUDGET_SECONDS or (cost is not None and used > OVERRUN * max(cost.seconds, FLOOR_S)))


def rejudged(cell: Cell) -> Cell:
    """A recorded cell that ran judged again against the cost models as they are now (its estimate and whether it
    is over budget): the measurement is the same, a changed model is judged on it. Refusals and failures stand."""
    if cell.outcome not in ("rated", "over budget"):
        return cell
    cost = estimate(cell.spec, cell.size())
    return replace(cell, estimate_s=None if cost is None else round(cost.seconds, 3),
                   outcome="over budget" if past_budget(cell.wall_s, cell.cpu_s, cost) else "rated")


def judge(data: DataSet, specs: list[str], size: Size, out: Path, code: int | None, cpu: float, rss: float,
          last: str, timeout: float) -> list[Cell]:
    run = json.loads((out / "run.json").read_text()) if (out / "run.json").exists() else None
    cells = []
    shape = {field: n for field, n in asdict(size).items() if field != "kind"}  # the cell has its kind
    for text in specs:
        spec = Spec.parse(text)
        cost = estimate(spec, size)
        expected = None if cost is None else round(cost.seconds, 3)
        if run is None:
            outcome = "over budget" if code is None else "failed"
            cells.append(Cell(data.name, data.kind, str(spec), outcome, None, None, expected, **shape, run_cpu_s=cpu,
                              run_peak_rss_mb=rss, line=f"no run.json after {timeout:.0f} s" if code is None else last))
            continue
        error = run["errors"].get(spec.canonical)
        wall, used = (run["timings_s"].get(f"{what} {spec.canonical}") for what in ("rate", "cpu"))
        if error is not None:
            outcome = outcome_of_error(error)
        elif past_budget(wall, used, cost):
            outcome = "over budget"
        else:
            outcome = "rated"
        cells.append(Cell(data.name, data.kind, str(spec), outcome, wall, used, expected, **shape, run_cpu_s=cpu,
                          run_peak_rss_mb=rss, line=error or ""))
    return cells


def fit(table: pl.DataFrame, least_s: float = 0.2) -> pl.DataFrame:
    """Per method with a cost model, from the rated cells whose CPU time is at least `least_s` (below it,
    start-up dominates): the cells, and the median and the spread of CPU over the model's estimate for the
    cell's recorded size (the model as it is now, so a changed model is judged on the same cells). The median
    is the factor by which the model's constant should be multiplied; the largest ratio over the median must
    stay below `OVERRUN` for the model to pass the matrix's check."""
    rows = []
    for row in table.filter((pl.col("outcome") == "rated") & (pl.col("cpu_s") >= least_s)).iter_rows(named=True):
        cell = Cell(**row)
        if (cost := estimate(cell.spec, cell.size())) is not None and cost.seconds > 0:
            rows.append({"method": cell.spec.split(":")[0], "ratio": cell.cpu_s / cost.seconds})
    ratios = pl.DataFrame(rows, schema={"method": pl.String, "ratio": pl.Float64})
    return ratios.group_by("method").agg(cells=pl.len(), median=pl.col("ratio").median(), low=pl.col("ratio").min(),
                                         high=pl.col("ratio").max()).sort("method")


def matrix(limit: int | None, rounds: int, timeout: float, only: str | None = None,
           done: Callable[[list[Cell]], None] | None = None, methods: frozenset[str] | None = None) -> list[Cell]:
    """The cells of every data set (whose name contains `only`), of every method (of `methods`, if given); `done`
    sees the cells so far after each run."""
    cells: list[Cell] = []
    with tempfile.TemporaryDirectory() as folder:
        for data in DATASETS:
            if only and only not in data.name:
                continue
            path = data.write(Path(folder), limit)
            for variant in sorted({0, rounds}):
                specs = specs_for(data.kind, variant, methods)
                if not specs:
                    continue
                out = Path(folder) / f"{data.name}.{data.kind}.{variant}"
                size = size_of(path, data.kind, specs)
                code, wall, cpu, rss, last = run_rate(path, data.kind, specs, out, timeout)
                cells += judge(data, specs, size, out, code, cpu, rss, last, timeout)
                print(f"{data.name} {data.kind} bootstrap={variant}: {wall:.0f} s, exit {code}", file=sys.stderr, flush=True)
                shutil.rmtree(out, ignore_errors=True)
                if done is not None:
                    done(cells)
    return cells


def merged(earlier: list[Cell], fresh: list[Cell]) -> list[Cell]:
    """`earlier` with each cell of `fresh` in the place of the one of its data set, kind and spec, the others
    `rejudged`; fresh cells of no earlier one at the end."""
    def key(cell: Cell) -> tuple[str, str, str]:
        return cell.dataset, cell.kind, cell.spec

    placed = {key(c): c for c in fresh}
    kept = [placed.pop(key(c), None) or rejudged(c) for c in earlier]
    return kept + [c for c in fresh if key(c) in placed]


def read_cells(folder: Path) -> list[Cell]:
    return [Cell(**row) for row in pl.read_parquet(folder / "matrix.parquet").iter_rows(named=True)]


def write(cells: list[Cell], limit: int | None, rounds: int, started: float, folder: Path = DOCS, rerun: int = 0) -> None:
    table = pl.DataFrame([asdict(c) for c in cells])
    table.write_parquet(folder / "matrix.parquet")
    counts = table.group_by("outcome").len().sort("outcome")
    load = os.getloadavg()
    lines = [
        "# The matrix: every method on every real data set",
        "",
        f"Generated by `benchmarks/bench_matrix.py` (`make matrix`) on {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, "
        f"{platform.node()} ({os.cpu_count()} cores), load {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}, "
        f"in {time.perf_counter() - started:.0f} s. Data: {'the first ' + format(limit, ',') + ' units of each data set' if limit else 'every row'}; "
        + (f"bootstrap variant with {rounds} rounds." if rounds else "no bootstrap variant (--rounds 0).") + f" Wall and CPU s are each spec's (run.json's `rate <spec>` and "
        "`cpu <spec>`; the estimate is of the CPU s, `--fit` compares them); run CPU and peak RSS are the whole `vase rate` run's "
        "(every method of the data set), not one cell's. Outcomes: "
        + ", ".join(f"{row['outcome']} {row['len']}" for row in counts.iter_rows(named=True)) + "."
        + (f" Of these, {rerun} cells were re-run at that date (`--update`), the others kept from the run before." if rerun else ""),
        "",
        "| data set | kind | agents | spec | outcome | wall s | CPU s | estimate s | run CPU s | run peak RSS MB | line |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    seconds = lambda value: "" if value is None else f"{value:.2f}"  # noqa: E731
    for c in cells:
        lines.append(f"| {c.dataset} | {c.kind} | {c.agents:,} | `{c.spec}` | {c.outcome} | {seconds(c.wall_s)} | {seconds(c.cpu_s)} | "
                     f"{seconds(c.estimate_s)} | {c.run_cpu_s:.0f} | {c.run_peak_rss_mb:.0f} | {c.line.replace('|', '/')} |")
    (folder / "matrix.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="the first N units (matches, races, tasks) of each data set")
    parser.add_argument("--rounds", type=int, default=20, help="bootstrap rounds of the bootstrap variant (0: none)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds for one `vase rate` run")
    parser.add_argument("--only", default=None, help="data sets whose name contains this")
    parser.add_argument("--methods", default=None, help="only these methods (names, comma-separated)")
    parser.add_argument("--out", type=Path, default=DOCS, help="the folder of matrix.md and matrix.parquet")
    parser.add_argument("--update", action="store_true", help="re-run the cells selected (--only, --methods) in place of theirs "
                        "in OUT/matrix.parquet, keeping the others (same --limit and --rounds as that run)")
    parser.add_argument("--fit", action="store_true", help="print the cost models' calibration from OUT/matrix.parquet, run nothing")
    args = parser.parse_args()
    if args.fit:
        with pl.Config(tbl_rows=100):
            print(fit(pl.read_parquet(args.out / "matrix.parquet")))
        return
    started = time.perf_counter()
    methods = None if args.methods is None else frozenset(args.methods.split(","))
    earlier = read_cells(args.out) if args.update else []
    matrix(args.limit, args.rounds, args.timeout, args.only, methods=methods,
           done=lambda cells: write(merged(earlier, cells), args.limit, args.rounds, started, args.out, len(cells) if earlier else 0))


if __name__ == "__main__":
    main()
