"""am-Elo: Bradley-Terry with one ability per annotator, and the stable-arena filter [AmElo, 4.2-4.3].

Annotator k sees P(x beats y | k) = 1 / (1 + exp(-theta_k (R_x - R_y))) [AmElo, eq. 4]; the
log-likelihood [AmElo, eq. 5] is summed over the per-annotator count cells (ties count as half a
win each way). The scale of R against theta is fixed by the paper's normalisation
sum_k theta_k = 1 [AmElo, eq. 7], which also picks the sign of the ranking that most annotators
agree with. An annotator with theta_k <= 0 votes against the consensus.

Fit: the maximum a posteriori of (R, theta) on the plane sum(theta) = 1 (the paper's
normalisation [AmElo, eq. 7] as a constraint; the priors below are not scale-invariant, so
normalising after the fact, as [AmElo, algorithm 2] does after each gradient epoch, would move
the point), by Newton's method on ratings and abilities jointly. The Hessian's abilities block is
diagonal (theta_k enters only annotator k's cells), so the abilities are eliminated exactly and
each iteration solves one dense n x n system for the ratings (`newton_step`); the step keeps
sum(theta) and, without a ratings prior, mean(R) fixed. The objective is not convex away from the
optimum (the cross terms carry the residuals): where the system is not positive definite a
Levenberg-Marquardt shift of diag(A) makes it so (`SHIFTS`, then a scaled gradient step), which
keeps the step a descent direction, and an Armijo line search (`pipeline.methods.bradley_terry.core`'s
constants) never lets the objective grow. Near a strict optimum the unshifted system is positive
definite and convergence is quadratic: 4-10 iterations from the start, the m-Elo fit with all
theta_k = 1/M. Agents are handled in canonical (name) order and annotators by name, so the result
does not depend on store ids. It stops when an unshifted Newton step is at most `tol` in natural
units of the average annotator (R/M) and in relative abilities (M*theta), both free of the
weights' scale, and takes that step; or at the precision floor (its predicted gain below `FLOOR`
times the objective while the steps no longer halve; `info["stopped"]`). After `max_iter`
iterations it raises a `ConvergenceError` with the last step, the largest abilities and the
agents still moving most. (The alternating solver this replaced stopped at a fixed point of its
own steps, not at this optimum: on the LLMFAO crowd its ratings differ by up to 0.17 natural units
with a higher objective; without priors both give the same MLE.)

Priors: `prior` is m-Elo's Gaussian prior on the ratings in natural units of the average
annotator; `ability_prior=q` adds q/2 * (M theta_k - 1)^2 to the loss of each annotator, a
Gaussian prior pulling its relative ability towards the average. Without it the MLE need not
exist: when some annotators' votes all agree with the ranking and the others' all disagree, the
likelihood grows without bound as their abilities go to +/- infinity (a `NoEstimate` naming them);
the default q = 1 (worth about one vote of weight 1) keeps it
finite and has no visible effect on annotators with tens of votes. The priors count in votes of
weight 1, so am-Elo's results depend on the scale of the weights (with weights of 1e11 per vote,
q = 1 is no prior at all).

`prior=auto` chooses the ratings prior by held-out log-likelihood (`pipeline.methods.bradley_terry.prior_choice`,
as m-Elo does): the votes of the annotators with at least `min_records` are dealt to 5 folds per (annotator,
pair) cell (x wins, y wins, ties, in `CanonicalVotes`' order, so the choice does not depend on store ids),
am-Elo is fitted at each prior of the grid on four folds, with `ability_prior` as given (it is not chosen),
and scored on the fifth (`held_out_votes`). A held-out vote on an agent with no vote in the training folds
counts it at rating 0, the ratings prior's centre (the mean rating); a vote by an annotator with no
training vote counts it as the average annotator (relative ability M*theta = 1, the ability prior's
centre): neither fit says more of them. The stable arena then runs with the chosen prior (annotators
flagged later were part of the cross-validation: their held-out votes are scored with their fitted,
negative, abilities). `info` records `prior` (the value chosen), `prior_chosen_by` and `prior_curve`;
fewer than 20 votes' weight is refused in one line. Cost: 45 fits of am-Elo, each from its m-Elo start.

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
from functools import partial

import numpy as np
import pyarrow as pa
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.special import expit

from pipeline.methods.bradley_terry import core as bradley_terry
from pipeline.methods.bradley_terry.core import Cells, dense_fits, elo_points, fit_or_refuse, spread
from pipeline.methods.bradley_terry.prior_choice import AUTO, FOLD_TOL, PRIOR, PriorChoice, choose_prior
from pipeline.methods.bradley_terry.steps import ARMIJO, FLOOR, MIN_STEP_SHARE
from pipeline.methods.convergence import SHOWN, ConvergenceError, NoEstimate, RatingError
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import NON_NEGATIVE, POSITIVE, at_least, method
from pipeline.stats.annotators import AnnotatorCounts

ABILITY_LIMIT = 1e6  # relative abilities M*theta beyond this are taken as growing without bound


@dataclass(frozen=True)
class AmFit:
    agents: np.ndarray  # local agent indices that are rated (those with votes), increasing
    rating: np.ndarray  # R / M: natural units of the average annotator, centred
    ability: np.ndarray  # theta_k in the order of the counts' annotators, summing to 1
    iterations: int
    canonical: np.ndarray  # positions into `agents` in canonical (name) order
    stopped: str = "converged"  # or "precision floor"


@dataclass(frozen=True, eq=False)
class AnnotatorCells:
    """Per-annotator vote cells over the rated agents, and the same cells pooled over annotators.

    Agents are numbered in canonical order (by `agent_keys`) and annotators by name, so every sum
    of a fit runs in an order that does not depend on store ids."""

    pooled: Cells  # one cell per pair, weights summed over annotators: m-Elo's cells
    pair: np.ndarray  # per annotator cell, its pair (index into `pooled`)
    judge: np.ndarray  # per annotator cell, its annotator (canonical index)
    wx: np.ndarray  # per annotator cell, x's wins plus half the ties
    wy: np.ndarray
    rated: np.ndarray  # per agent of the cells, its local index in the counts
    annotators: np.ndarray  # per canonical annotator, its index in the counts

    @classmethod
    def from_counts(cls, counts: AnnotatorCounts, agent_keys: np.ndarray | None = None) -> AnnotatorCells:
        keys = np.arange(len(counts.agents)) if agent_keys is None else np.asarray(agent_keys)
        voted = counts.x_wins + counts.y_wins + counts.ties > 0
        local_x, local_y = counts.x[voted], counts.y[voted]
        rated = np.unique(np.r_[local_x, local_y])
        rated = rated[np.argsort(keys[rated], kind="stable")]
        position = np.full(len(counts.agents), -1, np.int64)
        position[rated] = np.arange(len(rated))
        a, b = position[local_x], position[local_y]
        swap = a > b
        x_wins, y_wins, ties = counts.x_wins[voted], counts.y_wins[voted], counts.ties[voted]
        x_wins, y_wins = np.where(swap, y_wins, x_wins), np.where(swap, x_wins, y_wins)
        x, y = np.minimum(a, b), np.maximum(a, b)
        annotators = np.argsort(counts.judge_keys, kind="stable")
        canonical = np.empty(len(annotators), np.int64)
        canonical[annotators] = np.arange(len(annotators))
        judge = canonical[counts.judge[voted]]
        order = np.lexsort((y, x, judge))
        n = len(rated)
        pooled = Cells.summed(n, x, y, np.column_stack([x_wins, y_wins, ties]))
        x, y, judge, x_wins, y_wins, ties = (v[order] for v in (x, y, judge, x_wins, y_wins, ties))
        pair = np.searchsorted(pooled.x * n + pooled.y, x * n + y)
        return cls(pooled, pair, judge, x_wins + ties / 2, y_wins + ties / 2, rated, annotators)

    @property
    def m(self) -> int:
        return len(self.annotators)

    def differences(self, r: np.ndarray) -> np.ndarray:
        """R_x - R_y per annotator cell."""
        return r[self.pooled.x[self.pair]] - r[self.pooled.y[self.pair]]

    def log_likelihood_terms(self, r: np.ndarray, theta: np.ndarray) -> np.ndarray:
        z = theta[self.judge] * self.differences(r)
        return -(self.wx * np.logaddexp(0.0, -z) + self.wy * np.logaddexp(0.0, z))


@dataclass(frozen=True, eq=False)
class Derivatives:
    """The penalised negative log-likelihood f at (r, theta), its gradient and its Hessian in blocks.

    f's Hessian is [[A, B], [B', E]]: A the ratings block (a graph Laplacian with edge weights
    theta_k^2 w per cell, plus the ratings prior), E the abilities block, diagonal because each
    theta_k enters only its own annotator's cells, and B (agents x annotators, sparse) the cross
    derivatives, which carry the residuals of the fit and make f non-convex away from the optimum."""

    value: float  # f, a sum of non-negative terms: also the scale of its rounding
    grad_r: np.ndarray
    grad_theta: np.ndarray
    edges: np.ndarray  # per pooled pair, the Laplacian weight of A
    diagonal: np.ndarray  # E
    cross: sp.csr_array  # B


def penalised_loss(cells: AnnotatorCells, r: np.ndarray, theta: np.ndarray, penalty: float, ability_prior: float) -> float:
    """f = -(log-likelihood) + penalty/2 |r|^2 + ability_prior/2 sum_k (M theta_k - 1)^2."""
    m = cells.m
    return float(-cells.log_likelihood_terms(r, theta).sum() + penalty / 2 * np.sum(r * r)
                 + ability_prior / 2 * np.sum((m * theta - 1) ** 2))


def derivatives(cells: AnnotatorCells, r: np.ndarray, theta: np.ndarray, penalty: float, ability_prior: float) -> Derivatives:
    m, pooled = cells.m, cells.pooled
    d = cells.differences(r)
    k_theta = theta[cells.judge]
    c = cells.wx + cells.wy
    p, q = expit(k_theta * d), expit(-k_theta * d)  # q = 1 - p, with its digits where p is within an ulp of 1
    residual = cells.wx * q - cells.wy * p  # d(log-likelihood) / d(theta_k d)
    w = c * p * q  # its curvature
    grad_r = penalty * r - spread(pooled, np.bincount(cells.pair, k_theta * residual, minlength=len(pooled.x)))
    grad_theta = ability_prior * m * (m * theta - 1) - np.bincount(cells.judge, d * residual, minlength=m)
    edges = np.bincount(cells.pair, k_theta**2 * w, minlength=len(pooled.x))
    diagonal = np.bincount(cells.judge, d * d * w, minlength=m) + ability_prior * m * m
    beta = k_theta * w * d - residual
    x, y = pooled.x[cells.pair], pooled.y[cells.pair]
    cross = sp.csr_array((np.r_[beta, -beta], (np.r_[x, y], np.r_[cells.judge, cells.judge])), shape=(pooled.n, m))
    return Derivatives(penalised_loss(cells, r, theta, penalty, ability_prior), grad_r, grad_theta, edges, diagonal, cross)


def newton_step(cells: AnnotatorCells, at: Derivatives, penalty: float, shift: float) -> tuple[np.ndarray, np.ndarray] | None:
    """The Newton step on f keeping sum(theta) and (without a ratings prior) sum(r) fixed, with `shift`
    times diag(A) added to the ratings' Schur complement (Levenberg-Marquardt); None when that is not
    positive definite.

    The abilities are eliminated exactly: with e = 1/E, s = sum(e) and P = diag(e) - e e'/s (E's
    inverse on the plane sum(v) = 0), the ratings step solves S u = -g_r + B P g_theta with
    S = A - B P B' (n x n), and the abilities step is v = -P (B'u + g_theta). S is positive definite
    on sum(u) = 0 exactly when f is strictly convex on the constraint plane, as it is near a strict
    optimum; elsewhere the shift makes it so, and the step stays a descent direction."""
    pooled, n = cells.pooled, cells.pooled.n
    if np.any(at.diagonal <= 0):
        return None
    e = 1.0 / at.diagonal
    total = float(e.sum())
    b = at.cross @ e
    degree = np.bincount(pooled.x, at.edges, minlength=n) + np.bincount(pooled.y, at.edges, minlength=n) + penalty
    scaled = at.cross @ sp.diags_array(np.sqrt(e))
    s = (scaled @ scaled.T).toarray()
    s = -s + np.outer(b, b) / total
    s.flat[pooled.x * n + pooled.y] -= at.edges
    s.flat[pooled.y * n + pooled.x] -= at.edges
    s.flat[:: n + 1] += degree * (1 + shift)
    if penalty == 0:
        s += degree.mean() / n  # pins the mean, as in `laplacian_solve`: S 1 = 0 and the right side sums to 0
    rhs = -at.grad_r + at.cross @ (e * at.grad_theta) - b * (float(e @ at.grad_theta) / total)
    try:
        factor = sla.cho_factor(s, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        return None
    u = sla.cho_solve(factor, rhs, check_finite=False)
    y = at.cross.T @ u + at.grad_theta
    return u, -(e * y - e * (float(e @ y) / total))


def scaled_gradient_step(cells: AnnotatorCells, at: Derivatives, penalty: float) -> tuple[np.ndarray, np.ndarray]:
    """-g scaled by the Hessian's diagonal, on the constraint plane: a descent direction whatever the Hessian."""
    degree = np.bincount(np.r_[cells.pooled.x, cells.pooled.y], np.r_[at.edges, at.edges], minlength=cells.pooled.n) + penalty
    u = -at.grad_r / np.maximum(degree, np.finfo(float).tiny)
    e = 1.0 / np.maximum(at.diagonal, np.finfo(float).tiny)
    return u - u.mean(), -(e * at.grad_theta - e * (float(e @ at.grad_theta) / float(e.sum())))


SHIFTS = (0.0, 1e-6, 1e-4, 1e-2, 1.0, 1e2, 1e4)  # Levenberg-Marquardt shifts, in units of diag(A), tried in turn


def fit_am_elo(counts: AnnotatorCounts, agent_keys: np.ndarray | None = None, *, prior: float = 0.0,
               ability_prior: float = 1.0, tol: float = 1e-8, max_iter: int = 200) -> AmFit:
    """Joint maximum a posteriori of ratings and annotator abilities on the plane sum(theta) = 1."""
    cells = AnnotatorCells.from_counts(counts, agent_keys)
    m, pooled = cells.m, cells.pooled
    store_ids = counts.agents[cells.rated]
    if not dense_fits(pooled.n):  # the joint Newton system is dense in the ratings
        raise RatingError(f"am-elo: {pooled.n} rated agents need a dense {pooled.n} x {pooled.n} Newton system "
                          f"({8 * pooled.n**2 / 2**20:.0f} MB), beyond its bound of {bradley_terry.DENSE_BYTES / 2**20:.0f} MB; "
                          "rate this board with m-elo, or split it")
    beta = fit_or_refuse(pooled, store_ids, "am-elo", hint="prior=auto to choose a prior by cross-validation", prior=prior).beta
    r, theta = (beta - beta.mean()) * m, np.full(m, 1.0 / m)
    penalty = prior / m**2
    previous, size, u, v = np.inf, np.inf, np.zeros(pooled.n), np.zeros(m)
    for iteration in range(1, max_iter + 1):
        at = derivatives(cells, r, theta, penalty, ability_prior)
        for shift in SHIFTS:
            if (step := newton_step(cells, at, penalty, shift)) is not None:
                break
        else:  # no shift made the system positive definite: a scaled gradient step, still a descent direction
            step = scaled_gradient_step(cells, at, penalty)
        u, v = step
        decrement = -float(at.grad_r @ u + at.grad_theta @ v)
        size = max(float(np.abs(u).max(initial=0.0)) / m, float(np.abs(v).max(initial=0.0)) * m)
        at_floor = decrement / 2 <= FLOOR * at.value
        if shift == 0 and (size <= tol or (at_floor and size > previous / 2)):
            r, theta = r + u, theta + v
            return _in_counts_order(cells, (r - r.mean()) / m, theta, iteration, "converged" if size <= tol else "precision floor")
        t = 1.0
        while not at_floor:
            trial = penalised_loss(cells, r + t * u, theta + t * v, penalty, ability_prior)
            if at.value - trial >= ARMIJO * t * decrement:
                break
            t /= 2
            if t < MIN_STEP_SHARE:
                raise ConvergenceError(f"am-elo: the line search found no gain at iteration {iteration} (largest step "
                                       f"{size:.3g}, predicted gain {decrement / 2:.3g}, objective {at.value:.6g}); "
                                       "ratings with the largest steps: {agents}",
                                       store_ids[np.argsort(-np.abs(u), kind="stable")[:SHOWN]].tolist())
        r, theta, previous = r + t * u, theta + t * v, size
        r = r - r.mean()
        if not np.all(np.abs(theta * m) < ABILITY_LIMIT):
            break
    d = cells.differences(r)
    consistent = np.bincount(cells.judge, cells.wx * (d <= 0) + cells.wy * (d >= 0), minlength=m) == 0
    contrary = np.bincount(cells.judge, cells.wx * (d >= 0) + cells.wy * (d <= 0), minlength=m) == 0
    judge_ids = [int(j) for j in counts.judges[cells.annotators]]  # `pipeline.report` names them
    if ability_prior == 0 and np.any(separable := consistent | contrary):
        raise NoEstimate(f"am-elo: the abilities of annotators (judge ids) {[judge_ids[k] for k in np.flatnonzero(separable)]} grow "
                         "without bound (their votes all agree or all disagree with the ranking); use ability_prior > 0")
    moving = np.argsort(-np.abs(theta * m), kind="stable")[:SHOWN]
    if not np.all(np.abs(theta * m) < ABILITY_LIMIT):
        raise ConvergenceError(f"am-elo: the relative abilities of annotators (judge ids) {[judge_ids[k] for k in moving[:3]]} exceed "
                               f"{ABILITY_LIMIT:g} after {iteration} iterations; ability_prior={ability_prior:g} counts as that "
                               "many votes of weight 1, so with heavier weights raise it")
    raise ConvergenceError(f"am-elo did not converge in {max_iter} Newton iterations (largest step {size:.3g} > tol={tol:g}, "
                           f"the largest abilities M*theta: {', '.join(f'judge {judge_ids[k]}: {theta[k] * m:.4g}' for k in moving[:3])}); "
                           "ratings still moving most: {agents}",
                           store_ids[np.argsort(-np.abs(u), kind="stable")[:SHOWN]].tolist())


def _in_counts_order(cells: AnnotatorCells, rating: np.ndarray, theta: np.ndarray, iterations: int, stopped: str) -> AmFit:
    order = np.argsort(cells.rated)
    canonical = np.empty(len(order), np.int64)
    canonical[order] = np.arange(len(order))
    ability = np.empty(cells.m)
    ability[cells.annotators] = theta
    return AmFit(cells.rated[order], rating[order], ability, iterations, canonical, stopped)


@dataclass(frozen=True, eq=False)
class CanonicalVotes:
    """The counts' cells as `AnnotatorCells` sums them, whatever the store ids: ordered by annotator name, then
    by their agents' names (`agent_keys`), each oriented first agent by name first (`swap`: the store's x is
    second by name)."""

    order: np.ndarray
    swap: np.ndarray  # per cell in `order`
    first: np.ndarray  # local agent indices, per cell in `order`
    second: np.ndarray

    @classmethod
    def of(cls, counts: AnnotatorCounts, agent_keys: np.ndarray | None = None) -> CanonicalVotes:
        keys = np.arange(len(counts.agents)) if agent_keys is None else np.asarray(agent_keys)
        key_x, key_y = keys[counts.x], keys[counts.y]
        order = np.lexsort((np.maximum(key_x, key_y), np.minimum(key_x, key_y), counts.judge_keys[counts.judge]))
        swap = (key_x > key_y)[order]
        x, y = counts.x[order], counts.y[order]
        return cls(order, swap, np.where(swap, y, x), np.where(swap, x, y))

    def weights(self, counts: AnnotatorCounts) -> np.ndarray:
        """3 x cells: the first agent's wins, the second's, ties."""
        x_wins, y_wins = counts.x_wins[self.order], counts.y_wins[self.order]
        return np.stack([np.where(self.swap, y_wins, x_wins), np.where(self.swap, x_wins, y_wins), counts.ties[self.order]])

    def counts_with(self, counts: AnnotatorCounts, weights: np.ndarray) -> AnnotatorCounts:
        """`counts` with the cells' weights replaced by `weights` (as `weights` gives them)."""
        first, second, ties = weights
        columns = np.empty((3, len(self.order)))
        columns[:, self.order] = np.where(self.swap, second, first), np.where(self.swap, first, second), ties
        return counts.replace(*columns)


def held_out_votes(counts: AnnotatorCounts, agent_keys: np.ndarray | None, votes: CanonicalVotes, options: dict,
                   train: np.ndarray, test: np.ndarray, prior: float, start: None) -> tuple[None, float]:
    """`prior_choice`'s fit and score for am-Elo: `fit_am_elo` (with `options`, the ability prior among them)
    on the training folds' votes (`CanonicalVotes.weights`), and the held-out votes' log-likelihood. A
    held-out vote on an agent with no training vote counts it at rating 0, the prior's centre and the mean
    rating; one by an annotator with no training vote counts it as the average annotator (relative ability
    M*theta = 1): the fit knows nothing else of either. Each fit starts afresh (`start` is unused)."""
    trained = votes.counts_with(counts, train)
    voting = np.flatnonzero(trained.records > 0)
    fitted = fit_am_elo(trained.select(voting), agent_keys, **(options | {"prior": prior, "tol": FOLD_TOL}))
    rating = np.zeros(len(counts.agents))
    rating[fitted.agents] = fitted.rating
    relative = np.ones(len(counts.judges))
    relative[voting] = fitted.ability * len(voting)
    z = relative[counts.judge[votes.order]] * (rating[votes.first] - rating[votes.second])
    first, second = test[0] + test[2] / 2, test[1] + test[2] / 2
    return None, -float(np.sum(first * np.logaddexp(0.0, -z) + second * np.logaddexp(0.0, z)))


@dataclass(frozen=True)
class Arena:
    """The stable arena's outcome: the final fit and which annotators were used or flagged."""

    fit: AmFit
    first: AmFit
    eligible: np.ndarray  # annotator indices with at least min_records votes
    flagged: np.ndarray  # annotator indices (into counts.judges) with ability <= threshold
    prior_choice: PriorChoice | None = None  # with prior=auto


def stable_arena(counts: AnnotatorCounts, agent_keys: np.ndarray | None = None, *, threshold: float = 0.0,
                 min_records: int = 1, **options) -> Arena:
    """[AmElo, algorithm 3]: drop thin annotators, fit, flag low abilities, refit without them. With
    `prior="auto"`, the ratings prior is chosen first on the eligible annotators' votes (`held_out_votes`)."""
    eligible = np.flatnonzero(counts.records >= min_records)
    if len(eligible) == 0:
        raise NoEstimate(f"am-elo: no annotator has {min_records} or more votes")
    selected, choice = counts.select(eligible), None
    if options.get("prior") == AUTO:
        votes = CanonicalVotes.of(selected, agent_keys)
        choice = choose_prior(votes.weights(selected), partial(held_out_votes, selected, agent_keys, votes, options),
                              method="am-elo")
        options = options | {"prior": choice.prior}
    first = fit_am_elo(selected, agent_keys, **options)
    flagged = eligible[first.ability <= threshold]
    if len(flagged) == 0:
        return Arena(first, first, eligible, flagged, choice)
    kept = np.setdiff1d(eligible, flagged)
    if len(kept) == 0:
        raise NoEstimate("am-elo: every annotator was flagged")
    return Arena(fit_am_elo(counts.select(kept), agent_keys, **options), first, eligible, flagged, choice)


@method("am-elo", needs=("annotators", "agent_keys"), kinds=("battles",),
        rules={"min_records": at_least(1), "prior": PRIOR, "ability_prior": NON_NEGATIVE, "scale": POSITIVE, "tol": POSITIVE,
               "max_iter": at_least(1)})
def am_elo(counts: AnnotatorCounts, agent_keys: np.ndarray, *, threshold: float = 0.0, min_records: int = 1, prior: float | str = 0.0,
           ability_prior: float = 1.0, scale: float = 400.0, anchor: float = 1000.0, tol: float = 1e-8,
           max_iter: int = 200) -> Ratings:
    """am-Elo: ratings and annotator abilities, refitted without annotators at or below the threshold."""
    arena = stable_arena(counts, agent_keys, threshold=threshold, min_records=min_records, prior=prior,
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
    unrated = unrated[np.argsort(agent_keys[unrated], kind="stable")]
    info = {"logistic_scale": scale, "anchor": f"mean rating = {anchor}", "iterations": final.iterations,
            "stopped": final.stopped,
            "annotators_used": int(len(arena.eligible) - len(arena.flagged)), "annotators_flagged": int(flagged.sum()),
            "annotators_too_few_records": int(m - len(arena.eligible)), "annotators_flagged_at": f"ability <= {threshold}",
            "unrated_agents": counts.agents[unrated].tolist()} | ({} if arena.prior_choice is None else arena.prior_choice.info())
    score = np.empty(len(final.agents))
    score[final.canonical] = elo_points(final.rating[final.canonical], scale, anchor)  # sums in name order
    return Ratings.from_scores(counts.agents[final.agents], score, info=info, tables={"annotators": annotators})

