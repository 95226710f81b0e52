"""Nash averaging: payoffs against the maximum-entropy Nash equilibrium of a 2-player zero-sum game.

[Bal18]; [VasE] appendices A and D; [DevR] section 3.2. The row player's strategy a is rated
r_1(a) = sum_b q*(b) G_1(a, b), the column player's strategy b is rated r_2(b) = sum_a p*(a) G_2(a, b),
where (p*, q*) is the maximum-entropy Nash equilibrium. For agent vs task that is each agent's
score against the adversarial task distribution q*, whose support is the set of tasks the
adversary keeps ("adversarial task selection").

Computation: (1) the game value v by LP (HiGHS); (2) each player's maximal equilibrium support,
by one LP over the cone {y >= 0 : A^T y >= v 1^T y} maximising sum_i min(y_i, 1); (3) the
maximum-entropy strategy on that support, by L-BFGS-B on the convex dual
min_beta log sum_i exp((A beta)_i) - v sum beta, with beta free on the opponent's support (those
constraints hold with equality at every equilibrium, by strict complementarity) and beta >= 0
elsewhere; the primal is the softmax of A beta.
"""

from __future__ import annotations

import highspy
import numpy as np
import scipy.optimize as so
from scipy.special import logsumexp, softmax

from pipeline.games import Game
from pipeline.methods.equilibria import GameData, choose_game, game_ratings, solve_lp
from pipeline.methods.convergence import ConvergenceError
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import method

DEFAULT_GAMES = {"scores": "agent-task", "battles": "agent-agent"}
INF = highspy.kHighsInf


def game_value(a: np.ndarray) -> float:
    """max_p min_b (p^T A)_b: min -v s.t. A^T p - v >= 0, sum p = 1, p >= 0."""
    m, n = a.shape
    matrix = np.block([[a.T, -np.ones((n, 1))], [np.ones((1, m)), np.zeros((1, 1))]])
    x, _ = solve_lp(np.r_[np.zeros(m), -1.0], matrix, np.r_[np.zeros(n), 1.0], np.r_[np.full(n, INF), 1.0],
               np.r_[np.zeros(m), -INF], np.full(m + 1, INF))
    return float(x[m])


def max_support(a: np.ndarray, v: float, tol: float, min_mass: float = 1e-5) -> np.ndarray:
    """Rows given probability > `tol` by some maximin strategy of the row player.

    Candidates from one LP: p in the equilibrium set {p >= 0, sum p <= 1, A^T p >= (v - tol) sum p},
    s_i <= 1, s_i <= p_i m / min_mass, maximise sum s (the mean of the equilibria maximising each
    p_i is feasible, so each row with max p_i >= min_mass gets s_i = 1). Each candidate is then
    confirmed by the LP max p_i over the equilibrium set, since the scaling by m / min_mass
    magnifies the LP's feasibility tolerance.
    """
    m, n = a.shape
    eye = np.eye(m)
    k = m / min_mass
    matrix = np.block([[(a - (v - tol)).T, np.zeros((n, m))], [-k * eye, eye], [np.ones((1, m)), np.zeros((1, m))]])
    x, _ = solve_lp(np.r_[np.zeros(m), -np.ones(m)], matrix, np.r_[np.zeros(n), np.full(m + 1, -INF)],
               np.r_[np.full(n, INF), np.zeros(m), 1.0], np.zeros(2 * m), np.r_[np.full(m, INF), np.ones(m)])
    support = x[m:] > 1e-3
    equilibria = np.vstack([a.T, np.ones((1, m))])
    for i in np.flatnonzero(support):
        p, _ = solve_lp(-np.eye(m)[i], equilibria, np.r_[np.full(n, v - tol), 1.0], np.r_[np.full(n, INF), 1.0],
                   np.zeros(m), np.full(m, INF))
        support[i] = p[i] > 1e-7
    return support


def max_entropy_strategy(a: np.ndarray, v: float, rows: np.ndarray, tight: np.ndarray, *, tol: float,
                         max_iter: int) -> np.ndarray:
    """argmax H(p) over p on `rows` with (A^T p)_j = v on `tight` columns and >= v elsewhere."""
    sub = a[rows]
    equalities = np.vstack([sub[:, tight].T, np.ones((1, sub.shape[0]))])
    if sub.shape[0] == 1:
        p = np.ones(1)
    elif np.linalg.matrix_rank(equalities) == sub.shape[0]:  # a unique equilibrium strategy: solve for it
        p = np.linalg.lstsq(equalities, np.r_[np.full(int(tight.sum()), v), 1.0], rcond=None)[0]
    else:
        def dual(beta: np.ndarray) -> tuple[float, np.ndarray]:
            logits = sub @ beta
            return float(logsumexp(logits) - v * beta.sum()), sub.T @ softmax(logits) - v

        bounds = [(None, None) if t else (0.0, None) for t in tight]
        result = so.minimize(dual, np.zeros(a.shape[1]), jac=True, method="L-BFGS-B", bounds=bounds,
                             options={"maxiter": max_iter, "gtol": tol * 1e-3, "ftol": 0.0})
        p = softmax(sub @ result.x)
    slack = sub.T @ p - v
    violation = max(np.abs(slack[tight]).max(initial=0.0), -slack.min(initial=0.0))
    if violation > tol:
        raise ConvergenceError(f"maximum-entropy equilibrium: constraint violation {violation:.3g} > tol {tol:g} "
                               f"after {max_iter} iterations")
    full = np.zeros(a.shape[0])
    full[rows] = p
    return full


def nash_average(a: np.ndarray, *, tol: float = 1e-7, max_iter: int = 10_000) -> tuple[np.ndarray, np.ndarray, float]:
    """The maximum-entropy Nash equilibrium (p*, q*) of the zero-sum game with row payoffs A, and its value."""
    scale = max(float(np.abs(a).max()), 1e-300)
    v = game_value(a)
    support_tol = 1e-9 * scale
    rows, cols = max_support(a, v, support_tol), max_support(-a.T, -v, support_tol)
    p = max_entropy_strategy(a, v, rows, cols, tol=tol * scale, max_iter=max_iter)
    q = max_entropy_strategy(-a.T, -v, cols, rows, tol=tol * scale, max_iter=max_iter)
    return p, q, v


def zero_sum_matrix(game: Game) -> np.ndarray:
    if game.n_players != 2:
        raise ValueError(f"Nash averaging rates 2-player zero-sum games, not {game.n_players}-player ones")
    total = game.payoffs[0] + game.payoffs[1]
    if np.ptp(total) > 1e-9 * max(1.0, float(np.abs(total).max())):
        raise ValueError("Nash averaging needs a zero-sum (or constant-sum) game")
    return game.payoffs[0]


@method("nash-averaging", needs=("game_data",))
def nash_averaging(data: GameData, *, game: str = "auto", norm: str = "minmax", tol: float = 1e-7,
                   max_iter: int = 10_000) -> Ratings:
    """Nash averaging: expected payoff against the maximum-entropy Nash equilibrium [Bal18]."""
    chosen = choose_game(data, game, norm, DEFAULT_GAMES)
    a = zero_sum_matrix(chosen)
    p, q, v = nash_average(a, tol=tol, max_iter=max_iter)
    ratings = [a @ q, chosen.payoffs[1].T @ p]
    info = {"value": v} | {f"{name}_support": [s for s, m in zip(names, mass) if m > 0]
                           for name, names, mass, ids in zip(chosen.players, chosen.strategies, (p, q), chosen.ids) if ids is None}
    params = {"game": chosen.info.get("game", "nfg"), "norm": norm, "tol": tol, "max_iter": max_iter}
    return game_ratings("nash-averaging", params, chosen, ratings, [p, q], info=info)
