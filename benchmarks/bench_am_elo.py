"""Benchmark: am-Elo's joint Newton fit against the alternating solver it replaced, same run.

Data (fixed): the LLMFAO crowd sample (59 models, 124 annotators, 8,931 votes) and a seeded
synthetic arena (`simulate_votes`: 200 models x 50 annotators x 4,000 votes = 200,000 votes), and a thin crowd
(100 models x 1,000 annotators x 50 votes).
The baseline is the previous solver (one Newton step on the ratings, then one safeguarded Newton
step per annotator, then rescaling to sum(theta) = 1), copied here verbatim as `alternating_fit`
and run to its default tolerance. Reported: best-of-3 wall time of each, iterations, the ratio,
and the largest difference of the results (ratings R/M in natural units, abilities M*theta).

With the default priors the two do not agree: the alternating solver stops at a fixed point of
its own steps (the rescaling after each block moves the point along the scale orbit, which the
priors do not leave invariant), not at a stationary point of the penalised likelihood on
sum(theta) = 1; the joint fit reaches that optimum (checked against scipy in the tests) and has
the lower objective, reported here for both. Without priors (ability_prior=0) the orbit is a
symmetry and both reach the same MLE: that difference, on the synthetic arena (on LLMFAO the
MLE does not exist without the prior), is the like-for-like agreement check. So a ratio is printed
only where the two agree within `TOLERANCE` (ratings R/M and abilities M*theta, natural units);
elsewhere the line says NO RATIO and gives both objectives (vase's previous solver against its
current one: solver only, on the same cells, no peer has am-Elo).

Run: `python -m benchmarks.bench_am_elo`; writes benchmarks/results/am_elo.json.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.special import expit

from benchmarks.common import SOLVER_ONLY, Comparison, Verdict, best_of, report
from pipeline.backtest.stability import simulate_votes
from pipeline.methods.bradley_terry.am_elo import ABILITY_LIMIT, AmFit, AnnotatorCells, fit_am_elo, penalised_loss
from pipeline.methods.bradley_terry.core import fit_or_refuse, laplacian_solve, spread
from pipeline.methods.bradley_terry.steps import ARMIJO, FLOOR, MIN_STEP_SHARE
from pipeline.methods.convergence import ConvergenceError, NoEstimate
from pipeline.stats.annotators import AnnotatorCounts

SAMPLE = Path(__file__).resolve().parents[1] / "data-samples" / "llmfao" / "crowd_battles.csv"
TOLERANCE = 1e-4  # natural units (0.02 Elo points): far above both solvers' stopping error (tol 1e-8)


def _backtrack(objective: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]], x: np.ndarray, step: np.ndarray,
               decrement: np.ndarray, owner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x + t * step, with one t per independent problem (`owner[i]` is the problem of x[i]), halved until
    the problem gains ARMIJO of its predicted gain t * decrement; a problem whose predicted gain is below
    FLOOR times its size takes the full step. Returns the new x and which problems were at their floor."""
    base, magnitude = objective(x)
    at_floor = decrement / 2 <= FLOOR * magnitude
    t = np.ones(len(base))
    while True:
        trial = x + t[owner] * step
        short = ~at_floor & (objective(trial)[0] - base < ARMIJO * t * decrement)
        if not short.any():
            return trial, at_floor
        t[short] /= 2
        if t.min() < MIN_STEP_SHARE:
            raise ConvergenceError(f"am-elo: the line search found no gain for {int(short.sum())} of {len(base)} problem(s) "
                                   f"(predicted gain {float(decrement[short].max()) / 2:.3g}, objective "
                                   f"{float(base[short][0]):.6g})")


def alternating_fit(counts: AnnotatorCounts, agent_keys: np.ndarray | None = None, *, prior: float = 0.0,
               ability_prior: float = 1.0, tol: float = 1e-8, max_iter: int = 2000) -> AmFit:
    """The solver before the joint Newton step (its iterations copied verbatim, kept only here as the baseline; its
    diagnostics of a fit that does not converge, which the benchmark's data never reach, left out)."""
    cells = AnnotatorCells.from_counts(counts, agent_keys)
    m, pooled = cells.m, cells.pooled
    store_ids = counts.agents[cells.rated]
    beta = fit_or_refuse(pooled, store_ids, "am-elo", prior=prior).beta
    r, theta = beta * m, np.full(m, 1.0 / m)
    c = cells.wx + cells.wy
    penalty = prior / m**2
    one_problem = np.zeros(pooled.n, np.int64)

    def ratings_objective(rr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        terms, shrink = cells.log_likelihood_terms(rr, theta), penalty / 2 * float(rr @ rr)
        return np.array([terms.sum() - shrink]), np.array([-terms.sum() + shrink])

    previous, change, moved = np.inf, np.inf, np.zeros(pooled.n)
    for iteration in range(1, max_iter + 1):
        old_beta, old_ability = r / m, theta * m
        # ratings: one Newton step (prior on R/M), with backtracking
        k_theta = theta[cells.judge]
        p = expit(k_theta * cells.differences(r))
        grad = spread(pooled, np.bincount(cells.pair, k_theta * (cells.wx - c * p), minlength=len(pooled.x))) - penalty * r
        h = np.bincount(cells.pair, k_theta**2 * c * p * (1 - p), minlength=len(pooled.x))
        step = laplacian_solve(pooled, h, penalty, grad[:, None])[:, 0]
        r, ratings_floor = _backtrack(ratings_objective, r, step, np.array([float(grad @ step)]), one_problem)
        # abilities: one safeguarded Newton step per annotator
        theta, ability_floor = _ability_step(cells, r, theta, ability_prior)
        if not np.all(np.abs(theta * m) < ABILITY_LIMIT):
            break
        total = theta.sum()
        if total <= 0:
            raise NoEstimate("am-elo: the annotators' abilities sum to a non-positive value (most votes go against "
                             "any ranking); the normalisation sum(theta) = 1 cannot pick a direction")
        theta, r = theta / total, r * total
        r = r - r.mean()
        moved = r / m - old_beta
        change = max(np.abs(moved).max(initial=0.0), np.abs(theta * m - old_ability).max(initial=0.0))
        if change < tol:
            return r / m, theta, iteration, cells
        if ratings_floor.all() and ability_floor.all() and change > previous / 2:
            return r / m, theta, iteration, cells
        previous = change
    raise ConvergenceError(f"alternating am-elo did not converge in {iteration} rounds (largest change {change:.3g} > tol={tol:g})")


def _ability_step(cells: AnnotatorCells, r: np.ndarray, theta: np.ndarray, ability_prior: float) -> tuple[np.ndarray, np.ndarray]:
    m = cells.m
    d = cells.differences(r)
    c = cells.wx + cells.wy

    def objective(th: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        terms = np.bincount(cells.judge, cells.log_likelihood_terms(r, th), minlength=m)
        shrink = ability_prior / 2 * (m * th - 1) ** 2
        return terms - shrink, shrink - terms

    p = expit(theta[cells.judge] * d)
    grad = np.bincount(cells.judge, d * (cells.wx - c * p), minlength=m) - ability_prior * m * (m * theta - 1)
    hess = np.bincount(cells.judge, d * d * c * p * (1 - p), minlength=m) + ability_prior * m * m
    step = np.divide(grad, hess, out=np.zeros(m), where=hess > 0)
    return _backtrack(objective, theta, step, grad * step, np.arange(m))


def llmfao() -> tuple[AnnotatorCounts, np.ndarray]:
    from pipeline.stats import reduce_store
    from pipeline.store import Store

    with tempfile.TemporaryDirectory() as root:
        store = Store(Path(root) / "store")
        store.ingest([SAMPLE], "battles")
        statistics = reduce_store(store, "battles", {"annotators"})
    return statistics.extra["annotators"], statistics.agent_keys


def compare(name: str, counts: AnnotatorCounts, agent_keys: np.ndarray, repeat: int, **options) -> dict:
    t_new, new = best_of(lambda: fit_am_elo(counts, agent_keys, **options), repeat)
    t_old, (rating, theta, rounds, cells) = best_of(lambda: alternating_fit(counts, agent_keys, **options), repeat)
    m = cells.m
    new_rating = np.empty(len(new.agents))
    new_rating[new.canonical] = new.rating  # canonical order, as the baseline returns it
    new_theta = new.ability[cells.annotators]
    penalty, prior = options.get("prior", 0.0) / m**2, options.get("ability_prior", 1.0)
    result = {"data": name, "options": options, "agents": int(cells.pooled.n), "annotators": int(m),
              "votes": float(counts.records.sum()), "new_s": t_new, "baseline_s": t_old, "speed_up": t_old / t_new,
              "new_iterations": new.iterations, "baseline_iterations": rounds,
              "max_rating_difference": float(np.abs(new_rating - rating).max()),
              "max_ability_difference": float(np.abs(new_theta - theta).max() * m),
              "new_objective": penalised_loss(cells, new_rating * m, new_theta, penalty, prior),
              "baseline_objective": penalised_loss(cells, rating * m, theta, penalty, prior)}
    gap = max(result["max_rating_difference"], result["max_ability_difference"])
    verdict = Verdict(gap <= TOLERANCE, f"max difference R/M {result['max_rating_difference']:.2e}, M*theta "
                                        f"{result['max_ability_difference']:.2e} (tolerance {TOLERANCE:g}); penalised "
                                        f"loss {result['new_objective']:.6f} (vase) vs {result['baseline_objective']:.6f}")
    comparison = Comparison(f"am-elo, {name} {options or 'default priors'}, {new.iterations} iterations vs {rounds} rounds",
                            SOLVER_ONLY, "alternating solver (vase's previous code, copied here)", t_new, t_old, verdict)
    return result, comparison


def main() -> None:
    counts, agent_keys = llmfao()
    synthetic, _ = simulate_votes(200, 50, 4_000, seed=20250101)
    keys = np.arange(len(synthetic.agents))
    thin, _ = simulate_votes(100, 1_000, 50, seed=20250102)  # many annotators with few votes each, as in LLMFAO
    runs = [compare("llmfao", counts, agent_keys, 3),  # without ability_prior its MLE does not exist (thin annotators)
            compare("synthetic 200x50x200k", synthetic, keys, 1),
            compare("synthetic 200x50x200k", synthetic, keys, 1, ability_prior=0.0),
            compare("thin crowd 100x1000x50k", thin, np.arange(len(thin.agents)), 3)]
    path = report("am_elo", [comparison for _, comparison in runs], {"runs": [result for result, _ in runs]})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
