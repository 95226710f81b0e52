"""Equal scores share a rank, in exact arithmetic: random weak orders, partial ballots and weights,
each scoring method's and Copeland's scores recomputed with fractions.Fraction from the ballots
themselves. Scores equal as fractions must share a rank (1/3 + 1 + 1 and 1/3 + 1/2 + 1/3 + 1/3 +
1/3 + 1/2 are both 7/3, though not in floating point); different ones must not, and the better
score gets the better rank.

The weights are binary fractions, which the reduction sums exactly, so the exact scores of the
ballots are the exact scores of the statistics the methods read.
"""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline import methods
from pipeline.stats.in_memory import profile

AGENTS = "abcdef"
WEIGHTS = (1, 2, 3, 0.5, 0.25, 1.5)
Ballot = tuple[list[list[str]], float]  # tie groups, best first, and the ballot's weight


@st.composite
def weak_ballots(draw) -> list[Ballot]:
    agents = AGENTS[: draw(st.integers(2, len(AGENTS)))]
    ballots = []
    for _ in range(draw(st.integers(1, 10))):
        ranked = draw(st.permutations(agents))[: draw(st.integers(2, len(agents)))]  # partial: a prefix of an order
        groups = [[ranked[0]]]
        for agent, tied in zip(ranked[1:], draw(st.lists(st.booleans(), min_size=len(ranked) - 1, max_size=len(ranked) - 1))):
            groups[-1].append(agent) if tied else groups.append([agent])
        ballots.append((groups, draw(st.sampled_from(WEIGHTS))))
    return ballots


def positional(ballots: list[Ballot], points) -> dict[str, Fraction]:
    """Sum over ballots of the weight times the mean of `points(L, position)` over the agent's tie group."""
    score: dict[str, Fraction] = {}
    for groups, weight in ballots:
        length, start = sum(map(len, groups)), 0
        for group in groups:
            share = sum((Fraction(points(length, p)) for p in range(start, start + len(group))), Fraction(0)) / len(group)
            for agent in group:
                score[agent] = score.get(agent, Fraction(0)) + Fraction(weight) * share
            start += len(group)
    return score


def copeland(ballots: list[Ballot], tie_credit: Fraction) -> dict[str, Fraction]:
    wins: dict[tuple[str, str], Fraction] = {}
    for groups, weight in ballots:
        for i, upper in enumerate(groups):
            for lower in groups[i + 1:]:
                for a in upper:
                    for b in lower:
                        wins[a, b] = wins.get((a, b), Fraction(0)) + Fraction(weight)
    agents = sorted({a for groups, _ in ballots for group in groups for a in group})
    margin = {(a, b): wins.get((a, b), 0) - wins.get((b, a), 0) for a in agents for b in agents if a != b}
    return {a: sum((Fraction(1) if margin[a, b] > 0 else tie_credit if margin[a, b] == 0 else Fraction(0)
                    for b in agents if b != a), Fraction(0)) for a in agents}


EXACT = {
    "plurality": lambda b: positional(b, lambda length, p: p == 0),
    "approval:k=1": lambda b: positional(b, lambda length, p: p < 1),
    "approval:k=2": lambda b: positional(b, lambda length, p: p < 2),
    "approval:k=3": lambda b: positional(b, lambda length, p: p < 3),
    "borda": lambda b: positional(b, lambda length, p: length - 1 - p),
    "borda:normalise=true": lambda b: positional(b, lambda length, p: Fraction(length - 1 - p, length - 1)),
    "copeland": lambda b: copeland(b, Fraction(1, 2)),
    "copeland:tie_credit=0.2": lambda b: copeland(b, Fraction(1, 5)),  # the decimal the spec says, not its float
}


def check_ranks(spec: str, ballots: list[Ballot]) -> None:
    rankings = [">".join("=".join(group) for group in groups) for groups, _ in ballots]
    stats, names = profile(rankings, [w for _, w in ballots])
    rated = methods.run(spec, stats)
    exact = EXACT[spec](ballots)
    rank = {names[agent]: int(r) for agent, r in zip(rated.agents, rated.rank)}
    score = {names[agent]: float(s) for agent, s in zip(rated.agents, rated.score)}
    assert set(rank) == set(exact), spec
    for a in exact:
        assert abs(score[a] - exact[a]) <= 1e-9 * max(1, abs(exact[a])), (spec, a, score[a], exact[a])
        for b in exact:
            if exact[a] == exact[b]:
                assert rank[a] == rank[b], (spec, a, b, exact[a], score[a], score[b])
            elif exact[a] > exact[b]:
                assert rank[a] < rank[b], (spec, a, b, exact[a], exact[b])


@settings(max_examples=150, deadline=None, derandomize=True)
@given(weak_ballots())
def test_scores_equal_in_exact_arithmetic_share_a_rank(ballots):
    for spec in EXACT:
        check_ranks(spec, ballots)


def test_the_issues_profile_ties_c_and_d_at_seven_thirds():
    # c: 1/3 + 1 + 1; d: 1/3 + 1/2 + 1/3 + 1/3 + 1/3 + 1/2 (plurality, and approval with k=1).
    rows = ["c=d=a", "c>a", "c>b", "d=a>b", "d=a=b", "d=b=e", "d=a=e", "d=b>a"]
    ballots = [([group.split("=") for group in row.split(">")], 1) for row in rows]
    assert positional(ballots, lambda length, p: p == 0)["c"] == positional(ballots, lambda length, p: p == 0)["d"] == Fraction(7, 3)
    for spec in ("plurality", "approval:k=1"):
        check_ranks(spec, ballots)



def test_copeland_ties_one_win_and_a_tie_with_six_ties_at_one_fifth():
    # a beats x1, loses to x2..x5 and never met b (a tie): 1 + 1/5. b ties x1 and met no one else:
    # 6 * 1/5 = 6/5 too, but 1.2000000000000002 in floating point against 1.2.
    rows = ["b=x1", "a>x1", *(f"x{i}>a" for i in range(2, 6))]
    ballots = [([group.split("=") for group in row.split(">")], 1) for row in rows]
    exact = EXACT["copeland:tie_credit=0.2"](ballots)
    assert exact["a"] == exact["b"] == Fraction(6, 5)
    check_ranks("copeland:tie_credit=0.2", ballots)
