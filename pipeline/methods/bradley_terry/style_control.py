"""Style control: Bradley-Terry with battle-level covariates, fitted jointly [ArenaStyle]; [BT52].

P(a beats b) = 1 / (1 + exp(-(b_a - b_b + z . gamma))): the ratings b and one coefficient per
covariate, with z the covariates' differences between the two answers of the battle. Each
feature f (a length, a count of markdown elements) enters as Arena's normalised difference
(f_a - f_b) / (f_a + f_b + 1), divided by its root mean square over the battles (weighted), so a
coefficient is the log-odds of one typical difference. Arena also subtracts the mean difference;
we do not: without an intercept, centring would add a constant first-position advantage, and a
battle recorded as (b, a) instead of (a, b) would change the fit. Where the positions are
randomised (Arena's battles) the mean is near 0 and the two agree. The ratings are then
"controlled" for the covariates: what is left of a model's strength once the style of its
answers is accounted for.

Ties count as half a win each way. The fit is Newton's method on the (penalised, `prior` on
ratings and coefficients alike) log-likelihood of the distinct battles
(`pipeline.stats.features`), with `pipeline.methods.bradley_terry.core`'s stopping rules: converged
when the largest step (natural units) is at most `tol`, or at the precision floor; Armijo line
search; a failed search or `max_iter` raises `ConvergenceError`. The Newton system is solved
through the Schur complement of the ratings block, a graph Laplacian solved by
`laplacian_solve` (dense Cholesky or conjugate gradients), so the cost stays that of a plain
fit plus one solve per covariate.

`prior=auto` chooses the prior by held-out log-likelihood (`pipeline.methods.bradley_terry.prior_choice`, as
plain m-Elo does): the weight of each distinct battle is dealt to 5 folds (a tie stays half each way), the
joint fit at each prior of the grid on four folds is scored by the log-likelihood of the fifth's battles
with its ratings and coefficients (`held_out_battles`; an agent with no training battle sits at the
prior's centre, rating 0); the covariates' normalisation is the full data's. `info` records `prior` (the
value chosen), `prior_chosen_by` and `prior_curve`; fewer than 20 battles are refused in one line.

Existence: with `prior=0` the ratings need the strongly connected comparison graph of
`bradley_terry.existence_problems` (checked first, naming the agents); a covariate whose
differences are all 0 is refused; covariates that separate wins from losses outright (no finite
estimate) show up as a fit that keeps stepping at the precision floor, refused as `NoEstimate`.

Intervals: the Poisson bootstrap of m-Elo, over the distinct battles instead of the pair cells
(each row of weight w redrawn as Poisson(w), in the canonical order of the agents' names, seeded
chunks on Dask through `pipeline.methods.numerics.fanout`), refitted from the full-data estimate with
the full data's normalisation; 95% percentile intervals for the ratings (with rank intervals and
tiers) and for the coefficients.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import pyarrow as pa
from scipy.special import expit

from pipeline.logs.orders import A_WINS, B_WINS, TIE
from pipeline.methods.bradley_terry.core import LN10, STEP_TOL, Cells, elo_points, elo_tolerance, existence_problems, laplacian_solve
from pipeline.methods.bradley_terry.prior_choice import AUTO, FOLD_TOL, choose_prior
from pipeline.methods.bradley_terry.steps import ARMIJO, FLOOR, MIN_STEP_SHARE
from pipeline.methods.convergence import ConvergenceError, NoEstimate
from pipeline.methods.numerics.fanout import fan_out
from pipeline.methods.numerics.resample import poisson_draws, ranks_by_round, score_interval_columns
from pipeline.methods.ratings import Ratings, competition_ranks
from pipeline.stats.features import BattleFeatures, value_bits

FITTED, NO_ESTIMATE, UNCONVERGED = 0.0, 1.0, 2.0  # status of a bootstrap round (last column of its row)
RUNAWAY_STEP = 1e-4  # natural units: a fit at the precision floor still stepping this far is running off to infinity


@dataclass(frozen=True, eq=False)
class Design:
    """Distinct battles in canonical agent order: agents `a`, `b` (canonical indices), effective wins `wa`,
    `wb` (ties half each way), covariates `z` (rows x covariates); `pairs` the cells of the agent pairs
    (x < y) and `cell` each row's cell, with `sign` +1 where a = x."""

    n: int
    a: np.ndarray
    b: np.ndarray
    wa: np.ndarray
    wb: np.ndarray
    z: np.ndarray
    pairs: Cells
    cell: np.ndarray
    sign: np.ndarray

    def with_weights(self, wa: np.ndarray, wb: np.ndarray) -> Design:
        return Design(self.n, self.a, self.b, wa, wb, self.z, self.pairs, self.cell, self.sign)

    def spread(self, per_row: np.ndarray) -> np.ndarray:
        """Sum of a per-row quantity into agent a with sign +, agent b with sign -."""
        return np.bincount(self.a, per_row, minlength=self.n) - np.bincount(self.b, per_row, minlength=self.n)


@dataclass(frozen=True)
class CovariateFit:
    beta: np.ndarray  # ratings, natural units, canonical order; centred when prior = 0
    gamma: np.ndarray  # one coefficient per covariate, log-odds per root-mean-square normalised difference
    iterations: int
    log_likelihood: float
    stopped: str = "converged"
    last_step: float = 0.0


def normalised_differences(side_a: np.ndarray, side_b: np.ndarray) -> np.ndarray:
    """Arena's normalised difference of each feature: (f_a - f_b) / (f_a + f_b + 1)."""
    half_a, half_b = side_a / 2, side_b / 2  # halved exactly, so that sums of values near the float maximum stay finite
    return (half_a - half_b) / (half_a + half_b + 0.5)


def parse_covariates(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.replace(";", ",").split(",") if name.strip())
    if len(set(names)) != len(names):
        raise ValueError(f"m-elo: covariates list a feature twice: {text!r}")
    return names


def covariate_design(features: BattleFeatures, covariates: tuple[str, ...], keys: np.ndarray
                     ) -> tuple[Design, np.ndarray]:
    """The design of `covariates` in canonical order (agent i of `features` is agent keys[i]), and each
    covariate's root-mean-square normalised difference (the divisor of its column)."""
    if missing := [c for c in covariates if c not in features.names]:
        known = ", ".join(features.names) or "none"
        raise NoEstimate(f"m-elo: the battles have no feature {', '.join(missing)} (features given: {known})")
    columns = [features.names.index(c) for c in covariates]
    side_a, side_b = features.side_a[:, columns], features.side_b[:, columns]
    if (lacking := np.isnan(side_a).any(axis=1) | np.isnan(side_b).any(axis=1)).any():
        raise NoEstimate(f"m-elo: {int(lacking.sum())} of {len(lacking)} distinct battles lack a value of "
                         f"{', '.join(covariates)}; give the features in every battles file, or rate without covariates")
    keys = np.asarray(keys, dtype=np.int64)
    a, b = keys[features.a], keys[features.b]
    order = np.lexsort([*value_bits(side_b).T[::-1], *value_bits(side_a).T[::-1], features.outcome, b, a])
    a, b, outcome, weight = a[order], b[order], features.outcome[order], features.weight[order]
    raw = normalised_differences(side_a[order], side_b[order])
    rms = np.sqrt(np.sum(weight[:, None] * raw * raw, axis=0) / max(float(weight.sum()), np.finfo(float).tiny))
    if flat := [c for c, s in zip(covariates, rms) if not s > 0]:
        raise NoEstimate(f"m-elo: covariate {', '.join(flat)} never differs between the two sides of a battle")
    wa = np.where(outcome == A_WINS, weight, 0.0) + np.where(outcome == TIE, weight / 2, 0.0)
    wb = np.where(outcome == B_WINS, weight, 0.0) + np.where(outcome == TIE, weight / 2, 0.0)
    n = len(features.agents)
    x, y = np.minimum(a, b), np.maximum(a, b)
    pair, cell = np.unique(x * n + y, return_inverse=True)
    pairs = Cells(n, pair // n, pair % n, np.zeros(len(pair)), np.zeros(len(pair)), np.zeros(len(pair)))
    return Design(n, a, b, wa, wb, raw / rms, pairs, cell.ravel(), np.where(a < b, 1.0, -1.0)), rms


def _log_likelihood(design: Design, beta: np.ndarray, gamma: np.ndarray, prior: float) -> tuple[float, float, np.ndarray]:
    """The penalised log-likelihood, the size of its terms, and the logit of each row."""
    d = beta[design.a] - beta[design.b] + design.z @ gamma
    data = -(float(np.sum(design.wa * np.logaddexp(0.0, -d))) + float(np.sum(design.wb * np.logaddexp(0.0, d))))
    penalty = prior / 2 * (float(beta @ beta) + float(gamma @ gamma))
    return data - penalty, penalty - data, d


def _solve(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """The coefficients' Newton step; least squares where the curvature has (numerically) vanished, as it
    does when covariates separate wins from losses (Newton then runs out of iterations and says so)."""
    try:
        return np.linalg.solve(matrix, rhs)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(matrix, rhs, rcond=None)[0]


def fit_covariates(design: Design, *, prior: float = 0.0, tol: float = STEP_TOL, max_iter: int = 100,
                   start: CovariateFit | None = None) -> CovariateFit:
    """Newton's method on ratings and coefficients jointly (see the module docstring); the caller checks existence."""
    n, k = design.n, design.z.shape[1]
    beta = np.zeros(n) if start is None else start.beta.copy()
    gamma = np.zeros(k) if start is None else start.gamma.copy()
    loglik, magnitude, d = _log_likelihood(design, beta, gamma, prior)
    previous, size = np.inf, np.inf
    step_beta = np.zeros(n)
    for iteration in range(1, max_iter + 1):
        p, q = expit(d), expit(-d)  # q = 1 - p, with its digits where p is within an ulp of 1
        slope, curvature = design.wa * q - design.wb * p, (design.wa + design.wb) * p * q
        grad_beta = design.spread(slope) - prior * beta
        grad_gamma = design.z.T @ slope - prior * gamma
        # Schur complement of the ratings block: L the Laplacian of the pair curvatures, U the cross terms
        laplacian = np.bincount(design.cell, curvature, minlength=len(design.pairs.x))
        cross = np.column_stack([design.spread(curvature * design.z[:, j]) for j in range(k)]) if k else np.zeros((n, 0))
        solved = laplacian_solve(design.pairs, laplacian, prior, np.column_stack([grad_beta, cross]))
        schur = (design.z.T * curvature) @ design.z + prior * np.eye(k) - cross.T @ solved[:, 1:]
        step_gamma = _solve(schur, grad_gamma - cross.T @ solved[:, 0])
        step_beta = solved[:, 0] - solved[:, 1:] @ step_gamma
        decrement = float(grad_beta @ step_beta + grad_gamma @ step_gamma)
        size = float(np.abs(np.r_[step_beta, step_gamma]).max(initial=0.0))
        at_floor = decrement / 2 <= FLOOR * magnitude
        if at_floor and size > max(tol, RUNAWAY_STEP) and size > previous / 2:
            raise NoEstimate(f"m-elo: the estimate with covariates runs off to infinity (steps of {size:.3g} that no longer "
                             "change the likelihood): the covariates and ratings separate wins from losses; use "
                             "m-elo:prior=0.01 for a small Gaussian prior")
        if size <= tol or (at_floor and size > previous / 2):
            beta, gamma = beta + step_beta, gamma + step_gamma
            loglik, _, _ = _log_likelihood(design, beta, gamma, prior)
            return CovariateFit(beta - beta.mean() if prior == 0 else beta, gamma, iteration, loglik,
                                "converged" if size <= tol else "precision floor", size)
        t = 1.0
        while True:
            trial = _log_likelihood(design, beta + t * step_beta, gamma + t * step_gamma, prior)
            if at_floor or trial[0] - loglik >= ARMIJO * t * decrement:
                break
            t /= 2
            if t < MIN_STEP_SHARE:
                raise ConvergenceError(f"m-elo: Newton's line search with covariates found no gain at iteration {iteration} "
                                       f"(largest step {size:.3g}, predicted gain {decrement / 2:.3g})")
        beta, gamma, previous = beta + t * step_beta, gamma + t * step_gamma, size
        loglik, magnitude, d = trial
    raise ConvergenceError(f"m-elo: Newton's method with covariates did not converge in {max_iter} iterations (largest "
                           f"step {size:.3g} > tol={tol:g}); covariates that separate wins from losses have no finite "
                           "coefficient: try m-elo:prior=0.01")


@dataclass(frozen=True, eq=False)
class Resample:
    design: Design
    full: CovariateFit
    options: dict


def _bootstrap_chunk(job: Resample, size: int, rng: np.random.Generator) -> np.ndarray:
    """Ratings and coefficients of `size` Poisson resamples of the distinct battles, one row each, then whether
    each agent is in a drawn battle (1, else 0: absent is not measured), status last."""
    design = job.design
    total = design.wa + design.wb
    draws = poisson_draws(total, size, rng)
    share = np.divide(design.wa, total, out=np.zeros_like(total), where=total > 0)
    fitted_columns = design.n + design.z.shape[1]
    out = np.full((size, fitted_columns + design.n + 1), np.nan)
    both = np.r_[design.a, design.b]
    for r in range(size):
        out[r, fitted_columns:-1] = np.bincount(both, np.r_[draws[r], draws[r]], minlength=design.n) > 0
        sample = design.with_weights(draws[r] * share, draws[r] * (1 - share))
        if job.options["prior"] == 0 and existence_problems(_pair_cells(sample)) is not None:
            out[r, -1] = NO_ESTIMATE
            continue
        try:
            fitted = fit_covariates(sample, start=job.full, **job.options)
            out[r, :fitted_columns] = np.r_[fitted.beta, fitted.gamma]
            out[r, -1] = FITTED
        except NoEstimate:
            out[r, -1] = NO_ESTIMATE
        except ConvergenceError:
            out[r, -1] = UNCONVERGED
    return out


def _pair_cells(design: Design) -> Cells:
    """The effective wins of the design summed per agent pair: what existence depends on."""
    x_side = np.where(design.sign > 0, design.wa, design.wb)
    y_side = np.where(design.sign > 0, design.wb, design.wa)
    cells = len(design.pairs.x)
    return Cells(design.n, design.pairs.x, design.pairs.y, np.bincount(design.cell, x_side, minlength=cells),
                 np.bincount(design.cell, y_side, minlength=cells), np.zeros(cells))


def held_out_battles(design: Design, max_iter: int, train: np.ndarray, test: np.ndarray, prior: float,
                     start: CovariateFit | None) -> tuple[CovariateFit, float]:
    """`prior_choice`'s fit and score for style control: the joint fit on the training folds' weight of each
    distinct battle, and the held-out battles' log-likelihood with the fitted ratings and coefficients (an agent
    with no training battle sits at the prior's centre, rating 0). A battle's weight is its winner's, or half
    each side's for a tie: `share` of it is a's."""
    total = design.wa + design.wb
    share = np.divide(design.wa, total, out=np.zeros_like(total), where=total > 0)
    fitted = fit_covariates(design.with_weights(train[0] * share, train[0] * (1 - share)), prior=prior, tol=FOLD_TOL,
                            max_iter=max_iter, start=start)
    held_out = design.with_weights(test[0] * share, test[0] * (1 - share))
    return fitted, _log_likelihood(held_out, fitted.beta, fitted.gamma, 0.0)[0]


def style_controlled(features: BattleFeatures, agent_keys: np.ndarray, covariates: tuple[str, ...], *, prior: float | str,
                     bootstrap: int, seed: int, scale: float, anchor: float, tol: float, max_iter: int,
                     client=None, established: np.ndarray | None = None) -> Ratings:
    """m-Elo ratings controlled for `covariates`, their coefficients (`tables["coefficients"]`, `info`) and
    bootstrap intervals, ranks counted among the `established` agents (store ids; None: all)."""
    design, rms = covariate_design(features, covariates, agent_keys)
    by_key = np.empty_like(features.agents)
    by_key[agent_keys] = features.agents
    if prior == 0 and (problem := existence_problems(_pair_cells(design))) is not None:
        message, local = problem
        raise NoEstimate(f"m-elo: the maximum-likelihood ratings do not exist: {message}; use m-elo:prior=auto to choose "
                         "a prior by cross-validation", by_key[local].tolist())
    chosen: dict[str, object] = {}
    if prior == AUTO:
        choice = choose_prior((design.wa + design.wb)[None], partial(held_out_battles, design, max_iter), method="m-elo",
                              seed=seed)
        prior, chosen = choice.prior, choice.info()
    options = {"prior": prior, "tol": tol, "max_iter": max_iter}
    full = fit_covariates(design, **options)
    points, tie = scale / LN10, elo_tolerance(tol, scale)
    info: dict[str, object] = {"logistic_scale": scale, "anchor": f"mean rating = {anchor}", "iterations": full.iterations,
                               "stopped": full.stopped, "last_step": full.last_step, "log_likelihood": full.log_likelihood,
                               "covariates": {c: float(g) for c, g in zip(covariates, full.gamma)}} | chosen
    table = {"feature": list(covariates), "coefficient": full.gamma, "elo_points": points * full.gamma,
             "normaliser": rms}
    extras: dict[str, np.ndarray] = {}
    if bootstrap:
        rows = fan_out(_bootstrap_chunk, Resample(design, full, options), bootstrap, seed, client=client)
        status = rows[:, -1]
        kept = rows[status == FITTED]
        info |= {"bootstrap_rounds": bootstrap, "bootstrap_dropped": int(np.sum(status == NO_ESTIMATE)),
                 "bootstrap_unconverged": int(np.sum(status == UNCONVERGED))}
        if len(kept) == 0:
            raise NoEstimate(f"m-elo: none of the {bootstrap} bootstrap resamples with covariates could be fitted; use "
                             "m-elo:prior=0.01, or bootstrap=0 for no intervals")
        n, fitted_columns = design.n, design.n + design.z.shape[1]
        scores = elo_points(kept[:, :n], scale, anchor)
        ranks = ranks_by_round(scores, tie)
        absent = kept[:, fitted_columns:-1] == 0  # absent is not measured (`interval_columns`)
        scores[absent] = ranks[absent] = np.nan
        by_design = None if established is None else np.isin(by_key, established)  # the design's agent order
        columns = score_interval_columns(scores, ranks, competition_ranks(elo_points(full.beta, scale, anchor), tolerance=tie),
                                         tie, by_design)
        extras = {key: values[agent_keys] for key, values in columns.items()}
        low, high = np.percentile(kept[:, n:fitted_columns], (2.5, 97.5), axis=0)
        table |= {"ci_low": low, "ci_high": high}
        info["covariate_intervals"] = {c: [float(lo), float(hi)] for c, lo, hi in zip(covariates, low, high)}
    return Ratings.from_scores(features.agents, elo_points(full.beta, scale, anchor)[agent_keys], extras=extras,
                               info=info | {"tie_tolerance": tie}, tables={"coefficients": pa.table(table)}, tie_tolerance=tie)
