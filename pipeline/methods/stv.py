"""Single transferable vote with a Droop quota [Tid95]; [VasE, appendix C.2.4].

n is the total ballot weight, k the number of winners (default floor(m/2), at least 1), the quota
floor(n/(k+1) + 1). Each round every ballot counts for its most preferred continuing agent; an
agent reaching the quota is elected, otherwise the agent with the fewest votes is eliminated.
Rounds go on until every agent is placed, as in OpenSpiel's `stv.py`, so the result is a full
order: winners in order of election, then losers from the last eliminated to the first.

Two ways to hand on an elected agent's surplus (`transfer=`):
- `gregory` (the default): fractional (Gregory [Tid95]): every ballot counting for an elected
  agent with t votes passes on (t - quota)/t of its weight. The count does not depend on the
  order of the ballots or of the agents: agents tied (within 1e-9 of the total weight) for the
  most votes at or above the quota are elected together, agents tied for the fewest are
  eliminated together, and tied agents share a rank and a score; a ballot whose top continuing
  place is a tie group (a weak order) counts 1/g for each of its g agents, like plurality;
- `whole`: OpenSpiel's count, which the tables of [VasE] come from: the ballots counting for the
  winner are used up, whole and in order, until they make the quota (the last one partly), and
  the rest move on whole to their next continuing agent. That depends on an order of ballots and
  of agents; here both are canonical: agents in `agent_keys` order (names sorted by code point),
  a tie group inside a ballot split in that order (counted in `info["ballot_ties_broken"]`),
  ballots sorted by their resulting sequences of keys. Of agents tied for the most votes the first
  in that order is elected, of those tied for the fewest the last is eliminated (OpenSpiel's
  stable sort), one per round. This equals OpenSpiel's `STVVoting` run on the profile with its
  alternatives and votes in that order, and equals it on any order wherever the answer does not
  depend on the order.

In both, a ballot with no continuing agent left (a partial ballot) is exhausted.

Score [VasE, C.2.4]: with W the winners in order of election and L the losers (each eliminated
agent put in front), a winner scores 2m - i_W and a loser m - i_L, followed by ".X" where X is
its vote in the round it was placed; here the fraction is X / 10^d with d the number of digits
of the integer part of X, which is exactly ".X" for integer votes (6.3 for 3 votes, 6.12 for 12).
"""

from __future__ import annotations

import math

import numpy as np

from pipeline.methods.convergence import RatingError
from pipeline.methods.majority import ranked
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import method
from pipeline.stats.counts import BallotHistogram

TIE_TOLERANCE = 1e-9  # relative to the total weight (Gregory weights carry round-off)
TRANSFERS = ("gregory", "whole")


def _places(histogram: BallotHistogram) -> np.ndarray:
    """R[b, a]: the tie-group index of agent a on ballot b (inf where a is absent)."""
    places = np.full((len(histogram), len(histogram.agents)), np.inf)
    for b, ballot in enumerate(histogram.ballots):
        for level, group in enumerate(ballot):
            places[b, list(group)] = level
    return places


def _tally(places: np.ndarray, weight: np.ndarray, live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Votes of each agent and, per ballot, which agents it currently counts for (shares)."""
    current = np.where(live[None, :], places, np.inf)
    top = current.min(axis=1, initial=np.inf)
    counts = (current == top[:, None]) & np.isfinite(top)[:, None]
    share = counts / np.maximum(counts.sum(axis=1), 1)[:, None]
    return weight @ share, share


def _fraction(votes: float) -> float:
    return votes / 10.0 ** max(1, len(str(int(votes)))) if votes > 0 else 0.0


def quota(total: float, winners: int) -> float:
    return float(math.floor(total / (winners + 1) + 1))


def count_rounds(histogram: BallotHistogram, winners: int) -> tuple[list[tuple[bool, list[int], float]], float]:
    """The rounds as (elected?, agents, votes), and the quota."""
    m = len(histogram.agents)
    places, weight = _places(histogram), np.asarray(histogram.weights, dtype=np.float64).copy()
    q, tol = quota(float(weight.sum()), winners), TIE_TOLERANCE * float(weight.sum())
    live, rounds = np.ones(m, dtype=bool), []
    while live.any():
        votes, share = _tally(places, weight, live)
        best = votes[live].max()
        if best >= q:
            chosen = np.flatnonzero(live & (votes >= best - tol))
            keep = (votes[chosen] - q) / votes[chosen]  # the surplus fraction each winner passes on
            weight *= 1.0 - share[:, chosen] @ (1.0 - keep)
            rounds.append((True, chosen.tolist(), float(best)))
        else:
            worst = votes[live].min()
            chosen = np.flatnonzero(live & (votes <= worst + tol))
            rounds.append((False, chosen.tolist(), float(worst)))
        live[chosen] = False
    return rounds, q


def _count_rounds_plain(histogram: BallotHistogram, winners: int) -> list[tuple[bool, list[int], float]]:
    """Reference: the same count, ballot by ballot in Python."""
    m = len(histogram.agents)
    weight = [float(w) for w in histogram.weights]
    total = sum(weight)
    q, tol = quota(total, winners), TIE_TOLERANCE * total
    live, rounds = set(range(m)), []

    def tops(ballot):
        return next(([a for a in group if a in live] for group in ballot if any(a in live for a in group)), [])

    while live:
        votes = dict.fromkeys(live, 0.0)
        for ballot, w in zip(histogram.ballots, weight):
            for a in tops(ballot):
                votes[a] += w / len(tops(ballot))
        best, worst = max(votes.values()), min(votes.values())
        if best >= q:
            chosen = sorted(a for a in live if votes[a] >= best - tol)
            for i, ballot in enumerate(histogram.ballots):
                top = tops(ballot)
                lost = sum((1 - (votes[a] - q) / votes[a]) / len(top) for a in top if a in chosen)
                weight[i] *= 1 - lost
            rounds.append((True, chosen, best))
        else:
            chosen = sorted(a for a in live if votes[a] <= worst + tol)
            rounds.append((False, chosen, worst))
        live -= set(chosen)
    return rounds


def strict_ballots(histogram: BallotHistogram, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Ballots as strict sequences in canonical order: (agents padded with -1, lengths, weights, ties broken).

    A tie group is split in `keys` order; ballots are sorted by their sequences of keys."""
    sequences = [[a for group in ballot for a in sorted(group, key=lambda x: keys[x])] for ballot in histogram.ballots]
    ties = int(sum(any(len(g) > 1 for g in ballot) for ballot in histogram.ballots))
    order = sorted(range(len(sequences)), key=lambda b: [int(keys[a]) for a in sequences[b]])
    width = max([1] + [len(x) for x in sequences])
    agents = np.full((len(sequences), width), -1, np.int64)
    for row, b in enumerate(order):
        agents[row, : len(sequences[b])] = sequences[b]
    lengths = np.array([len(sequences[b]) for b in order], np.int64)
    return agents, lengths, np.asarray(histogram.weights, dtype=np.float64)[order], ties


def count_rounds_whole(histogram: BallotHistogram, winners: int, keys: np.ndarray) -> tuple[list[tuple[bool, list[int], float]], float, int]:
    """OpenSpiel's count (whole ballots, in canonical order): the rounds, the quota, the ballot ties broken."""
    m = len(histogram.agents)
    agents, lengths, weight, ties = strict_ballots(histogram, keys)
    q = quota(float(weight.sum()), winners)
    rows, pos, live, rounds = np.arange(len(weight)), np.zeros(len(weight), np.int64), np.ones(m, bool), []
    by_key = np.argsort(keys, kind="stable")

    def top() -> np.ndarray:
        return np.where(pos < lengths, agents[rows, np.minimum(pos, np.maximum(lengths - 1, 0))], -1)

    def move_on(placed: int) -> None:
        """Ballots still holding weight for the placed agent go to their next continuing agent."""
        moving = (top() == placed) & (weight > 0)
        pos[moving] += 1
        while (stuck := moving & (pos < lengths) & ~live[np.maximum(top(), 0)]).any():
            pos[stuck] += 1

    while live.any():
        current = top()
        counted = (current >= 0) & (weight > 0)
        votes = np.bincount(current[counted], weights=weight[counted], minlength=m)
        candidates = by_key[live[by_key]]
        tally = votes[candidates]
        if tally.max() >= q:
            chosen = int(candidates[np.argmax(tally)])  # the first of the tied, in key order
            supporting = np.where((current == chosen) & counted, weight, 0.0)
            weight -= np.clip(q - (np.cumsum(supporting) - supporting), 0.0, supporting)  # used up in order
            rounds.append((True, [chosen], float(votes[chosen])))
        else:
            chosen = int(candidates[len(tally) - 1 - np.argmin(tally[::-1])])  # the last of the tied
            rounds.append((False, [chosen], float(votes[chosen])))
        live[chosen] = False
        move_on(chosen)
    return rounds, q, ties


@method("stv", needs=("histogram", "agent_keys"))
def stv(histogram: BallotHistogram, agent_keys: np.ndarray, *, winners: int = 0, transfer: str = "gregory") -> Ratings:
    """Single transferable vote: elect at the Droop quota, else eliminate the weakest."""
    m = len(histogram.agents)
    k = max(1, m // 2) if winners == 0 else winners
    if not 1 <= k <= m:
        raise ValueError(f"stv: winners must be between 1 and the number of agents ({m}), not {winners}")
    if transfer not in TRANSFERS:
        raise ValueError(f"stv: transfer must be one of {', '.join(TRANSFERS)}, not {transfer!r}")
    if not len(histogram) or float(np.sum(histogram.weights)) <= 0:
        raise RatingError("stv: no ballots to count")
    info: dict[str, object] = {}
    if transfer == "whole":
        rounds, q, ties = count_rounds_whole(histogram, k, np.asarray(agent_keys))
        info["ballot_ties_broken"] = ties
    else:
        rounds, q = count_rounds(histogram, k)
    elected = [(agents, votes) for won, agents, votes in rounds if won]
    eliminated = [(agents, votes) for won, agents, votes in rounds if not won][::-1]
    score, votes_at = np.zeros(m), np.zeros(m)
    for base, placed in ((2 * m, elected), (m, eliminated)):
        for agents, votes in placed:
            score[agents] = base + _fraction(votes)
            votes_at[agents] = votes
            base -= len(agents)
    groups = [agents for agents, _ in elected + eliminated]
    winner_rows = sum((a for a, _ in elected), [])
    return ranked(histogram.agents, groups, score,
                  extras={"votes": votes_at, "elected": np.isin(np.arange(m), winner_rows)},
                  info={"winners": k, "quota": q, "winner_agents": histogram.agents[winner_rows].tolist(),
                        "rounds": len(rounds), "unique_votes": len(histogram)} | info)
