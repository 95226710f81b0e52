"""Equilibrium ratings with the affinity-entropy target [GTLLM] sections 3.2-3.3, appendices A-B.

Target: for each player i, t_i = argmax over the simplex of the affinity entropy with p = 1,
H(x) = 1 - ||U x||^2 with U = K diag(1 / ||K_:j||_2) ([GTLLM] definition 1 and the remark on
U(p) in appendix B), K = exp(-D / (2 kernel_variance)) an RBF kernel on the strategic
dissimilarity D(a, b) = mean over a_-i of (u_i(a, a_-i) - u_i(b, a_-i))^2 ([GTLLM] eq. 6-7). The
maximiser is found by exponentiated gradient from the uniform strategy (exact clones keep equal
mass, so the target spreads each clone group's share evenly), stopped when the Frank-Wolfe gap is
below `tol`.

- `affinity-cce`: the CCE of maximum relative entropy to t = prod_i t_i: the convex dual
  L(alpha) = log sum_a exp(log t(a) - sum_i sum_a' alpha_i(a') [u_i(a', a_-i) - u_i(a)]) over
  alpha >= 0, whose primal is the softmax of the logits ([GTLLM] appendix A, eq. 8), minimised by
  projected Newton (`pipeline.methods.numerics.max_entropy`, in place of the paper's softplus
  parametrisation and Adam) on the gains divided by the payoff range, with the gains applied as
  a linear operator on the payoff tensors. Certified when its KKT residual (the largest positive
  gain, and the complementarity of the multipliers, in units of the payoff range) is at most
  `tol`; `info["solver"]` gives the residual, the Newton steps and why they stopped. In 2-player
  zero-sum games (battles' agent-agent game, often `game=agent-task`) no point is strictly feasible:
  every CCE's marginals are optimal strategies and its value the game's, so a deviation to a
  strategy in the support of some optimal strategy (the essential set, by strict complementarity
  [GT56]) gains exactly 0 at every CCE. Left as inequalities, their multipliers grow without bound
  and convergence is linear (football's first 3,000 matches, 110 teams: a residual of 3.6e-5 after
  500 steps, 44 s). So the search runs on what every CCE satisfies (`cce_support`, one LP): mass
  only on the essential strategies' joint cells, and their deviations as equalities. The product of
  maximum-support optimal strategies then satisfies every other deviation strictly with full mass on
  those cells, the dual has a minimiser, and Newton converges quadratically. In the 3-player games
  whose first two players are opposed (`model-model-prompt`, `agent-agent-task`) the same happens
  when their deviation games leave no slack (`opposed_pair_support`): bootstrap rounds of LLMFAO's
  battles where a group of models loses to no one on any prompt. A game merely close to that
  (values summing to -2e-5 in one LLMFAO round) has a strictly feasible point, thin: its search still
  takes ~170 steps.
- `affinity-ne`: the limiting logit equilibrium traced from the target: at each temperature tau
  the QRE x_i = softmax(grad_i u_i(x) / tau + log t_i) is found by damped fixed-point iteration
  from the previous one (step at most min(0.5, tau); a step that would raise the loss is not
  taken and the step halved: at small tau the damped map cycles, as it did on the LiveBench
  agent-task game; a step taken lets it grow back by `GROWTH`: halving only stalled the trace on
  a tenth of random 4 x 3 games), until the loss of [GTLLM] eq. (4),
  sum_i u^tau_i(BR_i, x_-i) - u^tau_i(x_i, x_-i), is below `tol`; tau is then multiplied by
  `decay`, down to `tau_min`. Where the damped map is no descent direction of the loss (an
  unstable QRE), its step halves until it moves no probability by more than machine epsilon;
  the QRE is then solved for by Newton's method (`qre_by_newton`) from there, on log-odds against
  each player's most probable action (against a fixed first action the Jacobian carries that
  action's probability as a factor of its determinant: Arena-Hard's scores, 15 x 15 x 300, failed
  at tau=0.0115 with the agents' first action at 3e-6, though the branch has no fold there). Where
  Newton finds none either, the branch of logit equilibria folds back (tau turns, as in a 4 x 3
  game of the tests) and is followed from the last QRE by pseudo-arclength continuation
  (`qre_across_fold`, Turocy 2005) down to the temperature the trace was at. `max_iter` damped
  steps in all, else a one-line `ConvergenceError` with the temperature, the loss and the step; the
  same error, naming the tau the branch was not followed from, when the continuation fails too.

Ratings are the regrets of deviating to each action under the equilibrium, u_i(a_i, x_-i) - u_i(x)
([GTLLM] section 3); gains within `tol` times the payoff range of zero are reported as 0, and
ratings closer than that share a rank (`info["tie_tolerance"]`). Contributions by
the last player's actions follow [GTLLM] section 4.3.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Mapping

import numpy as np
import scipy.sparse.linalg as spla
from scipy.spatial.distance import cdist
from scipy.special import log_softmax, softmax

from pipeline.games import Game, deviation_payoff, marginals, product
from pipeline.methods.convergence import ConvergenceError
from pipeline.methods.game_theory.equilibria import (CONSTANT_SUM_RTOL, GAME_RULES, GameData, choose_game, constant_sum, game_ratings,
                                                   game_shape, opposed, payoff_range, resolved_game, shape_text)
from pipeline.methods.game_theory.nash_averaging import exact_supports, game_value
from pipeline.methods.numerics import max_entropy
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import POSITIVE, Cost, Size, at_least, between, method

DEFAULT_GAMES = {"scores": "agent-agent-task", "battles": "model-model-prompt"}
# A damped step that moves no probability by more than this has stalled: the loss no longer changes but by rounding.
STALLED = float(np.finfo(np.float64).eps)
GROWTH = 1.5  # affinity-ne's damped step grows by this after a step that lowered the loss


def dissimilarity(g: np.ndarray, p: int) -> np.ndarray:
    """D[a, b] = mean over a_-p of (g(a, a_-p) - g(b, a_-p))^2 ([GTLLM] eq. 6); exactly 0 for clones."""
    rows = np.moveaxis(g, p, 0).reshape(g.shape[p], -1)
    return cdist(rows, rows, "sqeuclidean") / rows.shape[1]


def affinity_target(g: np.ndarray, p: int, *, kernel_variance: float = 1e-6, tol: float = 1e-10,
                    max_iter: int = 100_000) -> np.ndarray:
    """argmax of the affinity entropy (p = 1) of player p's strategies: ||U x||^2 minimised."""
    k = np.exp(-dissimilarity(g, p) / (2.0 * kernel_variance))
    u = k / np.sqrt((k**2).sum(axis=0))[None, :]
    q = u.T @ u
    step = 1.0 / (2.0 * np.abs(q).max())
    x = np.full(len(q), 1.0 / len(q))
    for _ in range(max_iter):
        grad = 2.0 * q @ x
        if grad @ x - grad.min() <= tol:
            return x
        x = x * np.exp(-step * (grad - grad.min()))
        x /= x.sum()
    raise ConvergenceError(f"affinity: the affinity-entropy target of player {p} was not maximised to tol {tol:g} "
                           f"in {max_iter} iterations")


def affinity_targets(game: Game, kernel_variance: float) -> list[np.ndarray]:
    """Each player's affinity-entropy target strategy."""
    return [affinity_target(g, p, kernel_variance=kernel_variance) for p, g in enumerate(game.payoffs)]


def gain_operator(game: Game) -> spla.LinearOperator:
    """The CCE deviation gains as a linear map of the joint distribution (flattened), and its transpose.

    Row (p, a'_p) of x -> gains is sum_a x(a) [G_p(a'_p, a_-p) - G_p(a)] ([DevR] eq. 3a), computed on
    the payoff tensors without building the (rows x joints) matrix."""
    sizes = np.cumsum((0,) + game.shape)

    def gains(x: np.ndarray) -> np.ndarray:
        return np.concatenate(game.gains(x.reshape(game.shape)))

    def transpose(alpha: np.ndarray) -> np.ndarray:
        out = np.zeros(game.shape)
        for p, g in enumerate(game.payoffs):
            a = alpha[sizes[p]: sizes[p + 1]]
            out += np.expand_dims(np.tensordot(a, g, axes=(0, p)), p) - a.sum() * g
        return out.ravel()

    return spla.LinearOperator((int(sizes[-1]), int(np.prod(game.shape))), matvec=gains, rmatvec=transpose,
                               dtype=np.float64)


GAIN_MATRIX_ENTRIES = 2**24  # a zero-sum game's gains on its essential cells are written out up to this (128 MiB)


@dataclass(frozen=True)
class Support:
    """What every CCE of a game is known to satisfy before it is searched for: the deviation gains that are 0 at
    each (`tight`, by row of `gain_operator`), and the joint strategies that may have mass (`cells`, flat)."""

    tight: np.ndarray
    cells: np.ndarray


def cce_support(game: Game) -> Support:
    """In a 2-player zero-sum game every CCE's marginals are optimal strategies (see the module doc): its mass is
    on the essential strategies' joint cells, and deviations to essential strategies gain 0
    (`nash_averaging.exact_supports`, one LP). In a game of more players whose first two are opposed
    (`opposed_pair_support`: battles' and score tables' 3-player games) the same may hold of those two. Nothing is
    known of other games."""
    if constant_sum(game):
        rows, cols = exact_supports(game.payoffs[0])
        return Support(np.concatenate([rows, cols]), np.outer(rows, cols).ravel())
    if game.n_players > 2 and opposed(game) and (known := opposed_pair_support(game)) is not None:
        return known
    return Support(np.zeros(sum(game.shape), dtype=bool), np.ones(math.prod(game.shape), dtype=bool))


SUPPORT_LP_ENTRIES = 2**24  # `exact_supports` writes out a square game of a matrix game's rows + columns + 1: at most
# this (128 MiB; LLMFAO's 59 x 767 is 0.7M); beyond, nothing is known and the search runs on every cell


def opposed_pair_support(game: Game) -> Support | None:
    """What every CCE satisfies when players 0 and 1 are opposed and their matrix games leave no slack, else None.

    Player p's deviations against the others' joint play are the matrix game M_p[a'_p, a_-p] = G_p(a'_p, a_-p),
    of value v_p. At a CCE of player 0's payoff V, an optimal w_p of M_p gains w_0^T M_0 >= v_0 against every
    column, so v_0 <= E[w_0^T M_0] <= V, and likewise v_1 <= -V: v_0 + v_1 <= 0. When the sum is 0 (a bootstrap
    round of LLMFAO's 59 x 59 x 13 battles, where a group of models loses to no one on any prompt, once the draws
    dropped their losses) both hold with equality at every CCE: its mass is on columns a_-p that some optimal
    strategy of M_p's column player plays (the maximal supports, `exact_supports`), and deviations to rows in the
    support of an optimal w_p gain exactly 0. Left to the search, the multipliers of those deviations grow without
    bound and Newton converged linearly: 170-500 steps, 12-39 CPU s, where other rounds take 8-22. None also for
    matrix games too large for `exact_supports` (`SUPPORT_LP_ENTRIES`)."""
    g0, g1 = game.payoffs[0], game.payoffs[1]
    m0 = g0.reshape(g0.shape[0], -1)
    m1 = np.moveaxis(g1, 1, 0).reshape(g1.shape[1], -1)
    if max(sum(m.shape) + 1 for m in (m0, m1)) ** 2 > SUPPORT_LP_ENTRIES:
        return None
    if game_value(m0) + game_value(m1) < -CONSTANT_SUM_RTOL * payoff_range(game):
        return None
    rows0, cols0 = exact_supports(m0)
    rows1, cols1 = exact_supports(m1)
    others = game.shape[2:]
    cells = cols0.reshape((1, game.shape[1]) + others) & cols1.reshape((game.shape[0], 1) + others)
    tight = np.concatenate([rows0, rows1, np.zeros(sum(others), dtype=bool)])
    return Support(tight, cells.ravel())


def gain_matrix(game: Game, cells: np.ndarray) -> np.ndarray:
    """The rows of `gain_operator` of a 2-player game on the joint strategies `cells` (flat indices) alone:
    G_0(a', b) - G_0(a, b) for player 0's rows a', G_1(a, b') - G_1(a, b) for player 1's rows b'."""
    a, b = np.unravel_index(cells, game.shape)
    g0, g1 = game.payoffs
    return np.vstack([g0[:, b] - g0[a, b], g1[a, :].T - g1[a, b]])


def restricted(operator: spla.LinearOperator, rows: np.ndarray, columns: np.ndarray) -> spla.LinearOperator:
    """The block of `operator` on the rows and columns the masks select, as an operator of its own (`operator`
    itself when they select everything: no copies around each product of a game nothing is known of)."""
    if rows.all() and columns.all():
        return operator
    picked, kept = np.flatnonzero(rows), np.flatnonzero(columns)

    def apply(x: np.ndarray) -> np.ndarray:
        full = np.zeros(operator.shape[1])
        full[kept] = x
        return operator.matvec(full)[picked]

    def transpose(y: np.ndarray) -> np.ndarray:
        full = np.zeros(operator.shape[0])
        full[picked] = y
        return operator.rmatvec(full)[kept]

    return spla.LinearOperator((len(picked), len(kept)), matvec=apply, rmatvec=transpose, dtype=np.float64)


def max_relative_entropy_cce(game: Game, targets: list[np.ndarray], *, tol: float = 1e-7) -> tuple[np.ndarray, dict]:
    """The CCE closest in relative entropy to the product of `targets` ([GTLLM] appendix A), and diagnostics.

    max -KL(x || t) subject to every deviation gain <= 0, by `pipeline.methods.numerics.max_entropy` on the
    gains divided by the payoff range, certified when its KKT residual is at most `tol`."""
    log_t = np.log(product(targets)).ravel()
    scale = payoff_range(game)
    known = cce_support(game)
    if game.n_players != 2 or known.cells.all() or len(known.tight) * int(known.cells.sum()) > GAIN_MATRIX_ENTRIES:
        gains = -gain_operator(game) / scale
        equal, inequal = restricted(gains, known.tight, known.cells), restricted(gains, ~known.tight, known.cells)
    else:  # a zero-sum game's essential cells: few enough to write the gains out, which preconditions Newton's CG
        gains = -gain_matrix(game, np.flatnonzero(known.cells)) / scale
        equal, inequal = gains[known.tight], gains[~known.tight]
    found = max_entropy.maximise(equal, inequal, int(known.cells.sum()), log_prior=log_t[known.cells], accept=tol)
    x = np.zeros(len(log_t))
    x[known.cells] = found.q
    x = x.reshape(game.shape)
    worst = max(float(g.max()) for g in game.gains(x)) / scale
    if not found.converged:
        raise ConvergenceError(f"affinity-cce: the CCE search stopped at KKT residual {found.residual:.1e} > tol {tol:g} "
                               f"after {found.iterations} Newton steps (largest deviation gain {worst:.1e} of the payoff range)")
    return x, {"solver": found.summary() | {"largest_gain": float(f"{max(worst, 0.0):.3g}")}}


def _partials(game: Game, xs: list[np.ndarray]) -> list[np.ndarray]:
    """grad_i u_i(x): each player's expected payoff of each action against the others' marginals."""
    return [deviation_payoff(g, product(xs), p) for p, g in enumerate(game.payoffs)]


def qre_loss(game: Game, xs: list[np.ndarray], targets: list[np.ndarray], tau: float) -> float:
    """[GTLLM] eq. (4): sum_i u^tau_i(BR_i, x_-i) - u^tau_i(x_i, x_-i), u^tau = u - tau KL(. || t_i)."""
    total = 0.0
    for grad, x, t in zip(_partials(game, xs), xs, targets):
        br = softmax(grad / tau + np.log(t))
        value = lambda z: z @ grad - tau * float(np.sum(z * (np.log(np.maximum(z, 1e-300)) - np.log(t))))  # noqa: E731
        total += value(br) - value(x)
    return total


def qre_by_newton(game: Game, xs: list[np.ndarray], targets: list[np.ndarray], tau: float) -> list[np.ndarray] | None:
    """The QRE near `xs` as a root of log x_i - log softmax(grad_i u_i(x) / tau + log t_i) (MINPACK's hybrid
    Powell method on the log-odds against each player's first action), or None when it finds none.

    The damped map stalls where it is not a descent direction of the loss (an unstable fixed point
    of the logit dynamics: about a tenth of random 4 x 3 games at tau ~ 0.1); the QRE is still there."""
    sizes = np.cumsum([0] + [len(x) - 1 for x in xs])
    # Each player's reference is its most probable action: d log x / d(log-odds) has determinant x_ref, so against an
    # action the trace drives to 0 the Jacobian is singular in all but name (Arena-Hard's scores: 3e-6 at tau=0.02)
    references = [int(np.argmax(x)) for x in xs]
    others = [np.delete(np.arange(len(x)), r) for x, r in zip(xs, references)]

    def log_strategies(z: np.ndarray) -> list[np.ndarray]:
        logs = []
        for a, b, r, rest in zip(sizes[:-1], sizes[1:], references, others):
            odds = np.zeros(b - a + 1)
            odds[rest] = z[a:b]
            logs.append(log_softmax(odds))
        return logs

    def residual(z: np.ndarray) -> np.ndarray:
        logs = log_strategies(z)
        # x_i and the logit response agree on all but the reference action, so on that one too
        return np.concatenate([(lx - log_softmax(gr / tau + np.log(t)))[rest]
                               for lx, gr, t, rest in zip(logs, _partials(game, [np.exp(lx) for lx in logs]), targets, others)])

    from scipy.optimize import root  # imported on first use only: the fallback alone needs scipy.optimize

    start = np.concatenate([np.log(np.maximum(x[rest], 1e-300)) - np.log(x[r]) for x, r, rest in zip(xs, references, others)])
    found = root(residual, start, method="hybr")
    return [np.exp(lx) for lx in log_strategies(found.x)] if found.success and np.all(np.isfinite(found.x)) else None


def qre_across_fold(game: Game, xs: list[np.ndarray], targets: list[np.ndarray], tau: float, to: float, *,
                    max_steps: int = 1_000) -> list[np.ndarray] | None:
    """The QRE at `to` < `tau` on the branch of logit equilibria through the QRE `xs` at `tau`, followed by
    pseudo-arclength continuation (Turocy 2005, Games Econ. Behav. 51) in (log x, log tau) across the folds where
    tau turns back; None when the step that keeps the corrector converging falls below 1e-10, or after `max_steps`.

    Where the branch folds, no QRE near the last one exists at a slightly smaller tau, so neither the damped map nor
    Newton's method at fixed tau can go on (a 4 x 3 game's branch turns back at tau=0.1537 and down again at 0.1544).
    The Jacobian is by forward differences: one residual per coordinate, cheap on the small games that fold."""
    sizes = np.cumsum([0] + [len(x) for x in xs])

    def residual(v: np.ndarray) -> np.ndarray:  # v = (log x_1, ..., log x_n, log tau): one equation per action
        logs = [v[a:b] for a, b in zip(sizes[:-1], sizes[1:])]
        return np.concatenate([lx - log_softmax(gr * math.exp(-v[-1]) + np.log(t))
                               for lx, gr, t in zip(logs, _partials(game, [np.exp(lx) for lx in logs]), targets)])

    def jacobian(v: np.ndarray, h: float = 1e-7) -> np.ndarray:
        base = residual(v)
        return np.column_stack([(residual(v + h * e) - base) / h for e in np.eye(len(v))])

    def tangent(v: np.ndarray, previous: np.ndarray | None) -> np.ndarray:
        direction = np.linalg.svd(jacobian(v))[2][-1]  # the Jacobian's null vector: along the branch
        toward = previous @ direction if previous is not None else -direction[-1]  # keep going; at first, tau down
        return direction if toward > 0 else -direction

    v = np.concatenate([np.log(np.maximum(x, 1e-300)) for x in xs] + [[math.log(tau)]])
    direction, step = tangent(v, None), 0.05
    for _ in range(max_steps):
        if step < 1e-10:
            return None
        w = v + step * direction
        try:
            for _ in range(20):  # Newton on the QRE equations and the arclength one: (w - v) along direction = step
                move = np.linalg.solve(np.vstack([jacobian(w), direction]), -np.r_[residual(w), direction @ (w - v) - step])
                w = w + move
                if np.abs(move).max() <= 1e-12:
                    break
            converged = bool(np.all(np.isfinite(w)) and np.abs(residual(w)).max() <= 1e-10)
        except np.linalg.LinAlgError:
            converged = False
        if not converged:
            step /= 2
            continue
        if w[-1] <= math.log(to):  # `to` lies between v and w on the branch: the QRE there, from the chord's point
            near = v + (math.log(to) - v[-1]) / (w[-1] - v[-1]) * (w - v)
            return qre_by_newton(game, [np.exp(near[a:b]) for a, b in zip(sizes[:-1], sizes[1:])], targets, to)
        v, direction, step = w, tangent(w, direction), min(step * GROWTH, 0.5)
    return None


def limiting_logit_equilibrium(game: Game, targets: list[np.ndarray], *, tau: float = 1.0, tau_min: float = 1e-2,
                               decay: float = 0.95, tol: float = 1e-6, max_iter: int = 100_000) -> list[np.ndarray]:
    """QREs traced from `targets` at temperature tau (payoffs divided by their range) down to tau_min."""
    scale = payoff_range(game)
    unit = Game(tuple(g / scale for g in game.payoffs), game.players, game.strategies)
    xs = [t.copy() for t in targets]
    iterations, previous = 0, None
    while True:
        step = min(0.5, tau)
        loss = qre_loss(unit, xs, targets, tau)
        while loss > tol:
            if iterations >= max_iter:
                raise ConvergenceError(f"affinity-ne: the QRE at tau={tau:.3g} was not reached to tol {tol:g} in "
                                       f"{max_iter} iterations (loss {loss:.1e}, step {step:.1e})")
            grads = _partials(unit, xs)
            moved = [(1 - step) * x + step * softmax(gr / tau + np.log(t)) for x, gr, t in zip(xs, grads, targets)]
            if max(float(np.abs(m - x).max()) for m, x in zip(moved, xs)) <= STALLED:
                solved = qre_by_newton(unit, xs, targets, tau)
                if (solved is None or qre_loss(unit, solved, targets, tau) > tol) and previous is not None:
                    solved = qre_across_fold(unit, previous[0], targets, previous[1], tau)
                if solved is not None and qre_loss(unit, solved, targets, tau) <= tol:
                    xs, loss = solved, qre_loss(unit, solved, targets, tau)
                    break
                raise ConvergenceError(f"affinity-ne: the QRE at tau={tau:.3g} was not reached to tol {tol:g}: the damped step "
                                       f"({step:.1e}) stopped moving the strategies after {iterations} iterations (loss {loss:.1e}), "
                                       f"Newton's method found no QRE near them and the branch of logit equilibria was not followed "
                                       f"from tau={previous[1] if previous else tau:.3g} across a fold; a larger tau_min stops the "
                                       f"trace before")
            iterations += 1
            trial = qre_loss(unit, moved, targets, tau)
            if trial > loss:  # the damped map cycles at this step (its Lipschitz constant is ~ 1/tau): halve it, stay
                step /= 2
            else:  # a step that worked may grow back (a step that only shrank stalled a third of random games)
                xs, loss, step = moved, trial, min(step * GROWTH, min(0.5, tau))
        if tau <= tau_min:
            return xs
        previous, tau = (xs, tau), max(tau * decay, tau_min)


def _regret_ratings(game: Game, sigma: np.ndarray, tol: float) -> list[np.ndarray]:
    cut = tol * payoff_range(game)
    return [np.where(np.abs(r) <= cut, 0.0, r) for r in game.gains(sigma)]


def _finish(game: Game, sigma: np.ndarray, tol: float, targets, info: dict[str, object]) -> Ratings:
    contributions = game.contributions(sigma, 0, game.n_players - 1) if game.n_players > 1 else None
    if game.ids[0] is None:
        info = info | {"targets": {p: t.tolist() for p, t in zip(game.players, targets)}}
    tie = tol * payoff_range(game)
    return game_ratings(game, _regret_ratings(game, sigma, tol), marginals(sigma), contributions=contributions,
                        info=info | {"tie_tolerance": tie}, tie_tolerance=tie)


CCE_PER_FIT_S = 0.03  # a fit's own cost on the smallest games (the targets, the first Newton steps), paid every
# bootstrap round: football's 6-team and Arena-Hard's 2-model games, 21 fits, 0.48-0.99 CPU s at load 8


ZERO_SUM_GAMES = ("agent-agent", "agent-task")  # the 2-player games the logs make: their search is `cce_support`'s
ZERO_SUM_CELL_S = 6e-5  # per cell of such a game: football's 337 teams (113,569 cells), 1.9 CPU s once and 6.6 s a
# bootstrap round (139 s for 21 fits, load 8); more Newton steps per cell than the general games below


def affinity_cce_cost(size: Size, params: Mapping[str, object]) -> Cost:
    """Projected Newton on the dual, each step conjugate gradients over the gains applied to the payoff tensors:
    8e-6 CPU s per cell of the game (LiveBench's first 80 models x 23 tasks, 147,200 cells, 0.56 s; HELM's first
    120 and all 216 models x 70 scenarios, 1.0M and 3.3M cells, 7.9 and 24 s), and a fit's own `CCE_PER_FIT_S`.
    The payoffs and the gains' few tensors of 8-byte cells per player."""
    game = resolved_game(size, str(params["game"]), DEFAULT_GAMES)
    shape = game_shape(size, game, DEFAULT_GAMES)
    cells = math.prod(shape)
    zero_sum = game in ZERO_SUM_GAMES
    return Cost(CCE_PER_FIT_S + (ZERO_SUM_CELL_S if zero_sum else 8e-6) * cells, 4 * 8.0 * len(shape) * cells,
                "rate with nash-averaging, a 2-player game (game=agent-agent or agent-task), or fewer agents (--where)",
                f"a dual of {sum(shape):,} deviations over a game of {shape_text(shape)} strategies")


@method("affinity-cce", needs=("game_data",), cost=affinity_cce_cost,
        rules=GAME_RULES | {"kernel_variance": POSITIVE, "tol": POSITIVE})
def affinity_cce(data: GameData, *, game: str = "auto", norm: str = "minmax", kernel_variance: float = 1e-6,
                 tol: float = 1e-7) -> Ratings:
    """Regrets under the maximum relative entropy CCE to the affinity-entropy target [GTLLM]."""
    chosen = choose_game(data, game, norm, DEFAULT_GAMES)
    targets = affinity_targets(chosen, kernel_variance)
    sigma, info = max_relative_entropy_cce(chosen, targets, tol=tol)
    return _finish(chosen, sigma, tol, targets, info)


TYPICAL_STEPS = 12_000  # damped steps of a trace from tau=1 to 0.01 (LiveBench: about 10,000 at 20 to 127 models)


def affinity_ne_cost(size: Size, params: Mapping[str, object]) -> Cost:
    """Each damped step costs 1.2e-4 CPU s in Python around numpy (LiveBench's first 3 and 8 models: 110-120 us a
    step) and evaluates every player's payoff gradient and the loss over the whole payoff tensor, up to 7e-9 s per
    player x cell (127 models x 23 tasks, 371,887 cells: 7.8 ms a step, 78 s in all; 2.5-3 ns at 10^4-10^5 cells),
    times the steps a trace typically takes (or `max_iter`, if fewer). The payoffs, their copy scaled to unit
    range and a step's products: a few tensors of 8-byte cells per player."""
    shape = game_shape(size, str(params["game"]), DEFAULT_GAMES)
    cells = math.prod(shape)
    steps = min(int(params["max_iter"]), TYPICAL_STEPS)
    return Cost((1.2e-4 + 7e-9 * len(shape) * cells) * steps, 4 * 8.0 * len(shape) * cells,
                "rate with affinity-cce or nash-averaging, a 2-player game (game=agent-agent or agent-task), or fewer agents "
                "(--where)", f"{steps:,} damped steps over a game of {shape_text(shape)} strategies")


@method("affinity-ne", needs=("game_data",), cost=affinity_ne_cost,
        rules=GAME_RULES | {"kernel_variance": POSITIVE, "tau": POSITIVE, "tau_min": POSITIVE, "tol": POSITIVE, "max_iter": at_least(1),
                            "decay": between(0, 1, low_open=True, high_open=True)})
def affinity_ne(data: GameData, *, game: str = "auto", norm: str = "minmax", kernel_variance: float = 1e-6,
                tau: float = 1.0, tau_min: float = 1e-2, decay: float = 0.95, tol: float = 1e-6,
                max_iter: int = 100_000) -> Ratings:
    """Regrets under the limiting logit equilibrium traced from the affinity-entropy target [GTLLM]."""
    chosen = choose_game(data, game, norm, DEFAULT_GAMES)
    targets = affinity_targets(chosen, kernel_variance)
    xs = limiting_logit_equilibrium(chosen, targets, tau=tau, tau_min=tau_min, decay=decay, tol=tol, max_iter=max_iter)
    return _finish(chosen, product(xs), tol, targets, {})
