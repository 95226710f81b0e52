"""Single transferable vote with a Droop quota [Tid95]; [VasE, appendix C.2.4].

n is the total ballot weight, k the number of winners (default floor(m/2), at least 1), the quota
floor(n/(k+1) + 1). Each round every ballot counts for its most preferred continuing agents; an
agent reaching the quota is elected, otherwise the agent with the fewest votes is eliminated.
Rounds go on until every agent is placed, as in OpenSpiel's `stv.py`, so the result is a full
order: winners in order of election, then losers from the last eliminated to the first.

Deterministic and order-free where OpenSpiel is not:
- surplus transfer is fractional (Gregory [Tid95]): every ballot counting for an elected agent with t
  votes passes on (t - quota)/t of its weight, instead of whole ballots picked in input order;
- agents tied (within 1e-9 of the total weight) for the most votes at or above the quota are
  elected together, and agents tied for the fewest votes are eliminated together; tied agents
  share a rank and a score;
- a ballot whose top continuing place is a tie group (a weak order) counts 1/g for each of the g
  agents, like plurality; a ballot with no continuing agent left (a partial ballot) is exhausted.

Score [VasE, C.2.4]: with W the winners in order of election and L the losers (each eliminated
agent put in front), a winner scores 2m - i_W and a loser m - i_L, followed by ".X" where X is
its vote in the round it was placed; here the fraction is X / 10^d with d the number of digits
of the integer part of X, which is exactly ".X" for integer votes (6.3 for 3 votes, 6.12 for 12).
"""

from __future__ import annotations

import math

import numpy as np

from pipeline.methods.majority import ranked
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import method
from pipeline.stats.counts import BallotHistogram

TIE_TOLERANCE = 1e-9  # relative to the total weight


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


@method("stv", needs=("histogram",))
def stv(histogram: BallotHistogram, *, winners: int = 0) -> Ratings:
    """Single transferable vote: elect at the Droop quota, else eliminate the weakest."""
    m = len(histogram.agents)
    k = max(1, m // 2) if winners == 0 else winners
    if not 1 <= k <= m:
        raise ValueError(f"stv: winners must be between 1 and the number of agents ({m}), not {winners}")
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
    return ranked(histogram.agents, groups, score,
                  extras={"votes": votes_at, "elected": np.isin(np.arange(m), sum((a for a, _ in elected), []))},
                  info={"winners": k, "quota": q, "winner_agents": histogram.agents[sum((a for a, _ in elected), [])].tolist(),
                        "rounds": len(rounds), "unique_votes": len(histogram)})
