"""Kemeny-Young: the order that agrees with the most pairwise preferences [Kem59]; [VasE, C.2.6].

KemenyValue(order) = sum over pairs i above j in the order of N(i, j); the method returns an
order of maximum value. Exact, with two reductions:

- Extended Condorcet criterion [Tru98]: if every agent of a set X beats every agent of Y head to head
  (M > 0), X is above Y in every optimal order. The strongly connected components of the graph
  a -> b when M(a, b) >= 0 are such sets, ordered; each is solved on its own.
- Each component is an integer program over pairwise order variables x_ab (a above b), with the
  3-cycle constraints 0 <= x_ab + x_bc - x_ac <= 1, maximising sum M(a, b) x_ab, solved by
  HiGHS branch and bound to a proven optimum (objective coefficients are the margins divided by
  their greatest common divisor on the store's 2^-24 weight grid, so values are integers and
  the absolute gap < 1 certifies the optimum exactly). A second solve with a no-good cut decides
  whether the optimum is unique. `algorithm="enumerate"` checks all m! orders (m <= 9).

Not unique: the order returned is HiGHS's optimum on the model built in store-id order (the
same on every run, independent of the order of ballots), and `info["kemeny_unique"]` is false.
Score [VasE, C.2.6]: the sum of N(a, b) over the agents b below a in the order.
"""

from __future__ import annotations

import itertools
import math

import highspy
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from pipeline.methods.majority import condorcet_info, dense_counts, order_info, ranked
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import method
from pipeline.stats.counts import PairwiseCounts
from pipeline.weights import UNIT

ENUMERATE_MAX = 9


def kemeny_value(wins: np.ndarray, order: np.ndarray) -> float:
    """Sum of N(order[i], order[j]) over i < j."""
    return float(np.triu(wins[np.ix_(order, order)], 1).sum())


def kemeny_scores(wins: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Each agent's sum of N against the agents below it in the order."""
    score = np.zeros(len(order))
    score[order] = np.triu(wins[np.ix_(order, order)], 1).sum(axis=1)
    return score


def components(margins: np.ndarray) -> list[np.ndarray]:
    """Strong components of a -> b when M(a, b) >= 0, best first (each beats all later ones)."""
    count, label = connected_components(sp.csr_array(margins >= 0), directed=True, connection="strong")
    parts = [np.flatnonzero(label == c) for c in range(count)]
    beaten = [int((label[np.flatnonzero((margins[part] > 0).any(axis=0))] != c).sum()) for c, part in enumerate(parts)]
    return [parts[c] for c in sorted(range(count), key=lambda c: -beaten[c])]


def _enumerate(margins: np.ndarray) -> tuple[np.ndarray, bool]:
    """Reference: every order; the first best in lexicographic order of local indices."""
    m = len(margins)
    if m > ENUMERATE_MAX:
        raise ValueError(f"kemeny: enumeration is limited to {ENUMERATE_MAX} agents, not {m}")
    upper = np.triu_indices(m, 1)
    best, value, ties = None, -math.inf, 0
    for perm in itertools.permutations(range(m)):
        v = margins[np.ix_(perm, perm)][upper].sum()
        if v > value:
            best, value, ties = perm, v, 1
        elif v == value:
            ties += 1
    return np.array(best, dtype=np.int64), ties == 1


def _integer_objective(margins: np.ndarray) -> np.ndarray:
    units = np.rint(margins * UNIT).astype(np.int64)
    g = int(np.gcd.reduce(np.abs(units).ravel())) or 1
    return (units // g).astype(np.float64)


def _solve(cost: np.ndarray, rows: sp.csc_array, lower: np.ndarray, upper: np.ndarray,
           bound: float | None = None) -> np.ndarray | None:
    """min cost.x over binary x with lower <= rows x <= upper; None when nothing beats `bound`."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 0.5)
    h.setOptionValue("threads", 1)
    if bound is not None:
        h.setOptionValue("objective_bound", bound)
    lp = highspy.HighsLp()
    n = len(cost)
    lp.num_col_, lp.num_row_ = n, rows.shape[0]
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = cost, np.zeros(n), np.ones(n)
    lp.row_lower_, lp.row_upper_ = lower, upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = rows.indptr, rows.indices, rows.data
    lp.integrality_ = [highspy.HighsVarType.kInteger] * n
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    if status in (highspy.HighsModelStatus.kInfeasible, highspy.HighsModelStatus.kObjectiveBound):
        return None
    if status != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"kemeny: HiGHS stopped with status {h.modelStatusToString(status)}")
    return np.rint(np.asarray(h.getSolution().col_value)).astype(np.int64)


def _mip(margins: np.ndarray) -> tuple[np.ndarray, bool]:
    """Optimal order of one component, and whether it is the only one."""
    m = len(margins)
    if m == 1:
        return np.zeros(1, dtype=np.int64), True
    a, b = np.triu_indices(m, 1)
    var = np.full((m, m), -1, dtype=np.int64)
    var[a, b] = np.arange(len(a))
    triples = np.array(list(itertools.combinations(range(m), 3)), dtype=np.int64).reshape(-1, 3)
    t = len(triples)
    cols = np.column_stack([var[triples[:, 0], triples[:, 1]], var[triples[:, 1], triples[:, 2]],
                            var[triples[:, 0], triples[:, 2]]]).ravel()
    rows = sp.csc_array((np.tile([1.0, 1.0, -1.0], t), (np.repeat(np.arange(t), 3), cols)), shape=(t, len(a)))
    cost = -_integer_objective(margins)[a, b]
    x = _solve(cost, rows, np.zeros(t), np.ones(t))
    # No-good cut: any other order flips at least one pair.
    cut = sp.csc_array(np.where(x == 1, -1.0, 1.0)[None, :])
    best = float(cost @ x)
    other = _solve(cost, sp.vstack([rows, cut], format="csc"), np.r_[np.zeros(t), 1.0 - x.sum()],
                   np.r_[np.ones(t), np.inf], bound=best + 0.5)
    unique = other is None or float(cost @ other) > best
    above = np.zeros((m, m), dtype=np.int64)
    above[a, b] = x
    above[b, a] = 1 - x
    return np.argsort(-above.sum(axis=1), kind="stable"), unique


@method("kemeny", needs=("pairwise",))
def kemeny(pairs: PairwiseCounts, *, algorithm: str = "mip") -> Ratings:
    """Kemeny-Young: the order of maximum pairwise agreement, exact (HiGHS MIP)."""
    if algorithm not in ("mip", "enumerate"):
        raise ValueError(f"kemeny: algorithm must be 'mip' or 'enumerate', not {algorithm!r}")
    wins, margins = dense_counts(pairs, "kemeny")
    solve = _mip if algorithm == "mip" else _enumerate
    order, unique, sizes = [], True, []
    for part in components(margins):
        local, alone = solve(margins[np.ix_(part, part)])
        order.extend(part[local].tolist())
        unique &= alone
        sizes.append(len(part))
    order = np.array(order, dtype=np.int64)
    groups = [[i] for i in order.tolist()]
    return ranked(pairs.agents, groups, kemeny_scores(wins, order),
                  info={**condorcet_info(pairs), **order_info(pairs.agents, groups),
                        "kemeny_value": kemeny_value(wins, order), "kemeny_unique": bool(unique),
                        "component_sizes": sizes})
