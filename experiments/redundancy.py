"""The redundancy experiment of [GTLLM] section 4.2 on a score log from data-samples.

Ingests the log into a temporary store, adds growing numbers of copies of tasks adversarial to
the top agent (`pipeline.backtest.redundancy`), rates every augmented table with each method, and
writes `redundancy.csv` (rank and score per method, copies and agent), `redundancy.png` (ranks
against copies, one panel per method) and `redundancy.json` (the target's rank before and after,
the largest rank change of any agent, seconds per method).

Run: python -m experiments.redundancy [--source CSV] [--copies 0,1,2,4,8,16,32] [--out experiments/results]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

from pipeline import board as boards  # noqa: E402
from pipeline.backtest.redundancy import SPECS, rank_movement, redundancy  # noqa: E402
from pipeline.store import Store  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "data-samples" / "livebench" / "livebench_2024-08-31.csv"


def plot(frame: pl.DataFrame, path: Path, top: int = 8) -> None:
    """Rank against copies per method: the target in red, the other initial top agents in grey."""
    specs = list(dict.fromkeys(frame["method"].to_list()))
    fig, axes = plt.subplots(1, len(specs), figsize=(3.2 * len(specs), 4.2), sharey=True)
    start = frame.filter(pl.col("copies") == frame["copies"].min())
    for ax, spec in zip(axes, specs):
        leaders = start.filter(pl.col("method") == spec).sort("rank").head(top)["name"].to_list()
        target = frame.filter(pl.col("target"))["name"][0]
        for name in dict.fromkeys(leaders + [target]):
            rows = frame.filter((pl.col("method") == spec) & (pl.col("name") == name)).sort("copies")
            is_target = name == target
            ax.plot(rows["copies"], rows["rank"], marker="o", ms=3, color="tab:red" if is_target else "0.6",
                    lw=2 if is_target else 1, label=name if is_target else None, zorder=3 if is_target else 2)
        ax.set_title(spec, fontsize=9)
        ax.set_xscale("symlog", linthresh=1)
        ax.set_xlabel("adversarial copies")
    axes[0].invert_yaxis()
    axes[0].set_ylabel("rank (1 = best)")
    axes[0].legend(loc="lower left", fontsize=7)
    fig.suptitle(f"Copies of tasks adversarial to {target}: rank of the target (red) and the initial top {top}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument("--copies", default="0,1,2,4,8,16,32")
    parser.add_argument("--out", type=Path, default=ROOT / "experiments" / "results")
    parser.add_argument("--temperature", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    copies = [int(c) for c in args.copies.split(",")]
    with tempfile.TemporaryDirectory(prefix="vase-redundancy-") as scratch:
        store = Store(scratch)
        store.ingest([args.source], "scores")
        table = boards.reduce(store, "scores", ["deviation"]).extra["game_data"]
        names = store.dictionary("agents").names
    seconds = {}
    results = []
    for spec in SPECS:  # one method at a time, to time each
        start = time.perf_counter()
        results.append(pl.from_arrow(redundancy(table, copies, specs=[spec], temperature=args.temperature, seed=args.seed)))
        seconds[spec] = time.perf_counter() - start
    frame = pl.concat(results).with_columns(pl.col("agent").map_elements(lambda i: names[i], return_dtype=pl.String).alias("name"))
    args.out.mkdir(parents=True, exist_ok=True)
    frame.write_csv(args.out / "redundancy.csv")
    plot(frame, args.out / "redundancy.png")
    summary = {"source": str(args.source.relative_to(ROOT) if args.source.is_relative_to(ROOT) else args.source),
               "copies": copies, "target": frame.filter(pl.col("target"))["name"][0],
               "movement": rank_movement(frame.to_arrow()), "seconds": seconds}
    (args.out / "redundancy.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
