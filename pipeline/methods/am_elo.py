"""am-Elo: Bradley-Terry with one ability per annotator, and the stable-arena filter [AmElo, 4.2-4.3].

Annotator k sees P(x beats y | k) = 1 / (1 + exp(-theta_k (R_x - R_y))) [AmElo, eq. 4]; the
log-likelihood [AmElo, eq. 5] is summed over the per-annotator count cells (ties count as half a
win each way). The scale of R against theta is fixed by the paper's normalisation
sum_k theta_k = 1 [AmElo, eq. 7], which also picks the sign of the ranking that most annotators
agree with. An annotator with theta_k <= 0 votes against the consensus.

Fit: block Newton, alternating one Newton step on R (a Laplacian system, as in m-Elo) with one
safeguarded Newton step on every theta_k (each a 1-d concave problem), then rescaling theta by
1/sum(theta) and R by sum(theta), which leaves the likelihood unchanged [AmElo, algorithm 2 with
Newton steps instead of fixed-rate gradient epochs]. Starting point: the m-Elo fit with all
theta_k = 1/M. It stops when the largest change of the ratings (in natural units of the average
annotator, R/M) and of the relative abilities M*theta_k is below `tol`, and raises
`ConvergenceError` after `max_iter` rounds.

Priors: `prior` is m-Elo's Gaussian prior on the ratings in natural units of the average
annotator; `ability_prior=q` adds q/2 * (M theta_k - 1)^2 to the loss of each annotator, a
Gaussian prior pulling its relative ability towards the average. The theta_k MLE does not exist
for an annotator whose votes all agree (or all disagree) with the ranking and who never tied:
its theta_k grows without bound; the default q = 1 (worth about one vote) keeps it finite and
has no visible effect on annotators with tens of votes.

Stable arena [AmElo, algorithm 3]: annotators with fewer than `min_records` votes (by weight) are
left out; am-Elo is fitted on the others; those with ability theta_k <= `threshold` are flagged
and the ratings are refitted without them. Scores are in Elo points for the average annotator:
anchor + (scale / ln 10) * (R - mean R) / M, so `info["logistic_scale"]` gives the average
annotator's win probabilities. Per-annotator results are the table `tables["annotators"]`, one
row per annotator in store-id order: `judge` and `judge_id` (its store id in the judges
dictionary, -1 for battles without a judge; `judge` is published as the name), `records` (vote
weight), `ability` (theta_k of the first fit, null if it had too few records), `flagged`
(ability <= threshold) and `ability_refit` (theta_k after the refit, null if left out); `info`
keeps the counts and the threshold.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from scipy.special import expit

from pipeline.methods.convergence import ConvergenceError, NoEstimate
from pipeline.methods.m_elo import Cells, _laplacian_solve, _spread, check_and_fit, elo_points
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import method
from pipeline.stats.annotators import AnnotatorCounts
from pipeline.arrays import sum_by_key


@dataclass(frozen=True)
class AmFit:
    agents: np.ndarray  # local agent indices that are rated (those with votes)
    rating: np.ndarray  # R / M: natural units of the average annotator, centred
    ability: np.ndarray  # theta_k, summing to 1
    iterations: int


@dataclass(frozen=True, eq=False)
class _Problem:
    """Cells over the rated agents, with the unordered pair of each cell for the Laplacian."""

    pairs: Cells  # one cell per distinct pair (weights summed over annotators)
    pair: np.ndarray  # pair index of each annotator cell
    judge: np.ndarray
    wx: np.ndarray
    wy: np.ndarray
    m: int

    @classmethod
    def build(cls, counts: AnnotatorCounts) -> tuple[_Problem, np.ndarray]:
        rated = np.unique(np.r_[counts.x, counts.y])
        x, y = np.searchsorted(rated, counts.x), np.searchsorted(rated, counts.y)
        n = len(rated)
        wx, wy = counts.x_wins + counts.ties / 2, counts.y_wins + counts.ties / 2
        keys, inverse = np.unique(x * n + y, return_inverse=True)
        _, summed = sum_by_key(x * n + y, np.column_stack([counts.x_wins, counts.y_wins, counts.ties]))
        pairs = Cells(n, keys // n, keys % n, summed[:, 0], summed[:, 1], summed[:, 2])
        return cls(pairs, inverse.ravel(), counts.judge, wx, wy, len(counts.judges)), rated

    def log_likelihood_terms(self, r: np.ndarray, theta: np.ndarray) -> np.ndarray:
        z = theta[self.judge] * (r[self.pairs.x[self.pair]] - r[self.pairs.y[self.pair]])
        return -(self.wx * np.logaddexp(0.0, -z) + self.wy * np.logaddexp(0.0, z))


def fit_am_elo(counts: AnnotatorCounts, *, prior: float = 0.0, ability_prior: float = 1.0, tol: float = 1e-8,
               max_iter: int = 2000) -> AmFit:
    """Joint maximum likelihood of ratings and annotator abilities, normalised to sum(theta) = 1."""
    problem, rated = _Problem.build(counts)
    m, pairs = problem.m, problem.pairs
    beta = check_and_fit(pairs, counts.agents[rated], "am-elo", prior=prior).beta
    r, theta = beta * m, np.full(m, 1.0 / m)
    x, y = pairs.x[problem.pair], pairs.y[problem.pair]
    c = problem.wx + problem.wy
    for iteration in range(1, max_iter + 1):
        old_beta, old_ability = r / m, theta * m
        # ratings: one Newton step (prior on R/M), with backtracking
        k_theta = theta[problem.judge]
        p = expit(k_theta * (r[x] - r[y]))
        grad = _spread(pairs, np.bincount(problem.pair, k_theta * (problem.wx - c * p), minlength=len(pairs.x)))
        grad -= prior / m**2 * r
        h = np.bincount(problem.pair, k_theta**2 * c * p * (1 - p), minlength=len(pairs.x))
        step = _laplacian_solve(pairs, h, prior / m**2, grad[:, None])[:, 0]
        objective = lambda rr: problem.log_likelihood_terms(rr, theta).sum() - prior / (2 * m**2) * rr @ rr  # noqa: E731
        base, t = objective(r), 1.0
        while objective(r + t * step) < base - 1e-13 * (abs(base) + 1) and t > 1e-12:
            t /= 2
        r = r + t * step
        # abilities: one safeguarded Newton step per annotator
        theta = _ability_step(problem, r, theta, ability_prior)
        if not np.all(np.abs(theta * m) < 1e6):
            break
        total = theta.sum()
        if total <= 0:
            raise NoEstimate("am-elo: the annotators' abilities sum to a non-positive value (most votes go against "
                             "any ranking); the normalisation sum(theta) = 1 cannot pick a direction")
        theta, r = theta / total, r * total
        r = r - r.mean()
        change = max(np.abs(r / m - old_beta).max(initial=0.0), np.abs(theta * m - old_ability).max(initial=0.0))
        if change < tol:
            return AmFit(rated, r / m, theta, iteration)
    d = r[x] - r[y]
    consistent = np.bincount(problem.judge, problem.wx * (d <= 0) + problem.wy * (d >= 0), minlength=m) == 0
    contrary = np.bincount(problem.judge, problem.wx * (d >= 0) + problem.wy * (d <= 0), minlength=m) == 0
    if ability_prior == 0 and np.any(separable := consistent | contrary):
        raise NoEstimate(f"am-elo: the abilities of annotators (judge ids) {counts.judges[separable].tolist()} grow "
                         "without bound (their votes all agree or all disagree with the ranking); use ability_prior > 0")
    raise ConvergenceError(f"am-elo did not converge in {max_iter} rounds (tol={tol})")


def _ability_step(problem: _Problem, r: np.ndarray, theta: np.ndarray, ability_prior: float) -> np.ndarray:
    m = problem.m
    d = r[problem.pairs.x[problem.pair]] - r[problem.pairs.y[problem.pair]]
    c = problem.wx + problem.wy

    def objective(th: np.ndarray) -> np.ndarray:
        return (np.bincount(problem.judge, problem.log_likelihood_terms(r, th), minlength=m)
                - ability_prior / 2 * (m * th - 1) ** 2)

    p = expit(theta[problem.judge] * d)
    grad = np.bincount(problem.judge, d * (problem.wx - c * p), minlength=m) - ability_prior * m * (m * theta - 1)
    hess = np.bincount(problem.judge, d * d * c * p * (1 - p), minlength=m) + ability_prior * m * m
    step = np.divide(grad, hess, out=np.zeros(m), where=hess > 0)
    base, t = objective(theta), np.ones(m)
    for _ in range(60):
        worse = objective(theta + t * step) < base - 1e-13 * (np.abs(base) + 1)
        if not worse.any():
            break
        t[worse] /= 2
    return theta + t * step


@dataclass(frozen=True)
class Arena:
    """The stable arena's outcome: the final fit and which annotators were used or flagged."""

    fit: AmFit
    first: AmFit
    eligible: np.ndarray  # annotator indices with at least min_records votes
    flagged: np.ndarray  # annotator indices (into counts.judges) with ability <= threshold


def stable_arena(counts: AnnotatorCounts, *, threshold: float = 0.0, min_records: int = 1, **options) -> Arena:
    """[AmElo, algorithm 3]: drop thin annotators, fit, flag low abilities, refit without them."""
    eligible = np.flatnonzero(counts.records >= min_records)
    if len(eligible) == 0:
        raise NoEstimate(f"am-elo: no annotator has {min_records} or more votes")
    first = fit_am_elo(counts.select(eligible), **options)
    flagged = eligible[first.ability <= threshold]
    if len(flagged) == 0:
        return Arena(first, first, eligible, flagged)
    kept = np.setdiff1d(eligible, flagged)
    if len(kept) == 0:
        raise NoEstimate("am-elo: every annotator was flagged")
    return Arena(fit_am_elo(counts.select(kept), **options), first, eligible, flagged)


@method("am-elo", needs=("annotators",), kinds=("battles",))
def am_elo(counts: AnnotatorCounts, *, threshold: float = 0.0, min_records: int = 1, prior: float = 0.0,
           ability_prior: float = 1.0, scale: float = 400.0, anchor: float = 1000.0, tol: float = 1e-8,
           max_iter: int = 2000) -> Ratings:
    """am-Elo: ratings and annotator abilities, refitted without annotators at or below the threshold."""
    if min_records < 1 or prior < 0 or ability_prior < 0 or scale <= 0:
        raise ValueError("am-elo: min_records must be at least 1, priors non-negative and scale positive")
    arena = stable_arena(counts, threshold=threshold, min_records=min_records, prior=prior,
                         ability_prior=ability_prior, tol=tol, max_iter=max_iter)
    final, first = arena.fit, arena.first
    m = len(counts.judges)
    ability, refit = np.full(m, np.nan), np.full(m, np.nan)
    ability[arena.eligible] = first.ability
    refit[np.setdiff1d(arena.eligible, arena.flagged)] = final.ability
    flagged = np.zeros(m, bool)
    flagged[arena.flagged] = True
    annotators = pa.table({"judge": pa.array(counts.judges, pa.int64()), "judge_id": pa.array(counts.judges, pa.int64()),
                           "records": pa.array(counts.records, pa.float64()),
                           "ability": pa.array(ability, pa.float64(), mask=np.isnan(ability)), "flagged": pa.array(flagged),
                           "ability_refit": pa.array(refit, pa.float64(), mask=np.isnan(refit))})
    unrated = np.setdiff1d(np.arange(len(counts.agents)), final.agents)
    info = {"logistic_scale": scale, "anchor": f"mean rating = {anchor}", "iterations": final.iterations,
            "annotators_used": int(len(arena.eligible) - len(arena.flagged)), "annotators_flagged": int(flagged.sum()),
            "annotators_too_few_records": int(m - len(arena.eligible)), "annotators_flagged_at": f"ability <= {threshold}",
            "unrated_agents": counts.agents[unrated].tolist()}
    score = elo_points(final.rating, scale, anchor)
    return Ratings.from_scores(counts.agents[final.agents], score, info=info, tables={"annotators": annotators})

