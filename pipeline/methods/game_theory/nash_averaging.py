"""Nash averaging: payoffs against the maximum-entropy Nash equilibrium of a 2-player zero-sum game.

[Bal18]; [VasE] appendices A and D; [DevR] section 3.2. The row player's strategy a is rated
r_1(a) = sum_b q*(b) G_1(a, b), the column player's strategy b is rated r_2(b) = sum_a p*(a) G_2(a, b),
where (p*, q*) is the maximum-entropy Nash equilibrium. For agent vs task that is each agent's
score against the adversarial task distribution q*, whose support is the set of tasks the
adversary keeps ("adversarial task selection").

Three steps, on payoffs divided by their largest magnitude:
1. **Maximal supports** R and C: the rows (columns) given positive probability by some optimal
   strategy. `algorithm="ipm"` (default) reads them from one interior-point solve of the game LP
   (HiGHS without crossover and without presolve, whose reductions would move the point off the
   centre, run to a relative gap of 1e-12), which ends near a strictly complementary pair (p, q)
   [GT56]: each row i has p_i > 0 or a slack max(A q) - (A q)_i > 0, not both, and likewise each
   column; the larger of the two classifies it. `algorithm="lp"` (the reference, and the fallback)
   computes them exactly: the essential set [DL99] of the symmetric zero-sum game
       B = [[0, A', -1], [-A'^T, 0, 1], [1, -1, 0]]    (A' = A shifted to entries >= 1, value > 0),
   one LP with no tolerance on the game value (B has value 0 exactly): the optimal strategies of
   B are (s p, s q, s v) for the optimal pairs (p, q) of A, so its essential set is R, C and the
   last coordinate. (HiGHS fails on that LP for a few near-degenerate games; the method then says so.)
2. **Maximum entropy on the supports**, without the value: every p on R with (A^T p)_j equal for
   j in C and no smaller elsewhere is optimal (its payoff against an optimal q on C is v), so p*
   maximises H(p) subject to (A_j - A_c)^T p = 0 for j in C and >= 0 for j outside C (c the first
   column of C); likewise q*. Solved by `pipeline.methods.numerics.max_entropy` (projected Newton on the
   dual, certified on its KKT residual).
3. **A certificate**: both strategies certified by Newton, and the duality gap
   max_i (A q)_i - min_j (A^T p)_j at most `tol` times the payoff scale (both optimal). For the
   interior-point supports, moreover, no optimal strategy may give an excluded strategy more than
   10 `tol`: with the interior-point pair's gap g and an excluded row's slack s, any optimal p' has
   p'_i <= g / s (`excluded_mass`). If the interior-point supports fail, the exact supports are
   used and `info["support_path"]` says so, with why (`info["interior_point"]`); if those fail
   too, a one-line `ConvergenceError` gives both reasons. Over 10,000 random normal games and
   4,000 normal, antisymmetric, small-integer and 0/1 games (2..15 strategies) no game failed and
   none needed the fallback; L-BFGS-B with the default interior point failed 2 of the 10,000.

Ties: ratings closer than `tol` times the payoff scale share a rank (`info["tie_tolerance"]`): at
the equilibrium every strategy of a support is rated exactly the value, and solver noise (1e-16
on rock-paper-scissors) must not order them. Degenerate games: a player with one strategy plays
it; constant payoffs make every strategy optimal, and the ratings all equal the constant.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from pipeline.games import Game
from pipeline.methods.convergence import ConvergenceError, RatingError
from pipeline.methods.game_theory.equilibria import (GAME_RULES, GameData, choose_game, constant_sum, game_ratings, game_shape,
                                                   shape_text)
from pipeline.methods.numerics import highs, max_entropy
from pipeline.methods.numerics.zero_sum import essential_set
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import POSITIVE, Cost, Size, method, one_of

DEFAULT_GAMES = {"scores": "agent-task", "battles": "agent-agent"}
ALGORITHMS = ("ipm", "lp")
IPM_TOLERANCE = 1e-12  # HiGHS's relative duality gap for the interior point (its default is 1e-8)
ROUNDING = 1e-15  # per strategy: the least duality gap an interior-point pair is credited with


def _maximin_lp(a: np.ndarray) -> tuple:
    """max v s.t. A^T p - v >= 0, sum p = 1, p >= 0; variables (p, v). The n row duals are q."""
    m, n = a.shape
    matrix = np.block([[a.T, -np.ones((n, 1))], [np.ones((1, m)), np.zeros((1, 1))]])
    return (np.r_[np.zeros(m), -1.0], matrix, np.r_[np.zeros(n), 1.0], np.r_[np.full(n, highs.INF), 1.0],
            np.r_[np.zeros(m), -highs.INF], np.full(m + 1, highs.INF))


def game_value(a: np.ndarray) -> float:
    """max_p min_b (p^T A)_b, by simplex."""
    return float(highs.solve("nash-averaging game value", *_maximin_lp(a)).x[a.shape[0]])


@dataclass(frozen=True)
class InteriorPoint:
    """The interior-point pair on payoffs scaled to magnitude 1: strategies, their duality gap, supports."""

    p: np.ndarray
    q: np.ndarray
    gap: float
    rows: np.ndarray
    cols: np.ndarray
    row_slack: np.ndarray  # max_k (A q)_k - (A q)_i
    col_slack: np.ndarray  # (A^T p)_j - min_k (A^T p)_k


def complementary_supports(a: np.ndarray) -> InteriorPoint:
    """Candidate maximal supports from one interior-point solve, run to a duality gap near 1e-12.

    Without crossover, HiGHS IPM ends near the analytic centre of the optimal face, a strictly
    complementary pair [GT56]: at its end p_i (v - (A q)_i) is about the barrier parameter for every
    row, so row i is in the support when p_i exceeds its slack, and column j when q_j exceeds its.
    The tight tolerance keeps rows whose slack is as small as 1e-6 of the payoff scale apart.
    """
    m, n = a.shape
    scaled = a / max(float(np.abs(a).max()), np.finfo(float).tiny)
    solution = highs.solve("nash-averaging interior point", *_maximin_lp(scaled),
                           options={"solver": "ipm", "run_crossover": "off", "presolve": "off",
                                    "ipm_optimality_tolerance": IPM_TOLERANCE})
    p, q = np.clip(solution.x[:m], 0.0, None), np.clip(solution.row_duals[:n], 0.0, None)
    p, q = p / p.sum(), q / q.sum()
    payoff, loss = scaled @ q, scaled.T @ p
    row_slack, col_slack = payoff.max() - payoff, loss - loss.min()
    return InteriorPoint(p, q, duality_gap(scaled, p, q), p > row_slack, q > col_slack, row_slack, col_slack)


def exact_supports(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The maximal supports (rows, columns), as the essential set of the symmetrised game (see module doc)."""
    m, n = a.shape
    shifted = a / max(float(np.abs(a).max()), np.finfo(float).tiny)
    shifted = shifted - shifted.min() + 1.0  # value >= 1 > 0, so every optimal strategy of B has s v > 0
    b = np.zeros((m + n + 1, m + n + 1))
    b[:m, m:m + n], b[m:m + n, :m] = shifted, -shifted.T
    b[:m, -1], b[-1, :m], b[m:m + n, -1], b[-1, m:m + n] = -1.0, 1.0, 1.0, -1.0
    support = essential_set(b)
    return support[:m], support[m:m + n]


def max_entropy_strategy(a: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> max_entropy.Solution:
    """argmax H(p) over p on `rows` with (A^T p)_j equal on `cols` and no smaller elsewhere (full length q)."""
    sub = a[rows] / max(float(np.abs(a).max()), np.finfo(float).tiny)
    first = int(np.flatnonzero(cols)[0])
    others = np.flatnonzero(cols)[1:]
    outside = np.flatnonzero(~cols)
    found = max_entropy.maximise((sub[:, others] - sub[:, [first]]).T, (sub[:, outside] - sub[:, [first]]).T,
                                 int(rows.sum()))
    full = np.zeros(a.shape[0])
    full[rows] = found.q
    return dataclasses.replace(found, q=full)


def excluded_mass(point: InteriorPoint) -> float:
    """A bound on the probability any optimal strategy gives a strategy outside the candidate supports.

    For an excluded row i, any optimal p' and the interior-point pair (p, q): p'^T A q >= v (p' is
    optimal) and (A q)_k <= max(A q) for every k, so p'_i (max(A q) - (A q)_i) <= max(A q) - v <= gap,
    and p'_i <= gap / slack_i; likewise for columns."""
    slack = min(point.row_slack[~point.rows].min(initial=np.inf), point.col_slack[~point.cols].min(initial=np.inf))
    gap = max(point.gap, ROUNDING * (len(point.p) + len(point.q)))  # a gap of 0.0 is rounding, not exactness
    return 0.0 if slack == np.inf else (np.inf if slack <= 0 else gap / slack)


def duality_gap(a: np.ndarray, p: np.ndarray, q: np.ndarray) -> float:
    """max_i (A q)_i - min_j (A^T p)_j: how far the pair is from optimal, in payoff units (>= 0 up to rounding)."""
    return float((a @ q).max() - (a.T @ p).min())


def _equilibrium(a: np.ndarray, rows: np.ndarray, cols: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray, str | None]:
    """Max-entropy strategies on given supports, and why they fail the certificate (None when they pass)."""
    row = max_entropy_strategy(a, rows, cols)
    col = max_entropy_strategy(-a.T, cols, rows)
    gap = duality_gap(a, row.q, col.q)
    scale = max(float(np.abs(a).max()), np.finfo(float).tiny)
    if not (row.converged and col.converged):
        return row.q, col.q, (f"maximum-entropy KKT residuals {row.residual:.1e} (rows) and {col.residual:.1e} "
                              f"(columns) after {row.iterations} and {col.iterations} steps")
    if gap > tol * scale:
        return row.q, col.q, f"duality gap {gap:.1e} > tol {tol * scale:.1e}"
    return row.q, col.q, None


def nash_average(a: np.ndarray, *, tol: float = 1e-7, algorithm: str = "ipm") -> tuple[np.ndarray, np.ndarray, float]:
    """The maximum-entropy Nash equilibrium (p*, q*) of the zero-sum game with row payoffs A, and its value."""
    p, q, _ = nash_equilibrium(a, tol=tol, algorithm=algorithm)
    return p, q, float(p @ a @ q)


def nash_equilibrium(a: np.ndarray, *, tol: float = 1e-7,
                     algorithm: str = "ipm") -> tuple[np.ndarray, np.ndarray, dict[str, object]]:
    """(p*, q*) and diagnostics: which supports were used, and why the interior-point ones were not."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; expected one of {ALGORITHMS}")
    if algorithm == "ipm":
        try:
            point = complementary_supports(a)
        except RatingError as error:  # HiGHS's interior point without crossover may end undecided
            point, failed = None, str(error)
        else:
            failed = "an empty support"
        if point is not None and point.rows.any() and point.cols.any():
            p, q, failed = _equilibrium(a, point.rows, point.cols, tol)
            if failed is None and excluded_mass(point) > 10 * tol:
                failed = (f"excluded strategies not certified: interior-point gap {point.gap:.1e} allows them "
                          f"probability {excluded_mass(point):.1e} > 10 tol")
        if failed is None:
            return p, q, {"support_path": "interior point"}
        info = {"support_path": "exact (fallback)", "interior_point": failed}
    else:
        info = {"support_path": "exact"}
    game = f"nash-averaging: no certified equilibrium of the {a.shape[0]}x{a.shape[1]} game"
    before = f" (interior point: {info['interior_point']})" if "interior_point" in info else ""
    try:
        rows, cols = exact_supports(a)
    except RatingError as error:
        raise ConvergenceError(f"{game}: the exact supports failed: {error}{before}") from None
    p, q, failed = _equilibrium(a, rows, cols, tol)
    if failed is not None:
        raise ConvergenceError(f"{game} on its exact supports ({int(rows.sum())} rows, {int(cols.sum())} columns): "
                               f"{failed}{before}")
    return p, q, info


def zero_sum_matrix(game: Game) -> np.ndarray:
    if game.n_players != 2:
        raise ValueError(f"Nash averaging rates 2-player zero-sum games, not {game.n_players}-player ones")
    if not constant_sum(game):
        raise ValueError("Nash averaging needs a zero-sum (or constant-sum) game")
    return game.payoffs[0]


def nash_averaging_cost(size: Size, params: Mapping[str, object]) -> Cost:
    """The interior-point solve and the exact supports' LP over the symmetrised game of m + n + 1 strategies, a
    dense matrix: 8.5e-12 CPU s per (half the strategies)^4, fitted on two cells of the full matrix run, football's
    337 teams (0.05 s) and WTA's 2,692 players (448 s, at the end of which HiGHS stopped with a solve error on the
    exact supports); a conservative power between them (the two cells give 4.4). A fit's own 0.02 s on small games
    (HELM's and LiveBench's scores, 21 fits: 0.46 and 0.23 CPU s) is paid every bootstrap round."""
    shape = game_shape(size, str(params["game"]), DEFAULT_GAMES)
    strategies = sum(shape)
    return Cost(0.02 + 8.5e-12 * (strategies / 2) ** 4, 4 * 8.0 * (strategies + 1) ** 2,
                "rate with maximal-lotteries (the same game's essential set, on the sparse margins) or "
                "iterative-maximal-lotteries, or fewer agents (--where)",
                f"LPs over a game of {shape_text(shape)} strategies")


@method("nash-averaging", needs=("game_data",), rules=GAME_RULES | {"tol": POSITIVE, "algorithm": one_of(*ALGORITHMS)},
        cost=nash_averaging_cost)
def nash_averaging(data: GameData, *, game: str = "auto", norm: str = "minmax", tol: float = 1e-7,
                   algorithm: str = "ipm") -> Ratings:
    """Nash averaging: expected payoff against the maximum-entropy Nash equilibrium [Bal18]."""
    chosen = choose_game(data, game, norm, DEFAULT_GAMES)
    a = zero_sum_matrix(chosen)
    p, q, found = nash_equilibrium(a, tol=tol, algorithm=algorithm)
    ratings = [a @ q, chosen.payoffs[1].T @ p]
    tie = tol * max(float(np.abs(a).max()), float(np.abs(chosen.payoffs[1]).max()))
    info = {"value": float(p @ a @ q), **found, "tie_tolerance": tie} | {
        f"{name}_support": [s for s, m in zip(names, mass) if m > 0]
        for name, names, mass, ids in zip(chosen.players, chosen.strategies, (p, q), chosen.ids) if ids is None}
    return game_ratings(chosen, ratings, [p, q], info=info, tie_tolerance=tie)
