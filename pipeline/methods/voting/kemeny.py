"""Kemeny-Young: the order that agrees with the most pairwise preferences [Kem59]; [VasE, C.2.6].

KemenyValue(order) = sum over pairs i above j in the order of N(i, j); the method returns an
order of maximum value. Exact, with two reductions:

- Extended Condorcet criterion [Tru98]: if every agent of a set X beats every agent of Y head to head
  (M > 0), X is above Y in every optimal order. The strongly connected components of the graph
  a -> b when M(a, b) >= 0 are such sets, ordered; each is solved on its own.
- Agents with no nonzero margin to any agent of another group (groups of the graph a - b when
  M(a, b) != 0) are ordered group by group: every interleaving of optimal group orders is optimal
  (cross pairs add the same whichever is above), and the canonical one is their merge, the agent
  with the smallest key first among the groups' next agents. 15 disjoint two-agent elections
  were one component of 30 agents, and its canonical-order MIPs took 34 s; two agents are
  ordered by their margin in closed form.
- Each component is an integer program over pairwise order variables x_ab (a above b), with the
  3-cycle constraints 0 <= x_ab + x_bc - x_ac <= 1, maximising sum M(a, b) x_ab, solved by
  HiGHS branch and bound to a proven optimum (objective coefficients are the margins divided by
  their greatest common divisor on the store's 2^-24 weight grid, so values are integers and
  the absolute gap < 1 certifies the optimum exactly). A second solve with a no-good cut decides
  whether the optimum is unique. `algorithm="enumerate"` checks all m! orders (m <= 9).

Not unique: `info["kemeny_unique"]` is false and the order returned is the canonical optimum,
the smallest position by position in the order of the agents' keys (`Statistics.agent_keys`,
their names' order); so it depends on the ballots and the names, never on the store's numbering
or HiGHS's path. `algorithm="enumerate"` applies the same rule. It is built agent by agent from
the optimal order found: with R the agents left, the next is the first a of R by key with
head(a) + Kemeny*(R - a) = Kemeny*(R) (head(a): a's margins over R - a), decided in exact
integers, cheapest test first: a above the known optimal order of R - a reaching Kemeny*(R)
proves it; multipliers of an LP relaxation (Lagrangian bounds), then the LP of R - a (its dual
simplex stopped at the value needed), rule it out; only what they leave needs an order MIP of
R - a. R is cut into its components first. LLMFAO's 59 models (one component, 1,766 of 3,422
ordered pairs with margin 0) needed 45 LPs and 1 such MIP, 7 s in all with the first two MIPs,
where a MIP per position over the optimal orders did not solve its first in 28 s.
All MIPs and LPs go through `pipeline.methods.numerics.highs` (one thread; a status other than
optimal, or an expected "infeasible"/"objective bound", is a one-line error). Degenerate data: one agent is
ranked first; no comparisons (or only ties) make every order optimal, and the canonical one is
the key order.
`time_limit` (seconds, `inf` for none) bounds the MIPs and LPs of one rating together: components
whose MIPs are expected to take longer (`mip_seconds`, like m^4) are refused in one line before any MIP;
on expiry the method refuses in one line with HiGHS's gap between the best order found and its
bound, never returning an order it has not proved optimal.
Score [VasE, C.2.6]: the sum of N(a, b) over the agents b below a in the order.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from pipeline.methods.convergence import ConvergenceError, RatingError
from pipeline.methods.numerics import highs
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import Cost, Rule, Size, method, one_of
from pipeline.methods.voting.majority import condorcet_info, dense_counts, order_info, ranked
from pipeline.stats.counts import PairwiseCounts
from pipeline.weights import UNIT

ENUMERATE_MAX = 9
TIME_LIMIT = 60.0  # seconds for all the MIPs of one rating: half the matrix's budget of a cell (benchmarks/bench_matrix.py)


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


def independent_groups(margins: np.ndarray) -> list[np.ndarray]:
    """Groups of agents joined by nonzero margins (undirected): between two groups every margin is 0."""
    count, label = connected_components(sp.csr_array(margins != 0), directed=False)
    return [np.flatnonzero(label == c) for c in range(count)]


def merge_by_keys(orders: list[list[int]], keys: np.ndarray) -> list[int]:
    """The interleaving of `orders` (each kept) smallest position by position in the order of `keys`."""
    heads = [(keys[o[0]], g, 0) for g, o in enumerate(orders) if o]
    heapq.heapify(heads)
    merged = []
    while heads:
        _, g, i = heapq.heappop(heads)
        merged.append(orders[g][i])
        if i + 1 < len(orders[g]):
            heapq.heappush(heads, (keys[orders[g][i + 1]], g, i + 1))
    return merged


def _enumerate(margins: np.ndarray, keys: np.ndarray, deadline: float = math.inf) -> tuple[np.ndarray, bool]:
    """Reference: every order; among the best, the first in lexicographic order of the keys."""
    m = len(margins)
    if m > ENUMERATE_MAX:
        raise ValueError(f"kemeny: enumeration is limited to {ENUMERATE_MAX} agents, not {m}")
    upper = np.triu_indices(m, 1)
    best, value, ties = None, -math.inf, 0
    for perm in itertools.permutations(np.argsort(keys, kind="stable").tolist()):
        v = margins[np.ix_(perm, perm)][upper].sum()
        if v > value:
            best, value, ties = perm, v, 1
        elif v == value:
            ties += 1
    return np.array(best, dtype=np.int64), ties == 1


def _integer_objective(margins: np.ndarray) -> np.ndarray:
    """The margins in integer units: on the store's 2^-24 weight grid, divided by their greatest common divisor."""
    units = np.rint(margins * UNIT).astype(np.int64)
    return units // (int(np.gcd.reduce(np.abs(units).ravel())) or 1)


def _value(units: np.ndarray, order: list[int]) -> int:
    """KemenyValue of `order` in integer units: exact, so optimal values are compared with ==."""
    return int(np.triu(units[np.ix_(order, order)], 1).sum())


def _model(units: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, sp.csc_array]:
    """Pair variables x_ab (a above b, a < b), their cost (-units(a, b)), the pairs, the triples and their 3-cycle rows."""
    m = len(units)
    a, b = np.triu_indices(m, 1)
    var = np.full((m, m), -1, dtype=np.int64)
    var[a, b] = np.arange(len(a))
    triples = np.array(list(itertools.combinations(range(m), 3)), dtype=np.int64).reshape(-1, 3)
    t = len(triples)
    cols = np.column_stack([var[triples[:, 0], triples[:, 1]], var[triples[:, 1], triples[:, 2]],
                            var[triples[:, 0], triples[:, 2]]]).ravel()
    rows = sp.csc_array((np.tile([1.0, 1.0, -1.0], t), (np.repeat(np.arange(t), 3), cols)), shape=(t, len(a)))
    return -units[a, b].astype(np.float64), np.c_[a, b], triples, rows


def _refuse_past_the_deadline(program: str, solution: highs.Solution) -> None:
    found = (f"its best order is within {abs(solution.objective - solution.bound):.0f} of the bound {-solution.bound:.0f} "
             f"(agreement in units of the margins' divisor)" if math.isfinite(solution.objective) else "no order found yet")
    raise RatingError(f"kemeny: the {program} was not solved within time_limit ({found}); rate with schulze or ranked-pairs, "
                      "rate fewer agents (--where), or set kemeny:time_limit=<seconds>")


def _solve(model: str, cost: np.ndarray, rows: sp.csc_array, lower: np.ndarray, upper: np.ndarray, deadline: float, *,
           bound: float | None = None) -> np.ndarray | None:
    """min cost.x over binary x with lower <= rows x <= upper; None when nothing beats `bound` (or nothing is
    feasible). Integer costs: an absolute gap below 1 proves the optimum.
    Past `deadline` (time.monotonic), a one-line RatingError with the gap HiGHS had left."""
    n = rows.shape[1]
    options = {"mip_rel_gap": 0.0, "mip_abs_gap": 0.5, "time_limit": max(deadline - time.monotonic(), 0.01)}
    options |= {} if bound is None else {"objective_bound": bound}
    solution = highs.solve(model, cost, rows, lower, upper, np.zeros(n), np.ones(n), integer=np.ones(n, bool),
                           options=options, allow=(highs.INFEASIBLE, highs.OBJECTIVE_BOUND, highs.TIME_LIMIT))
    if solution.status == highs.TIME_LIMIT:
        _refuse_past_the_deadline(f"{model} MIP", solution)
    if solution.status != highs.OPTIMAL:
        return None
    return np.rint(solution.x).astype(np.int64)


def _order(x: np.ndarray, pairs: np.ndarray, m: int) -> np.ndarray:
    above = np.zeros((m, m), dtype=np.int64)
    above[pairs[:, 0], pairs[:, 1]] = x[: len(pairs)]
    above[pairs[:, 1], pairs[:, 0]] = 1 - x[: len(pairs)]
    return np.argsort(-above.sum(axis=1), kind="stable")


def _mip(margins: np.ndarray, keys: np.ndarray, deadline: float = math.inf) -> tuple[np.ndarray, bool]:
    """Optimal order of one component, and whether it is the only one; among several, the canonical one."""
    m = len(margins)
    if m == 1:
        return np.zeros(1, dtype=np.int64), True
    if m == 2:  # closed form: the winner of the pair above; a tie leaves both orders, the key order first
        first = 0 if margins[0, 1] > 0 or (margins[0, 1] == 0 and keys[0] <= keys[1]) else 1
        return np.array([first, 1 - first], dtype=np.int64), bool(margins[0, 1] != 0)
    units = _integer_objective(margins)
    cost, pairs, _, rows = _model(units)
    t = rows.shape[0]
    x = _solve("kemeny order", cost, rows, np.zeros(t), np.ones(t), deadline)
    best = float(cost @ x)
    # No-good cut: any other order flips at least one pair.
    cut = sp.csc_array(np.where(x == 1, -1.0, 1.0)[None, :])
    other = _solve("kemeny uniqueness", cost, sp.vstack([rows, cut], format="csc"), np.r_[np.zeros(t), 1.0 - x.sum()],
                   np.r_[np.ones(t), np.inf], deadline, bound=best + 0.5)
    if other is None or float(cost @ other) > best:
        return _order(x, pairs, m), True
    return np.array(_canonical(units, keys, _order(x, pairs, m).tolist(), deadline), dtype=np.int64), False


def _optimum_at_least(units: np.ndarray, agents: list[int], value: int, deadline: float) -> list[int] | None:
    """An order of `agents` of KemenyValue >= `value` (so an optimal one when no order does better), or None."""
    if len(agents) <= 2:
        best = sorted(agents, key=lambda a: -units[a, agents].sum())  # two agents: the pair's winner above
        return best if _value(units, best) >= value else None
    cost, pairs, _, rows = _model(units[np.ix_(agents, agents)])
    t = rows.shape[0]
    # KemenyValue = 2 (units . x) - (sum of units(a, b) over a < b): cost . x <= -(value + that sum) / 2
    x = _solve("kemeny order", cost, rows, np.zeros(t), np.ones(t), deadline, bound=(cost.sum() - value) / 2 + 0.5)
    order = None if x is None else [agents[i] for i in _order(x, pairs, len(agents))]
    return order if order is not None and _value(units, order) >= value else None  # HiGHS may return one past its bound


@dataclass(frozen=True)
class _Relaxation:
    """The LP relaxation (the MIP without integrality) of the agents `agents`, and its optimal row multipliers."""

    agents: list[int]
    units: np.ndarray
    cost: np.ndarray
    pairs: np.ndarray
    triples: np.ndarray
    rows: sp.csc_array
    multipliers: np.ndarray

    @classmethod
    def solve(cls, units: np.ndarray, agents: list[int], deadline: float, at_least: int | None = None) -> _Relaxation | None:
        """None when the LP proves that no order of `agents` reaches KemenyValue `at_least`: the dual simplex
        stops as soon as its objective, a bound, passes that (0.1 s instead of 0.8 s for most of LLMFAO's)."""
        local = units[np.ix_(agents, agents)]
        cost, pairs, triples, rows = _model(local)
        t, n = rows.shape
        options: dict[str, object] = {"time_limit": max(deadline - time.monotonic(), 0.01), "presolve": "off"}
        if at_least is not None:  # KemenyValue = cost.sum() - 2 cost.x, so cost.x <= (cost.sum() - at_least) / 2
            options["objective_bound"] = (cost.sum() - at_least) / 2 + 0.5
        solution = highs.solve("kemeny relaxation", cost, rows, np.zeros(t), np.ones(t), np.zeros(n), np.ones(n),
                               options=options, allow=(highs.TIME_LIMIT, highs.OBJECTIVE_BOUND))
        if solution.status == highs.TIME_LIMIT:
            _refuse_past_the_deadline("kemeny LP relaxation", solution)
        most = cost.sum() - 2 * solution.objective  # no order of `agents` has a larger KemenyValue
        if solution.status == highs.OBJECTIVE_BOUND or (at_least is not None and most < at_least - 0.5):
            return None
        return cls(list(agents), local, cost, pairs, triples, rows, solution.row_duals)

    def covers(self, agents: list[int]) -> bool:
        return set(agents) <= set(self.agents)

    def cannot_top(self, agents: list[int], value: int) -> np.ndarray:
        """For each of `agents` (some of ours, whose optimal KemenyValue is `value`), whether the multipliers
        prove that no optimal order of them has it on top. Any multipliers y bound the MIP of `agents`
        (Lagrangian duality, the rows of the other agents left out): with d = cost - rows' y, min cost.x >= the
        sum of min(y, 0) over the rows (0 <= row <= 1), of min(d, 0) over the free pairs and of d over the pairs
        fixed at 1; a bound above the optimal cost by more than 0.5 (costs are integers) rules the agent out."""
        m = len(self.agents)
        where = dict(zip(self.agents, range(m)))
        ids = np.array([where[a] for a in agents])
        inside = np.zeros(m, dtype=bool)
        inside[ids] = True
        y = np.where(inside[self.triples].all(axis=1), self.multipliers, 0.0)
        reduced = np.zeros((m, m))
        reduced[self.pairs[:, 0], self.pairs[:, 1]] = self.cost - self.rows.T @ y
        reduced = (reduced + reduced.T)[np.ix_(ids, ids)]
        free = np.minimum(reduced, 0.0)  # a pair not fixed takes its better side
        on_top = np.where(ids[:, None] < ids[None, :], reduced, 0.0)  # x_ab = 1 (a < b) costs d, x_ba = 0 nothing
        bound = np.minimum(y, 0.0).sum() + np.triu(free, 1).sum() + (on_top - free).sum(axis=1)
        ordered = np.sort(ids)
        optimal_cost = -(value + int(np.triu(self.units[np.ix_(ordered, ordered)], 1).sum())) / 2
        return bound > optimal_cost + 0.5


def _canonical(units: np.ndarray, keys: np.ndarray, optimal: list[int], deadline: float) -> list[int]:
    """The optimal order that is smallest position by position in the order of `keys`, from one optimal order.

    Position by position, with R the agents left and o an optimal order of R of value v (every optimal order of
    the component starting with the agents placed continues with one of R): the next agent is the first a of R
    by key that tops an optimal order of R, i.e. head(a) + Kemeny*(R - a) == v, head(a) being a's margins over
    R - a. Tried in turn, cheapest first: a + (o - a) worth v proves it; multipliers of an LP relaxation
    covering R rule a out when they bound every order of R with a on top below v; so does the LP of R - a; else
    one order MIP on R - a decides. R is first cut into its components (the extended Condorcet criterion):
    every optimal order of R ranks them in turn, each optimally, so the first is placed before the others."""
    placed: list[int] = []
    relaxation = None
    waiting = [optimal]  # optimal orders of disjoint sets of agents, the next to place last
    while waiting:
        agents = waiting.pop()
        parts = components(units[np.ix_(agents, agents)])
        if len(parts) > 1:  # o restricted to a component is optimal there (its components come in turn in o)
            members = [set(np.asarray(agents)[part].tolist()) for part in parts]
            waiting.extend([a for a in agents if a in part] for part in reversed(members))
            continue
        if len(agents) == 1:
            placed.extend(agents)
            continue
        value, ruled_out = _value(units, agents), None
        for index, top in sorted(enumerate(agents), key=lambda ia: keys[ia[1]]):
            rest = [a for a in agents if a != top]
            head = int(units[top, rest].sum())
            # top + rest worth v: top tops an optimal order, and rest is optimal for R - top (an order of R - top
            # worth more would put top + it above v), so it is the o of the next position.
            if head + _value(units, rest) == value:
                break
            if relaxation is None or not relaxation.covers(agents):
                relaxation, ruled_out = _Relaxation.solve(units, agents, deadline), None
            if ruled_out is None:
                ruled_out = relaxation.cannot_top(agents, value)
            if ruled_out[index]:
                continue
            rest_relaxation = None
            # the LP of R - a (exact for most candidates on LLMFAO)
            if len(rest) > 2 and (rest_relaxation := _Relaxation.solve(units, rest, deadline, at_least=value - head)) is None:
                continue
            if (better := _optimum_at_least(units, rest, value - head, deadline)) is not None:
                rest, relaxation = better, rest_relaxation or relaxation  # R - a is R at the next position
                break
        else:
            raise ConvergenceError("kemeny: no agent tops an optimal order (HiGHS disagreed with itself)")
        placed.append(top)
        waiting.append(rest)
    return placed


def mip_seconds(m: int) -> float:
    """The expected time of the MIPs (and the canonical choice's LPs) of one component of m agents (like m^4:
    m^3/6 three-cycle rows, and the branch and bound's nodes; livebench's 127 models in one component were not
    solved in 60 s; LLMFAO's 59, not unique, take 6 CPU s for an estimate of 24 s)."""
    return 2e-6 * m**4


def refuse_past_the_time_limit(sizes: list[int], time_limit: float) -> None:
    """Refuse, before any MIP, components expected to take longer than `time_limit` together: known only once
    the margins are read, unlike the agents the cost model sees (a log of 368 drivers may split into components
    of a few each, or be one)."""
    expected = sum(mip_seconds(m) for m in sizes)
    if expected > time_limit:
        raise RatingError(f"kemeny: the largest of its {len(sizes)} component(s) of the majority graph holds {max(sizes)} agents, "
                          f"expected {expected:,.0f} s of MIPs, over time_limit={time_limit:g} s; rate with schulze or "
                          "ranked-pairs, rate fewer agents (--where), or set kemeny:time_limit=<seconds> (inf: no limit)")


def kemeny_cost(size: Size, params: Mapping[str, object]) -> Cost:
    """At worst one component of every agent: m^3/6 three-cycle rows, about 140 m^3 bytes in HiGHS (football's
    337 teams took 5.3 GB); time at most `time_limit` (the method refuses components expected past it as soon
    as it has the margins, `refuse_past_the_time_limit`), else like m^4."""
    m, limit = size.agents, float(params["time_limit"])
    return Cost(limit if math.isfinite(limit) else mip_seconds(m), 140.0 * m**3,
                "rate with schulze or ranked-pairs, or fewer agents (--where)", f"a MIP of up to {m * (m - 1) * (m - 2) // 6:,} three-cycle rows")


@method("kemeny", needs=("pairwise", "agent_keys"), cost=kemeny_cost,
        rules={"algorithm": one_of("mip", "enumerate"), "time_limit": Rule(lambda v: v > 0, "positive (seconds)", infinite=True)})
def kemeny(pairs: PairwiseCounts, agent_keys: np.ndarray, *, algorithm: str = "mip", time_limit: float = TIME_LIMIT) -> Ratings:
    """Kemeny-Young: the order of maximum pairwise agreement, exact (HiGHS MIP)."""
    if pairs.n == 0:
        raise RatingError("kemeny: no agents to rate")
    deadline = time.monotonic() + time_limit
    wins, margins = dense_counts(pairs, "kemeny")
    solve = _mip if algorithm == "mip" else _enumerate
    groups = independent_groups(margins)
    parts = [[group[part] for part in components(margins[np.ix_(group, group)])] for group in groups]
    if algorithm == "mip":
        refuse_past_the_time_limit([len(part) for group_parts in parts for part in group_parts], time_limit)
    group_orders, sizes = [], []
    unique = len(groups) == 1
    for group_parts in parts:
        group_order = []
        for part in group_parts:
            local, alone = solve(margins[np.ix_(part, part)], agent_keys[part], deadline)
            group_order.extend(part[local].tolist())
            unique &= alone
            sizes.append(len(part))
        group_orders.append(group_order)
    order = np.array(merge_by_keys(group_orders, agent_keys), dtype=np.int64)
    groups = [[i] for i in order.tolist()]
    return ranked(pairs.agents, groups, kemeny_scores(wins, order),
                  info={**condorcet_info(pairs), **order_info(pairs.agents, groups),
                        "kemeny_value": kemeny_value(wins, order), "kemeny_unique": bool(unique),
                        "component_sizes": sizes})
