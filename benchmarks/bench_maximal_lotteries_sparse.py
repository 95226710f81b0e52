"""Benchmark: maximal lotteries on the Diplomacy-scale games log (52,958 players), measured only.

The pairwise counts of the 21 pairs of every game of `pipeline.backtest.synthetic`'s log (the
cells of `benchmarks.bench_m_elo_sparse.diplomacy_like`), rated by `maximal-lotteries`, with
Copeland on the same counts timed in the same run as the baseline (a ratio, since the machine's
load moves both). Issue target: under 30 s.

Run: `python -m benchmarks.bench_maximal_lotteries_sparse`; writes benchmarks/results/maximal_lotteries_sparse.json.
"""

from __future__ import annotations

import os
import time

import numpy as np
import scipy.sparse as sp

from benchmarks.bench_m_elo_sparse import diplomacy_like
from benchmarks.common import save
from pipeline import methods
from pipeline.stats.counts import PairwiseCounts, Statistics


def main() -> None:
    cells = diplomacy_like()
    n = cells.n
    wins = sp.csr_array((np.r_[cells.x_wins, cells.y_wins], (np.r_[cells.x, cells.y], np.r_[cells.y, cells.x])), shape=(n, n))
    ties = sp.csr_array((np.r_[cells.ties, cells.ties], (np.r_[cells.x, cells.y], np.r_[cells.y, cells.x])), shape=(n, n))
    wins.eliminate_zeros()
    ties.eliminate_zeros()
    stats = Statistics("games", np.arange(n), np.ones(n, dtype=np.int64), pairwise=PairwiseCounts(np.arange(n), wins, ties))
    results = {"load_average": os.getloadavg()[0], "players": n, "pairs": len(cells.x)}
    for name in ("copeland", "maximal-lotteries"):
        start = time.perf_counter()
        rated = methods.run(name, stats)
        results[f"{name}_s"] = time.perf_counter() - start
        print(f"{name}: {results[f'{name}_s']:.1f} s", flush=True)
    results["support"] = len(rated.info.get("support_agents", []))
    results["unique"] = rated.info.get("unique")
    results["ratio_to_copeland"] = results["maximal-lotteries_s"] / results["copeland_s"]
    print(f"maximal lotteries on {n} players: {results['maximal-lotteries_s']:.1f} s "
          f"({results['ratio_to_copeland']:.0f}x Copeland), support {results['support']}, unique {results['unique']}")
    print(f"written {save('maximal_lotteries_sparse', results)}")


if __name__ == "__main__":
    main()
