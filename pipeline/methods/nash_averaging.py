"""Nash averaging: payoffs against the maximum-entropy Nash equilibrium of a 2-player zero-sum game.

[Bal18]; [VasE] appendices A and D; [DevR] section 3.2. The row player's strategy a is rated
r_1(a) = sum_b q*(b) G_1(a, b), the column player's strategy b is rated r_2(b) = sum_a p*(a) G_2(a, b),
where (p*, q*) is the maximum-entropy Nash equilibrium. For agent vs task that is each agent's
score against the adversarial task distribution q*, whose support is the set of tasks the
adversary keeps ("adversarial task selection").

Computation, `algorithm="ipm"` (default): (1) one interior-point solve of the game LP (HiGHS,
no crossover), which converges to a strictly complementary pair (p, q) [GT56]: each row i has
p_i > 0 or a slack v - (A q)_i > 0, not both, and likewise each column; the larger of the two
classifies it, giving both players' maximal supports; (2) the maximum-entropy strategy on each
support (below); (3) a certificate: the two max-entropy strategies are optimal, positive on their
supports, and strictly complementary off them, by more than margin = 10 tol (times the payoff
scale for slacks). Any optimal p' then has p'_i <= tol / margin off the support, since
p'^T (v - A q) = 0, so the supports are maximal. If the certificate fails (wrong candidates, or an
equilibrium probability below the margin), the supports are recomputed by the reference path.

`algorithm="lp"` (reference): the game value v by simplex, then each strategy's membership of the
maximal support by two LPs (`max_support`).

Maximum entropy on a support: L-BFGS-B on the convex dual
min_beta log sum_i exp((A beta)_i) - v sum beta, with beta free on the opponent's support (those
constraints hold with equality at every equilibrium, by strict complementarity) and beta >= 0
elsewhere; the primal is the softmax of A beta. A unique equilibrium strategy is solved for directly.
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


ALGORITHMS = ("ipm", "lp")


def _maximin_lp(a: np.ndarray) -> tuple:
    """min -v s.t. A^T p - v >= 0, sum p = 1, p >= 0; variables (p, v). The n row duals are q."""
    m, n = a.shape
    matrix = np.block([[a.T, -np.ones((n, 1))], [np.ones((1, m)), np.zeros((1, 1))]])
    return (np.r_[np.zeros(m), -1.0], matrix, np.r_[np.zeros(n), 1.0], np.r_[np.full(n, INF), 1.0],
            np.r_[np.zeros(m), -INF], np.full(m + 1, INF))


def game_value(a: np.ndarray) -> float:
    """max_p min_b (p^T A)_b, by simplex."""
    x, _ = solve_lp(*_maximin_lp(a))
    return float(x[a.shape[0]])


def complementary_supports(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Candidate maximal supports (rows, columns) and the value, from one interior-point solve.

    Without crossover, HiGHS IPM ends near the analytic centre of the optimal face, a strictly
    complementary pair [GT56]; row i is in the support when p_i exceeds its slack v - (A q)_i,
    column j when q_j exceeds its slack (A^T p)_j - v.
    """
    m, n = a.shape
    x, duals = solve_lp(*_maximin_lp(a), options={"solver": "ipm", "run_crossover": "off"})
    p, v, q = x[:m], float(x[m]), duals[:n]
    return p > v - a @ q, q > a.T @ p - v, v


def max_support(a: np.ndarray, v: float, tol: float) -> np.ndarray:
    """Rows given positive probability by some maximin strategy of the row player (reference, 2 LPs a row).

    By strict complementarity [GT56], each row i either has p_i > 0 in some maximin strategy p or a
    slack v - (A q)_i > 0 under some minimax strategy q, never both. For each row, one LP finds the
    largest p_i (over A^T p >= v - tol), another the largest slack (over A q <= v + tol); the row is
    in the support when the first exceeds the second divided by the payoff scale. Comparing the two,
    rather than thresholding one, keeps the answer clear of the LP's feasibility tolerance.
    """
    m, n = a.shape
    scale = max(float(np.abs(a).max()), 1e-300)
    maximin = np.vstack([a.T, np.ones((1, m))])
    minimax = np.vstack([a, np.ones((1, n))])
    support = np.zeros(m, bool)
    for i in range(m):
        p, _ = solve_lp(-np.eye(m)[i], maximin, np.r_[np.full(n, v - tol), 1.0], np.r_[np.full(n, INF), 1.0],
                        np.zeros(m), np.full(m, INF))
        q, _ = solve_lp(a[i], minimax, np.r_[np.full(m, -INF), 1.0], np.r_[np.full(m, v + tol), 1.0],
                        np.zeros(n), np.full(n, INF))
        support[i] = p[i] > (v - a[i] @ q) / scale
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


def _max_entropy_pair(a: np.ndarray, v: float, rows: np.ndarray, cols: np.ndarray, *, tol: float,
                      max_iter: int) -> tuple[np.ndarray, np.ndarray]:
    p = max_entropy_strategy(a, v, rows, cols, tol=tol, max_iter=max_iter)
    q = max_entropy_strategy(-a.T, -v, cols, rows, tol=tol, max_iter=max_iter)
    return p, q


def certified(a: np.ndarray, v: float, p: np.ndarray, q: np.ndarray, rows: np.ndarray, cols: np.ndarray,
              margin: float, scale: float) -> bool:
    """Positive on the supports and strictly slack off them, by more than `margin` (times `scale` for payoffs)."""
    inf = float("inf")
    return bool(min(p[rows].min(initial=inf), q[cols].min(initial=inf)) > margin
                and min((v - a @ q)[~rows].min(initial=inf), (a.T @ p - v)[~cols].min(initial=inf)) > margin * scale)


def nash_average(a: np.ndarray, *, tol: float = 1e-7, max_iter: int = 10_000,
                 algorithm: str = "ipm") -> tuple[np.ndarray, np.ndarray, float]:
    """The maximum-entropy Nash equilibrium (p*, q*) of the zero-sum game with row payoffs A, and its value."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; expected one of {ALGORITHMS}")
    scale = max(float(np.abs(a).max()), 1e-300)
    if algorithm == "ipm":
        rows, cols, v = complementary_supports(a)
        try:
            p, q = _max_entropy_pair(a, v, rows, cols, tol=tol * scale, max_iter=max_iter)
            if certified(a, v, p, q, rows, cols, 10 * tol, scale):
                return p, q, v
        except ConvergenceError:
            pass  # wrong candidate supports leave the entropy problem infeasible: take the reference path
    v = game_value(a)
    support_tol = 1e-9 * scale
    rows, cols = max_support(a, v, support_tol), max_support(-a.T, -v, support_tol)
    p, q = _max_entropy_pair(a, v, rows, cols, tol=tol * scale, max_iter=max_iter)
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
                   max_iter: int = 10_000, algorithm: str = "ipm") -> Ratings:
    """Nash averaging: expected payoff against the maximum-entropy Nash equilibrium [Bal18]."""
    chosen = choose_game(data, game, norm, DEFAULT_GAMES)
    a = zero_sum_matrix(chosen)
    p, q, v = nash_average(a, tol=tol, max_iter=max_iter, algorithm=algorithm)
    ratings = [a @ q, chosen.payoffs[1].T @ p]
    info = {"value": v} | {f"{name}_support": [s for s, m in zip(names, mass) if m > 0]
                           for name, names, mass, ids in zip(chosen.players, chosen.strategies, (p, q), chosen.ids) if ids is None}
    return game_ratings(chosen, ratings, [p, q], info=info)
