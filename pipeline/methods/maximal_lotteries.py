"""Maximal lotteries [Fis84] and iterative maximal lotteries [VasE, appendix C.2.9, algorithm 2].

A lottery p over the agents is maximal when p^T M >= 0 column by column: no agent is preferred to
a draw from p by a majority in expectation (M is antisymmetric, so the game has value 0).

Exact and order-free, on dense or sparse margins, with HiGHS LPs (low-level API):
1. One LP finds the *essential set* S [DL99], the union of the supports of all maximal lotteries:
   maximise sum(u) over the cone p >= 0, M^T p >= 0, with 0 <= u_i <= p_i and u_i <= 1. A point of
   the cone can be scaled at will, so u_i = 1 exactly on S and 0 elsewhere.
2. Every maximal lottery is supported on S and satisfies (M^T p)_j = 0 for j in S (complementary
   slackness). So the lottery is unique exactly when the null space of M_SS^T has dimension 1,
   and then it is that null vector, normalised.
3. Otherwise the method returns the maximum-entropy maximal lottery (unique, and unchanged by a
   relabelling of the agents): the uniform lottery on S when it is maximal, else the softmax
   given by the minimiser of the convex dual (L-BFGS-B, feasible to 1e-9; an SLSQP search over
   the null space is kept as the reference). `info["unique"]` is then False and `info["choice"]` says so.
   Its support is S.

Probabilities are rounded to 1e-10 so that numerically equal ones tie. Scores: the probability
(`maximal-lotteries`); level + probability with levels numbered from 0 at the bottom
(`iterative-maximal-lotteries`, one essential-set LP per level, the winners of a level removed
from the margins before the next).
"""

from __future__ import annotations

import highspy
import numpy as np
import scipy.sparse as sp
from scipy.linalg import null_space
from scipy.optimize import minimize
from scipy.sparse.csgraph import connected_components

from pipeline.methods.majority import condorcet_info
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import method
from pipeline.stats.counts import Matrix, PairwiseCounts

DIGITS = 10  # probabilities are rounded to this many decimals


def essential_set(margins: Matrix) -> np.ndarray:
    """Boolean mask of the agents in the support of some maximal lottery (one LP)."""
    m = margins.shape[0]
    if m == 1:
        return np.ones(1, dtype=bool)
    scale = abs(margins).max()
    game = sp.csc_array(margins / scale if scale > 0 else margins)
    eye = sp.identity(m, format="csc")
    rows = sp.vstack([sp.hstack([game.T, sp.csc_array((m, m))]), sp.hstack([eye, -eye])], format="csc")
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = 2 * m, 2 * m
    lp.col_cost_ = np.r_[np.zeros(m), -np.ones(m)]
    lp.col_lower_, lp.col_upper_ = np.zeros(2 * m), np.r_[np.full(m, highspy.kHighsInf), np.ones(m)]
    lp.row_lower_, lp.row_upper_ = np.zeros(2 * m), np.full(2 * m, highspy.kHighsInf)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = rows.indptr, rows.indices, rows.data
    h.passModel(lp)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"maximal-lotteries: HiGHS stopped with status {h.modelStatusToString(h.getModelStatus())}")
    return np.asarray(h.getSolution().col_value)[m:] > 0.5


def _dense(block: Matrix) -> np.ndarray:
    return block.toarray() if sp.issparse(block) else np.asarray(block)


def _null_bases(square: Matrix) -> list[tuple[np.ndarray, np.ndarray]]:
    """Null space of square^T, block by block: (members, orthonormal basis) per connected block."""
    count, label = connected_components(sp.csr_array(square), directed=False)
    bases = []
    for c in range(count):
        members = np.flatnonzero(label == c)
        block = _dense(_restrict(square, members))
        scale = np.abs(block).max() or 1.0
        bases.append((members, null_space(block.T / scale, rcond=1e-9) if len(members) > 1 else np.ones((1, 1))))
    return bases


def lottery(margins: Matrix, support: np.ndarray, *, algorithm: str = "dual") -> tuple[np.ndarray, bool]:
    """The maximal lottery on the essential set (or its maximum-entropy one), and uniqueness."""
    m = margins.shape[0]
    inside = np.flatnonzero(support)
    p = np.zeros(m)
    square = _restrict(margins, inside)
    bases = _null_bases(square)
    if sum(basis.shape[1] for _, basis in bases) == 1:  # one block (each block has a null vector)
        q, unique = bases[0][1][:, 0] / bases[0][1][:, 0].sum(), True
    else:
        q, unique = _max_entropy(margins, inside, square, bases, algorithm=algorithm), False
    p[inside] = np.clip(q, 0.0, None) / np.clip(q, 0.0, None).sum()
    return np.round(p, DIGITS), unique


def _max_entropy(margins: Matrix, inside: np.ndarray, square: Matrix, bases: list, *,
                 algorithm: str = "dual") -> np.ndarray:
    """argmax of the entropy over q on S with square^T q = 0, sum q = 1, q >= 0, M_{S,out}^T q >= 0.

    `dual`: L-BFGS-B on the dual, min over lam, mu >= 0 of logsumexp(square lam + cross^T mu), whose
    minimiser gives q = softmax(...); `plain` (reference, small S): SLSQP over the null space.
    """
    outside = np.setdiff1d(np.arange(margins.shape[0]), inside)
    scale = abs(margins).max() or 1.0
    cross = (sp.csr_array(margins)[inside][:, outside] if sp.issparse(margins)
             else margins[np.ix_(inside, outside)]).T / scale
    uniform = np.full(len(inside), 1.0 / len(inside))
    if np.abs(square.T @ uniform).max() / scale < 1e-12 and np.all(cross @ uniform >= -1e-12):
        return uniform  # the uniform lottery on S is maximal, and no lottery on S has more entropy
    if algorithm == "plain":
        return _max_entropy_plain(_dense(cross), bases, len(inside))
    equal = sp.csr_array(square.T / scale) if sp.issparse(square) else square.T / scale
    k = equal.shape[0]

    def dual(z: np.ndarray) -> tuple[float, np.ndarray]:
        theta = equal.T @ z[:k] + cross.T @ z[k:]
        top = theta.max()
        e = np.exp(theta - top)
        q = e / e.sum()
        return float(np.log(e.sum()) + top), np.r_[equal @ q, cross @ q]

    bounds = [(None, None)] * k + [(0.0, None)] * cross.shape[0]
    result = minimize(dual, np.zeros(len(bounds)), jac=True, method="L-BFGS-B", bounds=bounds,
                      options={"ftol": 0.0, "gtol": 1e-13, "maxiter": 20000, "maxcor": 30})
    theta = equal.T @ result.x[:k] + cross.T @ result.x[k:]
    q = np.exp(theta - theta.max())
    q /= q.sum()
    violation = max(np.abs(equal @ q).max(), -(cross @ q).min(initial=0.0))
    if violation > 1e-9:
        raise RuntimeError(f"maximal-lotteries: maximum-entropy search stopped {violation:.1e} from feasible "
                           f"({result.message})")
    return q


def _max_entropy_plain(cross: np.ndarray, bases: list, size: int) -> np.ndarray:
    basis = np.zeros((size, sum(b.shape[1] for _, b in bases)))
    column = 0
    for members, block in bases:
        basis[members, column:column + block.shape[1]] = block
        column += block.shape[1]
    guard = cross @ basis
    total = basis.sum(axis=0)
    start = np.linalg.lstsq(basis, np.full(size, 1.0 / size), rcond=None)[0]
    start /= total @ start

    def entropy(y: np.ndarray) -> tuple[float, np.ndarray]:
        q = np.clip(basis @ y, 1e-300, None)
        return float(q @ np.log(q)), basis.T @ (np.log(q) + 1.0)

    constraints = [{"type": "eq", "fun": lambda y: total @ y - 1.0, "jac": lambda y: total[None, :]},
                   {"type": "ineq", "fun": lambda y: basis @ y, "jac": lambda y: basis}]
    if cross.shape[0]:
        constraints.append({"type": "ineq", "fun": lambda y: guard @ y, "jac": lambda y: guard})
    result = minimize(entropy, start, jac=True, method="SLSQP", constraints=constraints,
                      options={"ftol": 1e-15, "maxiter": 1000})
    if not result.success:
        raise RuntimeError(f"maximal-lotteries: maximum-entropy search failed: {result.message}")
    return basis @ result.x


def _restrict(margins: Matrix, local: np.ndarray) -> Matrix:
    if sp.issparse(margins):
        return sp.csr_array(margins)[local][:, local]
    return margins[np.ix_(local, local)]


@method("maximal-lotteries", needs=("pairwise",))
def maximal_lotteries(pairs: PairwiseCounts) -> Ratings:
    """Maximal lotteries: the minimax-optimal lottery of the margin game; score is the probability."""
    support = essential_set(pairs.margins)
    p, unique = lottery(pairs.margins, support)
    return Ratings.from_scores(
        pairs.agents, p, extras={"probability": p},
        info={**condorcet_info(pairs), "support_agents": pairs.agents[p > 0].tolist(), "unique": unique,
              "choice": "unique" if unique else "maximum-entropy maximal lottery"})


@method("iterative-maximal-lotteries", needs=("pairwise",))
def iterative_maximal_lotteries(pairs: PairwiseCounts) -> Ratings:
    """Iterative maximal lotteries: peel off the support level by level; score is level + probability."""
    margins = pairs.margins
    left = np.arange(pairs.n)
    levels: list[tuple[np.ndarray, np.ndarray, bool]] = []
    while len(left):
        sub = _restrict(margins, left)
        support = essential_set(sub)
        p, unique = lottery(sub, support)
        levels.append((left[support], p[support], unique))
        left = left[~support]
    level, probability = np.zeros(pairs.n, dtype=np.int64), np.zeros(pairs.n)
    for depth, (members, p, _) in enumerate(levels):
        level[members] = len(levels) - 1 - depth
        probability[members] = p
    non_unique = [depth for depth, (_, _, unique) in enumerate(levels) if not unique]
    return Ratings.from_scores(
        pairs.agents, level + probability,
        extras={"level": level, "probability": probability},
        info={**condorcet_info(pairs), "levels": len(levels),
              "level_agents": [pairs.agents[members].tolist() for members, _, _ in levels],
              "non_unique_levels": non_unique,
              "choice": "unique" if not non_unique else "maximum-entropy maximal lottery on non-unique levels"})
