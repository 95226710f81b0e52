"""Deviation ratings: clone-invariant ratings of N-player general-sum games [DevR].

r_p(a'_p) = delta_p(a'_p) under the strictest coarse correlated equilibrium ([DevR] equation 4),
by algorithm 1 of [DevR] section 4.1: minimise the largest deviation gain over the (player,
strategy) pairs not yet frozen, subject to the frozen gains staying at their values; freeze the
constraints whose duals are nonzero (the active ones) at the optimum; repeat until all are frozen.
A frozen constraint is kept as delta <= r rather than delta = r: the optimal duals show the two
are equivalent (a dual-weighted mean of gains bounded by r that equals r), and the inequality
keeps every LP feasible under rounding. Its bound is r or the gain of the last LP's solution,
whichever is larger: HiGHS returns solutions that break rows within its feasibility tolerance, and
bounds at r exactly tightened with every LP until one was infeasible (the football agent-agent
game of 157 teams, whose ratings are mostly within 1e-6 of 0, after 60 LPs). With the bounds the
last solution meets, every LP has a feasible point; the rating stays r. The LPs run at feasibility
tolerances of `LP_TOLERANCE`, below the default 1e-7 that such ratings are made of.

Appendix A.1: players whose payoffs are symmetric under a swap (agent A and agent B) are solved
for symmetric equilibria only (columns averaged over the swap, the second player's constraint
rows dropped as copies of the first's), and repeated joint columns are merged into one variable
(mass spread evenly over the copies afterwards). Appendix A.2: the constraint matrix, divided by
the largest payoff range (the unit of every LP, so that HiGHS's tolerances and ours are relative),
is rounded to `decimals` places. `symmetries=False` is the plain formulation, kept as a reference.
Each LP is solved by column generation over the joint strategies (its optimum needs at most one
column per constraint row); `column_generation=False` passes all columns to HiGHS at once.

Tolerances, in units of the payoff range: a gain within `TOLERANCE` (1e-9) of the LP's eps is
tight, a reduced cost above -1e-9 prices no new column, and ratings within `TIE_TOLERANCE` (1e-9)
share a rank (strategies frozen in different LPs at the same value differ by rounding only).
A constraint is active when its dual exceeds `dual_tol` (duals are dimensionless: they sum to 1).
All LPs go through `pipeline.methods.numerics.highs`; `max_iter` LPs without every constraint frozen is a
one-line `ConvergenceError`. Battles without prompts are rated as `agent-agent` under `game=auto`.
A game whose dense constraint matrix would exceed `MAX_CONSTRAINT_ENTRIES` is refused in one line
before it is built.

Ratings are <= 0; in 2-player zero-sum games they equal Nash averaging minus the game value
([DevR] property 8). Contributions c(a'_p, t) by the last player's strategies sum to the rating
([DevR] section 5.2).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp

from pipeline.games import Game
from pipeline.methods.convergence import ConvergenceError, RatingError
from pipeline.methods.game_theory.equilibria import GAME_RULES, GameData, choose_game, game_ratings, game_shape, payoff_range, shape_text
from pipeline.methods.numerics import highs
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import Cost, Size, between, method

DEFAULT_GAMES = {"scores": "agent-agent-task", "battles": "model-model-prompt"}
TOLERANCE = 1e-9  # of the payoff range: gains this close to eps are tight, reduced costs this small are 0
TIE_TOLERANCE = 1e-9  # of the payoff range: ratings this close share a rank
LP_TOLERANCE = 1e-9  # of the payoff range: HiGHS's primal and dual feasibility tolerances
LP_OPTIONS = {"primal_feasibility_tolerance": LP_TOLERANCE, "dual_feasibility_tolerance": LP_TOLERANCE}
# The dense constraint matrix (a row per player's strategy, a column per joint strategy) and its copies
# are built in float64: 2**27 entries are 1 GiB each. LiveBench's 314 models x 28 tasks as agent-agent-task
# would have needed 14 GiB, and the process was killed by the kernel.
MAX_CONSTRAINT_ENTRIES = 2**27


def constraint_matrix(game: Game) -> np.ndarray:
    """A[c, a] = G_p(a'_p, a_-p) - G_p(a) for rows c = (p, a'_p), players in order; joints flat."""
    rows = []
    for p, g in enumerate(game.payoffs):
        deviate = np.expand_dims(np.moveaxis(g, p, 0), p + 1)  # (k_p, ..., 1 at p, ...)
        rows.append((deviate - g[None]).reshape(game.shape[p], -1))
    return np.concatenate(rows)


def symmetric_pairs(game: Game, tol: float = 1e-12) -> list[tuple[int, int]]:
    """Disjoint pairs of players (p, q) whose swap maps the game to itself."""
    pairs, used = [], set()
    for p in range(game.n_players):
        for q in range(p + 1, game.n_players):
            if p not in used and q not in used and game.symmetric(p, q, tol):
                pairs.append((p, q))
                used |= {p, q}
    return pairs


def solve_full(cols: np.ndarray, frozen: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    """min eps s.t. cols @ s - eps [c not frozen] <= values [c frozen], sum s = 1, s >= 0.

    Returns s, eps, the row activities (gains), and the row duals (gain rows, then the sum row)."""
    c, n = cols.shape
    matrix = np.vstack([np.hstack([cols, -(~frozen).astype(np.float64)[:, None]]), np.r_[np.ones(n), 0.0][None, :]])
    def program(slack: float) -> tuple:
        return ("deviation ratings", np.r_[np.zeros(n), 1.0], matrix, np.r_[np.full(c, -highs.INF), 1.0],
                np.r_[np.where(frozen, values + slack, 0.0), 1.0], np.r_[np.zeros(n), -highs.INF], np.full(n + 1, highs.INF))
    try:
        solution = highs.solve(*program(0.0), options=LP_OPTIONS)
    except highs.Infeasible:  # the last solution is feasible: HiGHS misjudged rows tight at their bounds
        solution = highs.solve(*program(LP_TOLERANCE), options=LP_OPTIONS | {"presolve": "off"})
    x = solution.x
    return x[:n], float(x[n]), cols @ x[:n], solution.row_duals


def _solve(cols: np.ndarray, frozen: np.ndarray, values: np.ndarray, work: np.ndarray,
           batch: int) -> tuple[np.ndarray, float, np.ndarray, np.ndarray, np.ndarray]:
    """`solve_full` by column generation: solve over the columns `work`, add the columns of most
    negative reduced cost -(cols_j . y + mu) under the restricted duals, until none is negative
    (then the restricted optimum and duals are optimal for all columns). Returns also the new work set."""
    while True:
        s_work, eps, _, duals = solve_full(cols[:, work], frozen, values)
        reduced = -(duals[:-1] @ cols + duals[-1])
        reduced[work] = 0.0
        entering = np.flatnonzero(reduced < -TOLERANCE)
        if not len(entering):
            s = np.zeros(cols.shape[1])
            s[work] = s_work
            return s, eps, cols @ s, np.abs(duals[:-1]), work
        entering = entering[np.argsort(reduced[entering], kind="stable")[:batch]]
        work = np.union1d(work, entering)


def deviation_ratings(game: Game, *, decimals: int = 14, dual_tol: float = 1e-9, symmetries: bool = True,
                      column_generation: bool = True, max_iter: int | None = None) -> tuple[list[np.ndarray], np.ndarray, dict[str, object]]:
    """Per-player deviation ratings, a joint equilibrium sigma attaining them, and diagnostics."""
    start = time.perf_counter()
    entries = sum(game.shape) * int(np.prod(game.shape, dtype=np.int64))
    if entries > MAX_CONSTRAINT_ENTRIES:
        raise RatingError(f"deviation: the game ({shape_text(game.shape)} strategies) needs {entries:,} constraint "
                          f"entries, above the limit of {MAX_CONSTRAINT_ENTRIES:,}; rate fewer agents or tasks, or a "
                          f"2-player game (game=agent-task or agent-agent)")
    scale = payoff_range(game)
    a = np.round(constraint_matrix(game) / scale, decimals)
    joints = a.shape[1]
    offsets = np.cumsum((0,) + game.shape)
    keep = np.ones(a.shape[0], bool)
    pairs = symmetric_pairs(game, TOLERANCE * scale) if symmetries else []
    index = np.indices(game.shape).reshape(game.n_players, -1)
    for p, q in pairs:  # canonical joint of each orbit: the swapped pair in increasing order
        index[p], index[q] = np.minimum(index[p], index[q]), np.maximum(index[p], index[q])
        keep[offsets[q]: offsets[q + 1]] = False
    orbit, orbit_of = np.unique(np.ravel_multi_index(tuple(index), game.shape), return_inverse=True)
    orbit_size = np.bincount(orbit_of)
    spread = sp.csr_matrix((1.0 / orbit_size[orbit_of], (np.arange(joints), orbit_of)))
    cols = np.round(np.asarray((spread.T @ a.T).T)[keep], decimals)  # (kept rows, orbits)
    if symmetries:
        unique, group_of = np.unique(cols.T, axis=0, return_inverse=True)
        cols, group_of = np.ascontiguousarray(unique.T), group_of.ravel()
    else:
        group_of = np.arange(cols.shape[1])
    frozen, values, bounds = np.zeros(cols.shape[0], bool), np.zeros(cols.shape[0]), np.zeros(cols.shape[0])
    lps, first_lp, eps = 0, None, float("nan")
    initial = work = np.argsort(cols.max(axis=0), kind="stable")[: cols.shape[0]]  # columns with small gains
    limit = cols.shape[0] if max_iter is None else max_iter
    while not frozen.all():
        if lps >= limit:
            raise ConvergenceError(f"deviation: {int((~frozen).sum())} of {len(frozen)} gain constraints not frozen "
                                   f"after {lps} LPs (eps {eps:.3g} of the payoff range)")
        lp_start = time.perf_counter()
        if column_generation:
            s, eps, gains, duals, work = _solve(cols, frozen, bounds, work, batch=max(50, cols.shape[0]))
            work = np.union1d(np.flatnonzero(s > 0), initial)  # the support stays feasible for the next LP
        else:
            s, eps, gains, duals = solve_full(cols, frozen, bounds)
            duals = np.abs(duals[:-1])
        first_lp = time.perf_counter() - lp_start if first_lp is None else first_lp
        lps += 1
        active = ~frozen & (duals > dual_tol)
        if not active.any():  # degenerate duals: freeze the tight constraints instead
            active = ~frozen & (gains >= eps - TOLERANCE)
        frozen |= active
        values[active] = eps
        bounds[frozen] = np.maximum(np.where(active, eps, bounds), gains)[frozen]  # s stays feasible
    rows = np.zeros(a.shape[0])
    rows[keep] = values
    for p, q in pairs:
        rows[offsets[q]: offsets[q + 1]] = rows[offsets[p]: offsets[p + 1]]
    group_size = np.bincount(group_of)
    sigma = (s[group_of] / group_size[group_of])[orbit_of] / orbit_size[orbit_of]
    ratings = [rows[offsets[p]: offsets[p + 1]] * scale for p in range(game.n_players)]
    info = {"lps": lps, "joint_strategies": int(joints), "lp_columns": int(cols.shape[1]), "lp_rows": int(cols.shape[0]),
            "symmetric_players": [[game.players[p], game.players[q]] for p, q in pairs],
            "first_lp_s": round(first_lp or 0.0, 6), "solve_s": round(time.perf_counter() - start, 6)}
    return ratings, sigma.reshape(game.shape), info


PER_FIT_S = 0.03  # a fit's own cost on the smallest games (the symmetries, the first LP's set-up): a bootstrap pays it
# every round (Arena-Hard's 2-model game, 21 fits, 0.59 CPU s, and LLMFAO's 1.2 s, past 4x a model without it)


def deviation_cost(size: Size, params: Mapping[str, object]) -> Cost:
    """A dense (rows x joints) constraint matrix, a few copies; LPs as many as rows, each over columns that grow
    with the joints: 4.3e-7 CPU s per row x joint, the median of the matrix's cells (`benchmarks/bench_matrix.py
    --fit`: football's first 2,000 to 12,000 matches, 83 to 218 teams, Arena-Hard's and LLMFAO's games at 0.96 to
    1.07x it; LiveBench's 127 x 127 x 23 game and WTA's 107 players at 0.4-0.5x; every football match, 337 teams,
    51 CPU s, 1.6x it)."""
    shape = game_shape(size, str(params["game"]), DEFAULT_GAMES)
    rows, joints = sum(shape), math.prod(shape)
    return Cost(PER_FIT_S + 4.3e-7 * rows * joints, 4 * 8.0 * rows * joints,
                "rate with nash-averaging or alpha-rank, a 2-player game (game=agent-agent or agent-task), or fewer "
                "agents (--where)", f"LPs over a {rows:,} x {joints:,} constraint matrix")


@method("deviation", needs=("game_data",), rules=GAME_RULES | {"decimals": between(0, 15)}, cost=deviation_cost)
def deviation(data: GameData, *, game: str = "auto", norm: str = "minmax", decimals: int = 14,
              symmetries: bool = True) -> Ratings:
    """Deviation ratings: gains under the strictest CCE, clone invariant in N-player games [DevR]."""
    chosen = choose_game(data, game, norm, DEFAULT_GAMES)
    ratings, sigma, info = deviation_ratings(chosen, decimals=decimals, symmetries=symmetries)
    info.pop("first_lp_s"), info.pop("solve_s")  # timings vary between runs; results must not
    contributions = chosen.contributions(sigma, 0, chosen.n_players - 1) if chosen.n_players > 1 else None
    marg = [sigma.sum(axis=tuple(a for a in range(sigma.ndim) if a != p)) for p in range(sigma.ndim)]
    tie = TIE_TOLERANCE * payoff_range(chosen)
    return game_ratings(chosen, ratings, marg, contributions=contributions, info=info | {"tie_tolerance": tie},
                        tie_tolerance=tie)
