"""Equilibrium ratings with the affinity-entropy target [GTLLM] sections 3.2-3.3, appendices A-B.

Target: for each player i, t_i = argmax over the simplex of the affinity entropy with p = 1,
H(x) = 1 - ||U x||^2 with U = K diag(1 / ||K_:j||_2) ([GTLLM] definition 1 and the remark on
U(p) in appendix B), K = exp(-D / (2 kernel_variance)) an RBF kernel on the strategic
dissimilarity D(a, b) = mean over a_-i of (u_i(a, a_-i) - u_i(b, a_-i))^2 ([GTLLM] eq. 6-7). The
maximiser is found by exponentiated gradient from the uniform strategy (exact clones keep equal
mass, so the target spreads each clone group's share evenly), stopped when the Frank-Wolfe gap is
below `tol`.

- `affinity-cce`: the CCE of maximum relative entropy to t = prod_i t_i, by minimising the convex
  dual L(alpha) = log sum_a exp(log t(a) - sum_i sum_a' alpha_i(a') [u_i(a', a_-i) - u_i(a)]) over
  alpha >= 0 (L-BFGS-B with bounds, in place of the paper's softplus parametrisation and Adam);
  the primal is the softmax of the logits ([GTLLM] appendix A, eq. 8).
- `affinity-ne`: the limiting logit equilibrium traced from the target: at each temperature tau
  the QRE x_i = softmax(grad_i u_i(x) / tau + log t_i) is found by damped fixed-point iteration
  from the previous one, until the loss of [GTLLM] eq. (4), sum_i u^tau_i(BR_i, x_-i) -
  u^tau_i(x_i, x_-i), is below `tol`; tau is then multiplied by `decay`, down to `tau_min`.

Ratings are the regrets of deviating to each action under the equilibrium, u_i(a_i, x_-i) - u_i(x)
([GTLLM] section 3); gains within the solver tolerance of zero are reported as 0. Contributions by
the last player's actions follow [GTLLM] section 4.3.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize as so
from scipy.spatial.distance import cdist
from scipy.special import logsumexp, softmax

from pipeline.games import Game, deviation_payoff, marginals, product
from pipeline.methods.equilibria import GameData, choose_game, game_ratings
from pipeline.methods.convergence import ConvergenceError
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import method

DEFAULT_GAMES = {"scores": "agent-agent-task", "battles": "model-model-prompt"}


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
    raise ConvergenceError(f"affinity entropy not maximised to tol {tol:g} in {max_iter} iterations")


def _targets(game: Game, kernel_variance: float) -> list[np.ndarray]:
    return [affinity_target(g, p, kernel_variance=kernel_variance) for p, g in enumerate(game.payoffs)]


def _scale(game: Game) -> float:
    return max(max(float(np.ptp(g)) for g in game.payoffs), 1e-300)


def max_relative_entropy_cce(game: Game, targets: list[np.ndarray], *, tol: float = 1e-7,
                             max_iter: int = 10_000) -> np.ndarray:
    """The CCE closest in relative entropy to the product of `targets` ([GTLLM] appendix A)."""
    log_t = sum(np.expand_dims(np.log(t), tuple(a for a in range(game.n_players) if a != p)) for p, t in enumerate(targets))
    sizes = np.cumsum((0,) + game.shape)

    def logits(alpha: np.ndarray) -> np.ndarray:
        out = log_t.copy()
        for p, g in enumerate(game.payoffs):
            a = alpha[sizes[p]: sizes[p + 1]]
            out -= np.expand_dims(np.tensordot(a, g, axes=(0, p)), p) - a.sum() * g
        return out

    def dual(alpha: np.ndarray) -> tuple[float, np.ndarray]:
        l = logits(alpha)
        x = np.exp(l - logsumexp(l))
        return float(logsumexp(l)), -np.concatenate(game.gains(x))

    scale = _scale(game)
    result = so.minimize(dual, np.zeros(sizes[-1]), jac=True, method="L-BFGS-B", bounds=[(0.0, None)] * sizes[-1],
                         options={"maxiter": max_iter, "gtol": tol * scale * 1e-2, "ftol": 0.0, "maxfun": 2 * max_iter})
    l = logits(result.x)
    x = np.exp(l - logsumexp(l))
    worst = max(float(g.max()) for g in game.gains(x))
    if worst > tol * scale:
        raise ConvergenceError(f"affinity CCE: largest deviation gain {worst:.3g} > tol {tol * scale:.3g} after {result.nit} iterations")
    return x


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


def limiting_logit_equilibrium(game: Game, targets: list[np.ndarray], *, tau: float = 1.0, tau_min: float = 1e-2,
                               decay: float = 0.95, tol: float = 1e-6, max_iter: int = 100_000) -> list[np.ndarray]:
    """QREs traced from `targets` at temperature tau (payoffs divided by their range) down to tau_min."""
    scale = _scale(game)
    unit = Game(tuple(g / scale for g in game.payoffs), game.players, game.strategies)
    xs = [t.copy() for t in targets]
    iterations = 0
    while True:
        step = min(0.5, tau)
        while qre_loss(unit, xs, targets, tau) > tol:
            if iterations >= max_iter:
                raise ConvergenceError(f"affinity NE: QRE at tau={tau:.3g} not reached to tol {tol:g} in {max_iter} iterations")
            grads = _partials(unit, xs)
            xs = [(1 - step) * x + step * softmax(gr / tau + np.log(t)) for x, gr, t in zip(xs, grads, targets)]
            iterations += 1
        if tau <= tau_min:
            return xs
        tau = max(tau * decay, tau_min)


def _regret_ratings(game: Game, sigma: np.ndarray, tol: float) -> list[np.ndarray]:
    cut = tol * _scale(game)
    return [np.where(np.abs(r) <= cut, 0.0, r) for r in game.gains(sigma)]


def _finish(game: Game, sigma: np.ndarray, tol: float, targets) -> Ratings:
    contributions = game.contributions(sigma, 0, game.n_players - 1) if game.n_players > 1 else None
    info = {"targets": {p: t.tolist() for p, t in zip(game.players, targets)}} if game.ids[0] is None else {}
    return game_ratings(game, _regret_ratings(game, sigma, tol), marginals(sigma), contributions=contributions, info=info)


@method("affinity-cce", needs=("game_data",))
def affinity_cce(data: GameData, *, game: str = "auto", norm: str = "minmax", kernel_variance: float = 1e-6,
                 tol: float = 1e-7, max_iter: int = 10_000) -> Ratings:
    """Regrets under the maximum relative entropy CCE to the affinity-entropy target [GTLLM]."""
    chosen = choose_game(data, game, norm, DEFAULT_GAMES)
    targets = _targets(chosen, kernel_variance)
    sigma = max_relative_entropy_cce(chosen, targets, tol=tol, max_iter=max_iter)
    return _finish(chosen, sigma, tol, targets)


@method("affinity-ne", needs=("game_data",))
def affinity_ne(data: GameData, *, game: str = "auto", norm: str = "minmax", kernel_variance: float = 1e-6,
                tau: float = 1.0, tau_min: float = 1e-2, decay: float = 0.95, tol: float = 1e-6,
                max_iter: int = 100_000) -> Ratings:
    """Regrets under the limiting logit equilibrium traced from the affinity-entropy target [GTLLM]."""
    chosen = choose_game(data, game, norm, DEFAULT_GAMES)
    targets = _targets(chosen, kernel_variance)
    xs = limiting_logit_equilibrium(chosen, targets, tau=tau, tau_min=tau_min, decay=decay, tol=tol, max_iter=max_iter)
    return _finish(chosen, product(xs), tol, targets)
