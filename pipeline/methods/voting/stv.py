"""Single transferable vote with a Droop quota [Tid95]; [VasE, appendix C.2.4].

n is the total ballot weight, k the number of winners (default floor(m/2), at least 1), the quota
floor(n/(k+1) + 1). Each round every ballot counts for its most preferred continuing agent; an
agent reaching the quota is elected, otherwise the agent with the fewest votes is eliminated.
Rounds go on until every agent is placed, as in OpenSpiel's `stv.py`, so the result is a full
order: winners in order of election, then losers from the last eliminated to the first.

Two ways to hand on an elected agent's surplus (`transfer=`):
- `gregory` (the default): fractional (Gregory [Tid95]): every ballot counting for an elected
  agent with t votes passes on (t - quota)/t of its weight. The count does not depend on the
  order of the ballots or of the agents: agents tied for the most votes at or above the quota
  are elected together, agents tied for the fewest are eliminated together, and tied agents share
  a rank and a score; a ballot whose top continuing place is a tie group (a weak order) counts
  1/g for each of its g agents, like plurality;
- `whole`: OpenSpiel's count, which the STV tables of [VasE] come from: the ballots counting for
  the winner are used up, whole and in order, until they make the quota (the last one partly),
  and the rest move on whole to their next continuing agent. That depends on an order of the
  ballots and of the agents. Agents go by name (code point order), and a tie group inside a
  ballot is split in that order (counted in `info["ballot_ties_broken"]`). Ballots go in the
  order of their ids (`pipeline.stats.ballot_order`: `ballot_id`, the task of a score table,
  `game_id`; digits compared as numbers; ballots without ids in file order), equal ballots as one
  at the place of the first, as OpenSpiel's `PreferenceProfile.group()` makes them. Of agents
  tied for the most votes the first by name is elected, of those tied for the fewest the last is
  eliminated (OpenSpiel's stable sort), one per round. This is OpenSpiel's `STVVoting` on the
  grouped profile with its ballots in id order and its alternatives in name order; on the Atari
  table of [VasE] (games listed by name) it gives the published STV column.

In both, a ballot with no continuing agent left (a partial ballot) is exhausted.

Arithmetic. Weights are integers on the store's 2^-24 grid (`pipeline.weights`). The whole count
adds and subtracts grid units, exactly; totals past 2^62 grid units run on Python integers.
Gregory's count is in fixed point, on Python integers: a ballot's weight after a transfer is
truncated to 2^-64 of a unit of weight, as statutory Gregory counts truncate their transfer
values (to a few decimals), and votes and the quota are compared rounded to the nearest 2^-40, so
votes equal in exact arithmetic (ties, a vote exactly at the quota) stay equal whatever the
truncation's dust, and any two that differ by a grid step still differ. Exact rationals are not
an option: their digits compound with every election (the first 30 races of F1 took 0.19 s, 50
took 7 s, 70 took 67 s; all 1,143 take 0.3 s in fixed point). The reported votes are the floats
of the fixed-point ones. The Droop quota adds one unit of weight, so, as in OpenSpiel,
multiplying every weight by a constant may change the count.

Score [VasE, C.2.4]: with W the winners in order of election and L the losers (each eliminated
agent put in front), a winner scores 2m - i_W and a loser m - i_L, followed by ".X" where X is
its vote in the round it was placed; here the fraction is X / 10^d with d the number of digits
of the integer part of X, which is exactly ".X" for integer votes (6.3 for 3 votes, 6.12 for 12).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from pipeline.methods.convergence import RatingError
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import NON_NEGATIVE, Cost, Size, method, one_of
from pipeline.methods.voting.majority import ranked
from pipeline.stats.ballot_order import BallotOrder
from pipeline.stats.counts import BallotHistogram
from pipeline.weights import UNIT, to_units

TRANSFERS = ("gregory", "whole")
GRID = int(UNIT)  # weight units per unit of weight
INT64_SAFE = 2**62  # scaled totals below this are counted in int64
FINE = 2**40  # fine units per grid unit: a Gregory transfer is truncated to 2^-64 of a unit of weight
COMPARED = 2**16  # Gregory's votes are compared to 2^-40 of a unit of weight, far above the truncation's dust

Round = tuple[bool, list[int], float]  # (elected?, agents placed, their votes)


def quota_units(total_units: int, winners: int) -> int:
    """The Droop quota floor(n/(k+1) + 1), n the total weight, in grid units."""
    return (total_units // ((winners + 1) * GRID) + 1) * GRID


def vote_fraction(votes: float) -> float:
    """".X" of a score [VasE, C.2.4]: X / 10^d, d the digits of the integer part of X."""
    return votes / 10.0 ** max(1, len(str(int(votes)))) if votes > 0 else 0.0


def integer_units(weights: np.ndarray) -> np.ndarray:
    """Grid units of the weights: int64 while their total stays below 2^62, else Python ints."""
    units = to_units(weights)
    return units if int(units.sum(dtype=object)) < INT64_SAFE else np.array([int(u) for u in units], dtype=object)


def count_rounds(histogram: BallotHistogram, winners: int) -> tuple[list[Round], float]:
    """Gregory's count in fixed point (the module's docstring says why): the rounds, and the quota (in weight).

    Each ballot's weight is an integer of fine units (`FINE` per grid unit); its share for each of
    the g agents of its top tie group a g-th of it, so votes are kept in fine units times L, the
    least common multiple of 1..G (G the largest tie group: a group shrinks as its agents are
    placed), and are exact integers, compared to the nearest `COMPARED`-th of a grid unit. An
    election leaves a ballot with c chosen agents among its g top agents the floor of
    w (1 - (c/g) q/t) (t the votes of the chosen). Votes change only for the ballots a placed agent
    held, so a round touches only those."""
    m, ballots = len(histogram.agents), histogram.ballots
    shares = math.lcm(*range(1, max((len(group) for ballot in ballots for group in ballot), default=1) + 1))
    units = [int(u) for u in to_units(histogram.weights)]
    weight = [u * FINE for u in units]
    quota = quota_units(sum(units), winners)
    q = quota * FINE * shares  # on the votes' scale
    live, votes = [True] * m, [0] * m
    level, top = [0] * len(ballots), [()] * len(ballots)  # each ballot's top group of continuing agents
    held: list[set[int]] = [set() for _ in range(m)]  # the ballots whose top group holds an agent

    def count(b: int, sign: int) -> None:
        share = sign * weight[b] * (shares // max(1, len(top[b])))
        for a in top[b]:
            votes[a] += share
            (held[a].add if sign > 0 else held[a].discard)(b)

    def move_on(b: int) -> None:
        ballot = ballots[b]
        while level[b] < len(ballot) and not (group := tuple(a for a in ballot[level[b]] if live[a])):
            level[b] += 1
        top[b] = group if level[b] < len(ballot) else ()
        count(b, +1)

    for b in range(len(ballots)):
        move_on(b)
    resolution = shares * FINE // COMPARED

    def compared(v: int) -> int:
        return (2 * v + resolution) // (2 * resolution)  # the nearest multiple of the resolution

    rounds: list[Round] = []
    while standing := [compared(votes[a]) for a in range(m) if live[a]]:
        elected = max(standing) >= compared(q)
        placed = max(standing) if elected else min(standing)
        chosen = [a for a in range(m) if live[a] and compared(votes[a]) == placed]
        t = max(votes[a] for a in chosen) if elected else min(votes[a] for a in chosen)
        rounds.append((elected, chosen, t / (shares * FINE * GRID)))
        moving = sorted(set().union(*(held[a] for a in chosen)))
        for b in moving:
            count(b, -1)
            if elected:
                c, g = sum(a in chosen for a in top[b]), len(top[b])
                weight[b] = weight[b] * max(0, g * t - c * q) // (g * t)
        for a in chosen:
            live[a] = False
        for b in moving:
            move_on(b)
    return rounds, quota / GRID


def strict_ballots(histogram: BallotHistogram, keys: np.ndarray, order: BallotOrder) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Ballots as strict sequences, in count order: (agents padded with -1, lengths, grid units, ties broken).

    A tie group is split in `keys` order (the agents' name order); equal sequences are one ballot
    at the first one's place; ballots go by first id, then by their sequences of keys."""
    units = integer_units(histogram.weights)
    first: dict[tuple[int, ...], tuple[object, int]] = {}  # sequence -> (count key, units)
    for ballot, u in zip(histogram.ballots, units.tolist()):
        sequence = tuple(a for group in ballot for a in sorted(group, key=lambda x: keys[x]))
        key = (order.key(ballot), [int(keys[a]) for a in sequence])
        earlier, total = first.get(sequence, (key, 0))
        first[sequence] = (min(earlier, key), total + u)
    ties = int(sum(any(len(g) > 1 for g in ballot) for ballot in histogram.ballots))
    sequences = sorted(first, key=lambda x: first[x][0])
    agents = np.full((len(sequences), max([1] + [len(x) for x in sequences])), -1, np.int64)
    for row, sequence in enumerate(sequences):
        agents[row, : len(sequence)] = sequence
    lengths = np.array([len(x) for x in sequences], np.int64)
    return agents, lengths, np.array([first[x][1] for x in sequences], dtype=units.dtype), ties


def count_rounds_whole(histogram: BallotHistogram, winners: int, keys: np.ndarray,
                       order: BallotOrder) -> tuple[list[Round], float, int]:
    """OpenSpiel's count (whole ballots, in id order): the rounds, the quota, the ballot ties broken."""
    m = len(histogram.agents)
    agents, lengths, units, ties = strict_ballots(histogram, keys, order)
    q = quota_units(int(units.sum(dtype=object)), winners)
    rows, pos, live, rounds = np.arange(len(units)), np.zeros(len(units), np.int64), np.ones(m, bool), []
    by_key = np.argsort(keys, kind="stable")

    def top() -> np.ndarray:
        return np.where(pos < lengths, agents[rows, np.minimum(pos, np.maximum(lengths - 1, 0))], -1)

    def move_on(placed: int) -> None:
        """Ballots still holding weight for the placed agent go to their next continuing agent."""
        moving = (top() == placed) & (units > 0)
        pos[moving] += 1
        while (stuck := moving & (pos < lengths) & ~live[np.maximum(top(), 0)]).any():
            pos[stuck] += 1

    while live.any():
        current = top()
        counted = (current >= 0) & (units > 0)
        votes = np.zeros(m, dtype=units.dtype)
        np.add.at(votes, current[counted], units[counted])
        candidates = by_key[live[by_key]]
        tally = votes[candidates]
        if tally.max() >= q:
            chosen = int(candidates[np.argmax(tally)])  # the first of the tied, by name
            supporting = np.where((current == chosen) & counted, units, 0)
            units = units - np.clip(q - (np.cumsum(supporting) - supporting), 0, supporting)  # used up in order
            rounds.append((True, [chosen], int(votes[chosen]) / GRID))
        else:
            chosen = int(candidates[len(tally) - 1 - np.argmin(tally[::-1])])  # the last of the tied
            rounds.append((False, [chosen], int(votes[chosen]) / GRID))
        live[chosen] = False
        move_on(chosen)
    return rounds, q / GRID, ties


def stv_cost(size: Size, params: Mapping[str, object]) -> Cost:
    """Gregory's count: a round per placed group, each comparing the continuing agents, and each
    ballot member passed over at most once as the ballot moves on (all 1,143 F1 races, 864 drivers,
    25,000 members: 0.3 s); the whole count recounts every ballot each round, in numpy (not
    measured: 1e-8 s per ballot x agent^2)."""
    seconds = (1e-6 * (size.agents**2 + size.members) if params["transfer"] == "gregory"
               else 1e-8 * size.ballots * size.agents**2)
    return Cost(seconds, 8.0 * size.ballots * size.agents * 4,
                "rate with stv:transfer=whole, borda or schulze, or fewer ballots (--where)",
                f"up to {size.agents:,} rounds over {size.ballots:,} ballots of {size.members:,} members")


@method("stv", needs=("histogram", "agent_keys", "ballot_order"), rules={"winners": NON_NEGATIVE, "transfer": one_of(*TRANSFERS)},
        cost=stv_cost)
def stv(histogram: BallotHistogram, agent_keys: np.ndarray, ballot_order: BallotOrder, *, winners: int = 0,
        transfer: str = "gregory") -> Ratings:
    """Single transferable vote: elect at the Droop quota, else eliminate the weakest."""
    m = len(histogram.agents)
    if not len(histogram) or float(np.sum(histogram.weights)) <= 0:
        raise RatingError(f"stv: no ballots to count ({m} agents, {len(histogram)} ballots of positive weight)")
    k = max(1, m // 2) if winners == 0 else winners
    if k > m:
        raise RatingError(f"stv: {k} winners asked of {m} agents; ask for at most {m}")
    info: dict[str, object] = {}
    if transfer == "whole":
        rounds, q, ties = count_rounds_whole(histogram, k, np.asarray(agent_keys), ballot_order)
        info["ballot_ties_broken"] = ties
    else:
        rounds, q = count_rounds(histogram, k)
    elected = [(agents, votes) for won, agents, votes in rounds if won]
    eliminated = [(agents, votes) for won, agents, votes in rounds if not won][::-1]
    score, votes_at = np.zeros(m), np.zeros(m)
    for base, placed in ((2 * m, elected), (m, eliminated)):
        for agents, votes in placed:
            score[agents] = base + vote_fraction(votes)
            votes_at[agents] = votes
            base -= len(agents)
    groups = [agents for agents, _ in elected + eliminated]
    winner_rows = sum((a for a, _ in elected), [])
    return ranked(histogram.agents, groups, score,
                  extras={"votes": votes_at, "elected": np.isin(np.arange(m), winner_rows)},
                  info={"winners": k, "quota": q, "winner_agents": histogram.agents[winner_rows].tolist(),
                        "rounds": len(rounds), "unique_votes": len(histogram)} | info)
