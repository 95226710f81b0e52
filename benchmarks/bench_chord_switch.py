"""Benchmark: the CPU per bootstrap round of m-Elo's two sparse-round paths, to price `chord_is_cheaper`.

On graphs on both sides of the switch (dense Arena-like pools of 100-2,000 agents, sparser
random pools, and the WTA-like graph of `bench_m_elo_sparse`), the same Poisson draws are fitted
by the chord method (`m_elo._chord_rounds`, all rounds of a block at once with the dense inverse
of the full-data Hessian) and by compiled Newton round by round (`m_elo._newton_rounds`), in the
blocks of rounds `_bootstrap_chunk` uses, with one BLAS thread (as the chunks run). Measured per
graph, in this process's CPU seconds:
- a chord round, its steps, and so a chord step per round;
- a Newton round, its Newton steps and conjugate-gradient iterations, and one Eisenstat CG
  iteration on the full-data Hessian (`conjugate_gradients` run a fixed number of iterations):
  a Newton round in products' worth is the round's CPU over that iteration's.
Every cost is printed in products' worth (CPU over that iteration's), next to the model's
(`m_elo.round_costs`, whose constants are fitted to these numbers), with the path the model picks
and the path that was cheaper. Rounds are compared on their CPU, not wall time: the machine may be
busy, and the ratio of two measurements of the same run is what the switch needs.

Run: `python -m benchmarks.bench_chord_switch [--rounds 50]`; writes benchmarks/results/chord_switch.json.
"""

from __future__ import annotations

import argparse
import os
import time
from unittest import mock

import numpy as np

from benchmarks.bench_m_elo_sparse import wta_like
from benchmarks.common import save
from pipeline.methods import m_elo
from pipeline.methods.bradley_terry import STEP_TOL, Cells, evaluate, fit
from pipeline.methods.bradley_terry_newton import Round, conjugate_gradients, newton
from pipeline.methods.m_elo import ROUND_BLOCK, Resample, _chord_rounds, _draw, _newton_rounds, chord_operator, round_costs
from pipeline.methods.newton_steps import Banded
from pipeline.methods.threads import one_blas_thread

PRIOR, SEED = 0.01, 7
CG_ITERATIONS = 50  # iterations timed to price one product with the Hessian
REPEAT = 3  # each path's rounds are timed this many times; the least CPU counts (the least disturbed)


def random_pool(n: int, pair_share: float, battles_per_pair: float, seed: int = SEED) -> Cells:
    """A share of all pairs of n agents compared, each Poisson(battles_per_pair) times (at least once),
    with Bradley-Terry outcomes of normal skills: complete pools are Arena-like."""
    rng = np.random.default_rng(seed)
    skill = rng.normal(0.0, 1.0, n)
    x, y = np.triu_indices(n, 1)
    keep = rng.random(len(x)) < pair_share
    x, y = x[keep], y[keep]
    battles = 1 + rng.poisson(battles_per_pair - 1, len(x))
    x_wins = rng.binomial(battles, 1 / (1 + np.exp(skill[y] - skill[x]))).astype(float)
    return Cells.summed(n, x, y, np.column_stack([x_wins, battles - x_wins, np.zeros(len(x))]))


GRAPHS = {
    "12 agents, complete, 40 per pair": lambda: random_pool(12, 1.0, 40),
    "40 agents, complete, 2 per pair": lambda: random_pool(40, 1.0, 2),
    "40 agents, complete, 20 per pair": lambda: random_pool(40, 1.0, 20),
    "arena-like 100, complete, 50 per pair": lambda: random_pool(100, 1.0, 50),
    "arena-like 200, complete, 50 per pair": lambda: random_pool(200, 1.0, 50),
    "arena-like 300, complete, 20 per pair": lambda: random_pool(300, 1.0, 20),
    "1,000 agents, 10% of pairs, 10 per pair": lambda: random_pool(1_000, 0.1, 10),
    "2,000 agents, 5% of pairs, 5 per pair": lambda: random_pool(2_000, 0.05, 5),
    "2,000 agents, 1% of pairs, 5 per pair": lambda: random_pool(2_000, 0.01, 5),
    "1,000 agents, 1% of pairs, 20 per pair": lambda: random_pool(1_000, 0.01, 20),
    "WTA-like 2,692": wta_like,
}


class CountingInverse:
    """The chord's dense inverse, counting the round-steps it is applied to."""

    def __init__(self, inverse: np.ndarray):
        self.inverse, self.round_steps = inverse, 0

    def __matmul__(self, other: np.ndarray) -> np.ndarray:
        self.round_steps += other.shape[1]
        return self.inverse @ other


def in_blocks(fit_block, job: Resample, draws, repeat: int) -> float:
    """CPU seconds of `fit_block` over the draws, in the blocks `_bootstrap_chunk` uses; the least of `repeat` runs."""
    width = max(1, ROUND_BLOCK // max(1, len(job.cells.x)))
    best = np.inf
    for _ in range(repeat):
        start = time.process_time()
        for lo in range(0, draws[0].shape[1], width):
            fit_block(job, *(d[:, lo: lo + width] for d in draws))
        best = min(best, time.process_time() - start)
    return best


def product_seconds(cells: Cells, full, banded: Banded) -> float:
    """CPU seconds of one Eisenstat CG iteration (about one product) on the full-data Hessian."""
    curvature = evaluate(cells, full.beta, None, PRIOR).curvature
    adjacency = banded.adjacency
    weight = curvature[adjacency.cell]
    diagonal = np.bincount(np.r_[banded.x, banded.y], np.r_[curvature, curvature], minlength=cells.n) + PRIOR
    rhs = np.random.default_rng(SEED).normal(size=cells.n)
    args = (adjacency.start, adjacency.split, adjacency.other, weight, diagonal, rhs, 0.0)
    conjugate_gradients(*args, 1)  # compiled code loaded
    best = np.inf
    for _ in range(REPEAT):
        start = time.process_time()
        _, _, taken = conjugate_gradients(*args, CG_ITERATIONS)
        best = min(best, (time.process_time() - start) / taken)
    return best


def newton_counts(job: Resample, draws) -> tuple[float, float]:
    """Newton steps and CG iterations per round (the fits of `_newton_rounds`, run again to count)."""
    wx, wy = draws[0] + draws[2] / 2, draws[1] + draws[2] / 2
    steps = products = 0
    for k in range(wx.shape[1]):
        beta = job.full.beta[job.banded.order]
        outcome = newton(Round(job.banded.x, job.banded.y, job.banded.adjacency, np.ascontiguousarray(wx[:, k]),
                               np.ascontiguousarray(wy[:, k]), PRIOR), beta, STEP_TOL, 100)
        steps, products = steps + outcome.iterations, products + outcome.products
    return steps / wx.shape[1], products / wx.shape[1]


def bench_graph(name: str, cells: Cells, rounds: int) -> dict:
    options = {"davidson": False, "prior": PRIOR, "tol": STEP_TOL, "max_iter": 100}
    full = fit(cells, prior=PRIOR)
    banded = Banded.of(cells.n, cells.x, cells.y)
    draws = _draw(cells, rounds, np.random.default_rng(SEED))
    pairs, n = len(cells.x), cells.n
    row: dict[str, object] = {"graph": name, "agents": n, "pairs": pairs}
    modelled_chord, modelled_newton = (cost / (2 * (2 * pairs + n)) for cost in round_costs(cells))
    row |= {"model_chord_products": modelled_chord, "model_newton_products": modelled_newton,
            "model_picks": "chord" if modelled_chord <= modelled_newton else "newton"}
    with one_blas_thread():
        newton_job = Resample(cells, full, options, "rounds", None, banded, 400.0, 1000.0)
        in_blocks(_newton_rounds, newton_job, tuple(d[:, :1] for d in draws), 1)  # compiled code loaded
        newton_round = in_blocks(_newton_rounds, newton_job, draws, REPEAT) / rounds
        steps, products = newton_counts(newton_job, draws)
        product = product_seconds(cells, full, banded)
        row |= {"newton_round_s": newton_round, "newton_steps": steps, "cg_iterations": products, "product_s": product,
                "newton_round_products": newton_round / product}
        total = cells.x_wins + cells.y_wins + cells.ties
        row["lightest_agent_weight"] = float((np.bincount(cells.x, total, minlength=n) + np.bincount(cells.y, total, minlength=n)).min())
        if row["lightest_agent_weight"] > 4:  # with fewer comparisons the chord diverges outright
            start = time.process_time()
            inverse, p0 = chord_operator(cells, full, PRIOR)
            row["chord_operator_s"] = time.process_time() - start
            counting = CountingInverse(inverse)
            chord_job = Resample(cells, full, options, "chord", (counting, p0), banded, 400.0, 1000.0)
            fallback = []
            with mock.patch.object(m_elo, "_newton_rounds", lambda job, *d: fallback.append(d[0].shape[1]) or _newton_rounds(job, *d)):
                chord_round = in_blocks(_chord_rounds, chord_job, draws, REPEAT) / rounds
            chord_steps = counting.round_steps / REPEAT / rounds
            row |= {"chord_round_s": chord_round, "chord_round_products": chord_round / product, "chord_steps": chord_steps,
                    "chord_fallback_rounds": sum(fallback) // REPEAT, "chord_step_products": chord_round / chord_steps / product,
                    "cheaper": "chord" if chord_round < newton_round else "newton"}
    chord_text = "chord not run (an agent with at most 4 comparisons)"
    if "chord_round_s" in row:
        chord_text = (f"chord round {1e3 * row['chord_round_s']:.2f} ms = {row['chord_round_products']:.0f} products (model "
                      f"{modelled_chord:.0f}; {row['chord_steps']:.1f} steps of {row['chord_step_products']:.1f}, "
                      f"{row['chord_fallback_rounds']} of {rounds} rounds to Newton); cheaper: {row['cheaper']}")
    print(f"{name}: {n} agents, {pairs} pairs, lightest agent {row['lightest_agent_weight']:.0f}; a product {1e6 * product:.1f} us; "
          f"Newton round {1e3 * newton_round:.2f} ms = {row['newton_round_products']:.0f} products (model {modelled_newton:.0f}; "
          f"{steps:.1f} steps, {products:.0f} CG iterations); {chord_text}; the model picks {row['model_picks']}", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50, help="one bootstrap chunk (fanout.CHUNK)")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    rows = [bench_graph(name, make(), args.rounds) for name, make in GRAPHS.items()]
    measured = [r for r in rows if "chord_round_s" in r]
    agree = sum(r["cheaper"] == r["model_picks"] for r in measured)
    print(f"load {load:.1f} -> {os.getloadavg()[0]:.1f}; a Newton round in products: median "
          f"{np.median([r['newton_round_products'] for r in rows]):.0f}; a chord step: median "
          f"{np.median([r['chord_step_products'] for r in measured]):.1f}; the model picked the cheaper path on {agree} of "
          f"{len(measured)} graphs where both ran")
    print(f"written {save('chord_switch', {'load_average': load, 'rounds': args.rounds, 'graphs': rows})}")


if __name__ == "__main__":
    main()
