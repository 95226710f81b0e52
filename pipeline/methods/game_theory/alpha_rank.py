"""α-Rank: agents rated by the stationary mass of an evolutionary Markov chain [Omi19]; [VasE] F.0.3.

The chain, as in OpenSpiel's `egt.alpharank` (the reference implementation of [Omi19]):
- **single population**, for a symmetric 2-player game (G_2 = G_1^T, e.g. `agent-agent`): the
  states are strategies; a population playing s moves to r with probability eta rho(r, s),
  eta = 1/(n-1), where rho is the probability that one mutant playing r takes over [Omi19, 2.1.3];
- **multi population**, for any other game (`agent-task`, `agent-agent-task`, an nfg file): the
  states are profiles (one strategy per player); one population k changes its strategy, with
  eta = 1 / sum_k (n_k - 1) [Omi19, 2.1.4];
- **fixation** rho = (1 - e^-u) / (1 - e^-mu) for a population of `m` and u = alpha (f_r - f_s),
  the selection intensity `alpha` times the mover's payoff gain: G(r, s) - G(s, r) for a single
  population (`selection=local`, OpenSpiel's default), the deviating player's payoffs at the two
  profiles for several populations. `selection=population` gives a single population the fitness
  against the whole population instead: rho = 1 / (1 + sum_l prod_{p<=l} e^{-alpha (f_r(p) - f_s(p))})
  with f_r(p) = ((p-1) G(r, r) + (m-p) G(r, s)) / (m-1) and f_s(p) = ((m-p-1) G(s, s) + p G(s, r)) / (m-1).
- **alpha = inf**: the infinite-alpha chain of [Row19] (OpenSpiel's `use_inf_alpha`): a move
  happens with eta (1 - epsilon) when the mover gains, eta/2 when its payoff is equal, eta epsilon
  when it loses. `epsilon=0` (the default) is the limit epsilon -> 0, computed exactly; it is what
  OpenSpiel's `sweep_pi_vs_epsilon` approaches by halving epsilon. In that limit the mass lies on
  sink components of the response graph [Omi19, theorem 2.1.2].

Score: stationary mass; in several populations, the agent's marginal mass in the first
population. Each rating also gives `log_mass` (the natural log of the mass, finite where the mass
underflows: at large alpha masses of e^-5000 are ordinary) and, for alpha = inf with epsilon = 0,
`eps_order`: the mass goes as exp(log_mass) epsilon^eps_order, and agents rank by order, then
mass, so agents without limit mass are still ordered. Masses (or log masses) within `TIE_TOLERANCE`
share a rank.

Numerics. Rates are kept as logarithms: log rho from `expm1` forms (exact near u = 0, no
overflow for any u), and the stationary distribution comes from the Grassmann-Taksar-Heyman state
reduction [GTH85] carried out on (order, log coefficient) pairs: GTH only adds, multiplies and
divides positive numbers, so it loses no mass to cancellation, and in log form it neither
underflows nor overflows, whatever alpha. OpenSpiel instead takes the eigenvector of the dense
transition matrix, whose entries underflow to 0 above alpha ~ 700/m per payoff unit (the chain
then looks reducible and it raises) and whose u-near-0 branch loses digits to cancellation.
Equal payoffs (infinite alpha, response graph) are payoffs within `PAYOFF_TOLERANCE` times the
payoff scale; OpenSpiel uses numpy's isclose (relative 1e-5).

The response graph [Omi19, 2.5]: an edge from each profile to every profile in which one
population's deviation does not lower its payoff. `info` lists its sink strongly connected
components: `sink_agents` (per component, the agents of the first population in it; for an nfg
game, every `player:strategy` in it), and per other player `sink_<player>` (names) or
`sink_<player>_agents` (store ids).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.special import logsumexp

from pipeline.games import Game
from pipeline.methods.convergence import RatingError
from pipeline.methods.game_theory.equilibria import (GAME_RULES, GameData, choose_game, game_ratings, game_shape, resolved_game,
                                                   shape_text)
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import Cost, Rule, Size, at_least, between, method, one_of

DEFAULT_GAMES = {"scores": "agent-task", "battles": "agent-agent"}
SELECTIONS = ("local", "population")
MAX_PROFILES = 2_048  # states of the chain: GTH is cubic in them
PAYOFF_TOLERANCE = 1e-12  # relative to the largest payoff magnitude: equal payoffs
TIE_TOLERANCE = 1e-9  # on log masses: relative differences below this are solver noise
LOG_RATE_BOUND = 1e304  # largest |log rate| of a finite alpha: GTH's sums of up to MAX_PROFILES of them stay finite


def log_fixation(u: np.ndarray, m: int) -> np.ndarray:
    """log rho(u), rho = (1 - e^-u) / (1 - e^-mu): exact for every u, log(1/m) at u = 0.

    For u > 0, rho = -expm1(-u) / -expm1(-mu); for u = -v < 0 multiply top and bottom by e^{mv}:
    rho = e^{-(m-1) v} (-expm1(-v)) / (-expm1(-mv)). Both are ratios of numbers in (0, 1].
    """
    a = np.abs(np.asarray(u, dtype=np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        core = np.log(-np.expm1(-a)) - np.log(-np.expm1(-m * a))
    return np.where(a == 0, -np.log(m), np.where(np.asarray(u) > 0, core, core - (m - 1) * a))


def log_fixation_population(g: np.ndarray, alpha: float, m: int) -> np.ndarray:
    """log rho(r, s)[s, r] for a single population under fitness against the whole population."""
    n = len(g)
    p = np.arange(1, m)
    out = np.full((n, n), -np.inf)
    for s in range(n):
        f_r = ((p[None, :] - 1) * np.diag(g)[:, None] + (m - p[None, :]) * g[:, s, None]) / (m - 1)
        f_s = ((m - p[None, :] - 1) * g[s, s] + p[None, :] * g[s, :, None]) / (m - 1)
        exponents = -alpha * np.cumsum(f_r - f_s, axis=1)  # (r, l)
        out[s] = -logsumexp(np.hstack([np.zeros((n, 1)), exponents]), axis=1)
    return out


def _combine(p1, c1, p2, c2):
    """(order, log coefficient) of a sum of two positive series: the lower order wins; equal orders add."""
    p = np.minimum(p1, p2)
    with np.errstate(invalid="ignore"):
        c = np.where(p1 < p2, c1, np.where(p2 < p1, c2, np.logaddexp(c1, c2)))
    return p, c


def _leading(p: np.ndarray, c: np.ndarray, axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """Leading (order, log coefficient) of sums of series along `axis`."""
    low = p.min(axis=axis, keepdims=True)
    with np.errstate(invalid="ignore"):
        coef = logsumexp(np.where(p == low, c, -np.inf), axis=axis)
    return np.squeeze(low, axis=axis), coef


def stationary(order: np.ndarray, log_rate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Stationary distribution of the chain with off-diagonal rates exp(log_rate) eps^order, eps -> 0.

    GTH state reduction [GTH85] on (order, log coefficient) pairs; with every order 0 this is the
    exact stationary distribution of the rates. Returns the leading (order, log mass) per state,
    normalised so the lowest order has total mass 1. The diagonal is ignored; the chain must be
    irreducible (every alpha-Rank chain is). Absent transitions are order inf, log rate -inf.
    """
    p, c = order.astype(np.float64).copy(), log_rate.astype(np.float64).copy()
    n = len(p)
    if not np.any(np.isfinite(p) & (p != 0)):
        return np.zeros(n), log_stationary(c)
    for k in range(n - 1, 0, -1):
        out_p, out_c = _leading(p[k, :k], c[k, :k])
        if not np.isfinite(out_p):
            raise RatingError("alpha-rank: the chain is reducible (a state cannot be left); this is a bug")
        p[:k, k] -= out_p
        c[:k, k] -= out_c
        p[:k, :k], c[:k, :k] = _combine(p[:k, :k], c[:k, :k], p[:k, k, None] + p[None, k, :k], c[:k, k, None] + c[None, k, :k])
    pi_p, pi_c = np.zeros(n), np.zeros(n)
    for k in range(1, n):
        pi_p[k], pi_c[k] = _leading(pi_p[:k] + p[:k, k], pi_c[:k] + c[:k, k])
    low = pi_p.min()
    return pi_p - low, pi_c - logsumexp(pi_c[pi_p == low])


def log_stationary(log_rate: np.ndarray) -> np.ndarray:
    """`stationary` when every rate is of order 0: GTH in log space, one logaddexp pass per state."""
    c = log_rate.astype(np.float64).copy()
    n = len(c)
    with np.errstate(invalid="ignore"):
        for k in range(n - 1, 0, -1):
            exit_rate = logsumexp(c[k, :k])
            if not np.isfinite(exit_rate):
                raise RatingError("alpha-rank: the chain is reducible (a state cannot be left); this is a bug")
            c[:k, k] -= exit_rate
            np.logaddexp(c[:k, :k], np.add.outer(c[:k, k], c[k, :k]), out=c[:k, :k])
    log_pi = np.zeros(n)
    for k in range(1, n):
        log_pi[k] = logsumexp(log_pi[:k] + c[:k, k])
    return log_pi - logsumexp(log_pi)


def _gains(game: Game, single: bool) -> tuple[list[np.ndarray], list[np.ndarray], float]:
    """Transitions of the chain: (source, target) state pairs and the mover's payoff gain, per move kind."""
    if single:
        g = game.payoffs[0]
        s, r = np.nonzero(~np.eye(len(g), dtype=bool))
        return [np.stack([s, r])], [g[r, s] - g[s, r]], 1.0 / (len(g) - 1)
    shape = game.shape
    index = np.arange(int(np.prod(shape))).reshape(shape)
    pairs, gains = [], []
    for k, g in enumerate(game.payoffs):
        for j in range(shape[k]):
            target = np.broadcast_to(np.take(index, [j], axis=k), shape)
            moves = target != index
            pairs.append(np.stack([index[moves], target[moves]]))
            gains.append(g.ravel()[target[moves]] - g.ravel()[index[moves]])
    return pairs, gains, 1.0 / sum(k - 1 for k in shape)


def chain(game: Game, *, alpha: float, m: int, selection: str, epsilon: float,
          single: bool) -> tuple[np.ndarray, np.ndarray]:
    """The chain's off-diagonal rates as (order, log rate) matrices."""
    scale = max(max(float(np.abs(g).max()) for g in game.payoffs), 1e-300)
    # a log fixation probability is at most (m - 1) alpha times a gain (at most twice the payoff scale) in size
    if np.isfinite(alpha) and (m - 1) * alpha * 2 * scale > LOG_RATE_BOUND:
        raise RatingError(f"alpha-rank: alpha={alpha:g} with m={m} and payoffs up to {scale:.3g} gives log fixation "
                          f"probabilities beyond {LOG_RATE_BOUND:g}, more than floating point can hold; use alpha=inf "
                          "for the infinite-α chain, or a smaller alpha or m")
    pairs, gains, eta = _gains(game, single)
    n = len(game.payoffs[0]) if single else int(np.prod(game.shape))
    order, log_rate = np.full((n, n), np.inf), np.full((n, n), -np.inf)
    if single and selection == "population" and np.isfinite(alpha):
        s, r = pairs[0]
        order[s, r], log_rate[s, r] = 0.0, np.log(eta) + log_fixation_population(game.payoffs[0], alpha, m)[s, r]
        return order, log_rate
    for (s, r), gain in zip(pairs, gains):
        if np.isfinite(alpha):
            order[s, r], log_rate[s, r] = 0.0, np.log(eta) + log_fixation(alpha * gain, m)
            continue
        equal, better = np.abs(gain) <= PAYOFF_TOLERANCE * scale, gain > 0
        worse_order, worse_log = (1.0, np.log(eta)) if epsilon == 0 else (0.0, np.log(eta * epsilon))
        order[s, r] = np.where(equal | better, 0.0, worse_order)
        log_rate[s, r] = np.where(equal, np.log(eta / 2), np.where(better, np.log(eta) + np.log1p(-epsilon), worse_log))
    return order, log_rate


def sink_components(game: Game, single: bool) -> list[np.ndarray]:
    """The response graph's sink strongly connected components, as arrays of states (sorted)."""
    pairs, gains, _ = _gains(game, single)
    n = len(game.payoffs[0]) if single else int(np.prod(game.shape))
    scale = max(max(float(np.abs(g).max()) for g in game.payoffs), 1e-300)
    src = np.concatenate([p[0][gain >= -PAYOFF_TOLERANCE * scale] for p, gain in zip(pairs, gains)])
    dst = np.concatenate([p[1][gain >= -PAYOFF_TOLERANCE * scale] for p, gain in zip(pairs, gains)])
    graph = sp.csr_array((np.ones(len(src)), (src, dst)), shape=(n, n))
    count, label = connected_components(graph, directed=True, connection="strong")
    leaves = np.ones(count, bool)
    leaves[np.unique(label[src][label[src] != label[dst]])] = False
    return [np.flatnonzero(label == c) for c in np.flatnonzero(leaves)]


def _rank(order: np.ndarray, log_mass: np.ndarray) -> np.ndarray:
    """Competition ranks by order (lower first), then log mass (higher first, within TIE_TOLERANCE)."""
    sort = np.lexsort((-log_mass, order))
    o, lm = order[sort], log_mass[sort]
    starts = np.r_[True, (o[1:] != o[:-1]) | (lm[:-1] - lm[1:] > TIE_TOLERANCE)]
    ranks = np.empty(len(sort), np.int64)
    ranks[sort] = np.maximum.accumulate(np.where(starts, np.arange(len(sort)), 0)) + 1
    return ranks


def _sink_info(game: Game, components: list[np.ndarray], single: bool) -> dict[str, object]:
    states = [np.unravel_index(c, game.shape) if not single else (c, c) for c in components]
    if game.ids[0] is None:  # nfg: rows are every player's strategies, numbered as Game.labels
        offsets = np.r_[0, np.cumsum(game.shape)]
        rows = [sorted({int(offsets[p] + s) for p in range(game.n_players) for s in np.unique(st[p])}) for st in states]
        return {"sink_agents": rows}
    info: dict[str, object] = {"sink_agents": [game.ids[0][np.unique(st[0])].tolist() for st in states]}
    for p in range(1, 1 if single else game.n_players):
        if game.ids[p] is not None:
            info[f"sink_{game.players[p]}_agents"] = [game.ids[p][np.unique(st[p])].tolist() for st in states]
        else:
            info[f"sink_{game.players[p]}"] = [[game.strategies[p][i] for i in np.unique(st[p])] for st in states]
    return info


ALPHA = Rule(lambda value: value >= 0, "non-negative, or inf for the infinite-α chain", infinite=True)


PER_FIT_S = 0.01  # a fit's own cost on the smallest games (building the game, the sink components): WTA's 107 players


def alpha_rank_cost(size: Size, params: Mapping[str, object]) -> Cost:
    """GTH elimination over the chain's states is cubic in them: 3.6e-9 to 3.9e-9 CPU s per state^3 from 1,000 to
    2,048 states (random agent-task and symmetric agent-agent games, one thread, 2026-11-28; Arena-Hard's 15 models
    x 100 prompts, 1,500 states, 11.2 s: 3.3e-9), a dense state x state rate matrix and about five of its copies. A
    game past `MAX_PROFILES` states is priced at nothing: the method refuses it in one line before any work."""
    game = resolved_game(size, str(params["game"]), DEFAULT_GAMES)
    shape = game_shape(size, game, DEFAULT_GAMES)
    single = game == "agent-agent"  # one population
    states = size.agents if single else math.prod(shape)
    if states > MAX_PROFILES:
        return Cost(0.0, 0.0, "")
    return Cost(PER_FIT_S + 4e-9 * states**3, 6 * 8.0 * states**2,
                "rate with nash-averaging, or fewer agents or tasks (--where)",
                f"a chain of {states:,} states over a game of {shape_text(shape)} strategies")


@method("alpha-rank", needs=("game_data",), cost=alpha_rank_cost,
        rules=GAME_RULES | {"alpha": ALPHA, "m": at_least(2), "selection": one_of(*SELECTIONS), "epsilon": between(0, 0.5, high_open=True)})
def alpha_rank(data: GameData, *, game: str = "auto", norm: str = "minmax", alpha: float = 100.0, m: int = 50,
               selection: str = "local", epsilon: float = 0.0) -> Ratings:
    """α-Rank: stationary mass of the evolutionary chain over strategies or profiles [Omi19]."""
    chosen = choose_game(data, game, norm, DEFAULT_GAMES)
    single = chosen.n_players == 2 and chosen.shape[0] == chosen.shape[1] and np.array_equal(chosen.payoffs[1], chosen.payoffs[0].T)
    n = chosen.shape[0] if single else int(np.prod(chosen.shape))
    if n > MAX_PROFILES:
        raise RatingError(f"alpha-rank: {n} profiles (strategies {shape_text(chosen.shape)}) exceed the "
                          f"limit of {MAX_PROFILES}; rate fewer agents or tasks")
    if n == 1:
        order, log_pi = np.zeros(1), np.zeros(1)
    else:
        order, log_pi = stationary(*chain(chosen, alpha=alpha, m=m, selection=selection, epsilon=epsilon, single=single))
    mass = np.where(order == 0, np.exp(log_pi), 0.0)
    players = 1 if single else chosen.n_players
    per_player = [(order, log_pi)] if single else [
        _leading(np.moveaxis(order.reshape(chosen.shape), p, 0).reshape(chosen.shape[p], -1),
                 np.moveaxis(log_pi.reshape(chosen.shape), p, 0).reshape(chosen.shape[p], -1)) for p in range(players)]
    if single:
        per_player *= 2
    marginal = [np.where(o == 0, np.exp(c), 0.0) for o, c in per_player]
    components = sink_components(chosen, single)
    limit = np.isinf(alpha) and epsilon == 0
    info = {"populations": 1 if single else chosen.n_players, "states": n,
            "stationary_top_mass": float(mass.max()), "sink_components": len(components)} | _sink_info(chosen, components, single)
    ratings = game_ratings(chosen, marginal, marginal, info=info)
    rows_order = np.concatenate([o for o, _ in per_player]) if chosen.ids[0] is None else per_player[0][0]
    rows_log = np.concatenate([c for _, c in per_player]) if chosen.ids[0] is None else per_player[0][1]
    kept = {} if single else {k: v for k, v in ratings.extras.items() if not k.endswith("marginal")}
    extras = kept | {"log_mass": rows_log}
    if limit:
        extras["eps_order"] = rows_order.astype(np.int64)
    info = {k: v for k, v in ratings.info.items() if not k.endswith("_marginal")}  # the same masses again
    return dataclasses.replace(ratings, rank=_rank(rows_order, rows_log), extras=extras, info=info)
