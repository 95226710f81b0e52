"""Benchmark: the CPU per bootstrap round of m-Elo's two paths for ties=half, to price `chord_is_cheaper`.

On pools on both sides of the switch (complete Arena-like pools of 12-300 agents, sparser random
pools of 1,000-2,000, and the WTA-like graph of `bench_m_elo_sparse`), one chunk of rounds
(`fanout.CHUNK`) is bootstrapped twice with the same seed, so on the same Poisson draws: once with
the path forced to the chord method (all rounds of a block at once with the dense inverse of the
full-data Hessian) and once to compiled Newton round by round. Measured per pool, in this
process's CPU seconds, the least of `REPEAT` runs (the least disturbed):
- a bootstrap round by each path, less what both spend alike (the Poisson draws and the ranks of
  a round, timed alone) and less the chord's one-off dense inverse (timed alone: shared by all of
  a bootstrap's rounds, not by one chunk's);
- the chord's steps per round (the columns its inverse was applied to), and a Newton round's
  steps and conjugate-gradient iterations (`bradley_terry_newton.newton` on draws of its own);
- one Eisenstat CG iteration on the full-data Hessian (`conjugate_gradients` run a fixed number
  of iterations), about one product with it: the unit the model prices in.
Every cost is printed in products' worth, next to the model's (`m_elo.round_costs`, whose
constants are fitted to these numbers), with the path the model picks and the path that was
cheaper. CPU, not wall time: the machine may be busy, and the switch needs the ratio of two
measurements of the same run.

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
from pipeline.methods.bradley_terry import m_elo
from pipeline.methods.bradley_terry.core import STEP_TOL, Cells, elo_points, evaluate, fit
from pipeline.methods.bradley_terry.m_elo import ROUND_TOL, bootstrap_intervals, chord_operator, round_costs
from pipeline.methods.bradley_terry.newton import WEIGHT, Round, conjugate_gradients, newton
from pipeline.methods.bradley_terry.steps import Banded
from pipeline.methods.numerics.fanout import CHUNK
from pipeline.methods.numerics.resample import poisson_draws, ranks_by_round
from pipeline.methods.numerics.threads import one_blas_thread

PRIOR, SEED = 0.01, 7
CG_ITERATIONS = 50  # iterations timed to price one product with the Hessian
REPEAT = 3  # each measurement is taken this many times; the least CPU counts


def random_pool(n: int, pair_share: float, battles_per_pair: float, seed: int = SEED) -> Cells:
    """A share of all pairs of n agents compared, each 1 + Poisson(battles_per_pair - 1) times, with
    Bradley-Terry outcomes of normal skills: complete pools are Arena-like."""
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


def least_cpu(run) -> float:
    """The least CPU seconds of `REPEAT` calls of `run` (which returns CPU seconds to leave out)."""
    best = np.inf
    for _ in range(REPEAT):
        start = time.process_time()
        left_out = run()
        best = min(best, time.process_time() - start - left_out)
    return best


def bootstrap_round(cells: Cells, full, options: dict, rounds: int, chord: bool) -> tuple[float, float]:
    """CPU seconds of a bootstrap round with the path forced, less the chord's dense inverse; and the
    chord's steps per round."""
    inverses: list[CountingInverse] = []
    operator_cpu: list[float] = []

    def counted_operator(*args):
        start = time.process_time()
        inverse, p0 = chord_operator(*args)
        operator_cpu.append(time.process_time() - start)
        inverses.append(CountingInverse(inverse))
        return inverses[-1], p0

    def run() -> float:
        operator_cpu.clear()
        bootstrap_intervals(cells, full, options, rounds, SEED, 400.0, 1000.0)
        return sum(operator_cpu)

    with mock.patch.object(m_elo, "chord_is_cheaper", lambda cells: chord), \
            mock.patch.object(m_elo, "chord_operator", counted_operator):
        seconds = least_cpu(run)
    steps = sum(inverse.round_steps for inverse in inverses) / max(1, len(inverses)) / rounds
    return seconds / rounds, steps


def shared_round(cells: Cells, full, rounds: int) -> float:
    """CPU seconds per round of what both paths spend alike: the Poisson draws, the Elo points and their ranks."""
    weights = np.concatenate([cells.x_wins, cells.y_wins, cells.ties])
    beta = np.repeat(full.beta[None, :], rounds, axis=0)

    def run() -> float:
        poisson_draws(weights, rounds, np.random.default_rng(SEED))
        ranks_by_round(elo_points(beta, 400.0, 1000.0))
        return 0.0

    return least_cpu(run) / rounds


def product_seconds(cells: Cells, full, banded: Banded) -> float:
    """CPU seconds of one Eisenstat CG iteration (about one product) on the full-data Hessian."""
    curvature = evaluate(cells, full.beta, None, PRIOR).curvature
    adjacency = banded.adjacency
    weight = curvature[adjacency.cell].astype(WEIGHT)  # stored as the rounds store them
    diagonal = np.bincount(np.r_[banded.x, banded.y], np.r_[curvature, curvature], minlength=cells.n) + PRIOR
    rhs = np.random.default_rng(SEED).normal(size=cells.n)
    args = (adjacency.start, adjacency.split, adjacency.other, weight, diagonal, rhs, np.zeros(cells.n), 0.0)
    conjugate_gradients(*args, 1)  # compiled code loaded

    def run() -> float:
        conjugate_gradients(*args, CG_ITERATIONS)
        return 0.0

    return least_cpu(run) / CG_ITERATIONS


def newton_counts(cells: Cells, full, banded: Banded, rounds: int) -> tuple[float, float]:
    """Newton steps and CG iterations per round, on Poisson draws of their own, to the rounds' tolerance."""
    draws = poisson_draws(np.concatenate([cells.x_wins, cells.y_wins, cells.ties]), rounds, np.random.default_rng(SEED))
    c = len(cells.x)
    steps = products = 0
    for draw in draws:
        wx, wy = draw[:c] + draw[2 * c:] / 2, draw[c: 2 * c] + draw[2 * c:] / 2
        outcome = newton(Round(banded.x, banded.y, banded.adjacency, wx, wy, PRIOR), full.beta[banded.order], ROUND_TOL, 100)
        steps, products = steps + outcome.iterations, products + outcome.products
    return steps / rounds, products / rounds


def bench_graph(name: str, cells: Cells, rounds: int) -> dict:
    options = {"davidson": False, "prior": PRIOR, "tol": STEP_TOL, "max_iter": 100}
    full = fit(cells, prior=PRIOR)
    banded = Banded.of(cells.n, cells.x, cells.y)
    pairs, n = len(cells.x), cells.n
    total = cells.x_wins + cells.y_wins + cells.ties
    lightest = float((np.bincount(cells.x, total, minlength=n) + np.bincount(cells.y, total, minlength=n)).min())
    row: dict[str, object] = {"graph": name, "agents": n, "pairs": pairs, "lightest_agent_weight": lightest}
    modelled_chord, modelled_newton = (cost / (2 * (2 * pairs + n)) for cost in round_costs(cells))
    row |= {"model_chord_products": modelled_chord, "model_newton_products": modelled_newton,
            "model_picks": "chord" if modelled_chord <= modelled_newton else "newton"}
    with one_blas_thread():
        bootstrap_intervals(cells, full, options, 1, SEED, 400.0, 1000.0)  # compiled code loaded
        product, shared = product_seconds(cells, full, banded), shared_round(cells, full, rounds)
        newton_round = bootstrap_round(cells, full, options, rounds, chord=False)[0] - shared
        steps, products = newton_counts(cells, full, banded, rounds)
        row |= {"product_s": product, "shared_round_s": shared, "newton_round_s": newton_round, "newton_steps": steps,
                "cg_iterations": products, "newton_round_products": newton_round / product}
        if lightest > 4:  # with fewer comparisons the chord diverges outright
            chord_round, chord_steps = bootstrap_round(cells, full, options, rounds, chord=True)
            chord_round -= shared
            row |= {"chord_round_s": chord_round, "chord_round_products": chord_round / product, "chord_steps": chord_steps,
                    "chord_step_products": chord_round / chord_steps / product,
                    "cheaper": "chord" if chord_round < newton_round else "newton"}
    chord_text = "chord not run (an agent with at most 4 comparisons)"
    if "chord_round_s" in row:
        chord_text = (f"chord round {1e3 * row['chord_round_s']:.2f} ms = {row['chord_round_products']:.0f} products (model "
                      f"{modelled_chord:.0f}; {row['chord_steps']:.1f} steps of {row['chord_step_products']:.1f}, rounds that "
                      f"stall finished by Newton); cheaper: {row['cheaper']}")
    print(f"{name}: {n} agents, {pairs} pairs, lightest agent {lightest:.0f}; a product {1e6 * product:.1f} us, draws and "
          f"ranks {1e3 * shared:.2f} ms a round; Newton round {1e3 * newton_round:.2f} ms = {row['newton_round_products']:.0f} "
          f"products (model {modelled_newton:.0f}; {steps:.1f} steps, {products:.0f} CG iterations); {chord_text}; the model "
          f"picks {row['model_picks']}", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=CHUNK, help="rounds of each bootstrap (one chunk)")
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
