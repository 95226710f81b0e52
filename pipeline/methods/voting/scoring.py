"""Positional scoring rules: plurality, approval (k) and Borda [VasE, appendix C.2.1-C.2.3].

All three read the position counts and share one driver: an agent's score is the sum over
ballots of the points of its position. Ties inside a ballot share their positions evenly (a
tie for first between two agents gives each half a plurality point). Short ballots (appendix
E): a ballot of length L gives Borda points L-1-position, as OpenSpiel does, so an agent is only
credited for the agents it was compared with; `borda:normalise=true` divides by L-1 so that
every ballot of two or more agents is worth the same. Plurality and approval count a top place
the same whatever the length of the ballot.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import at_least, method
from pipeline.stats.counts import PositionCounts

Points = Callable[[int, int], Fraction | int]  # (ballot length, position) -> points, exactly


def _scoring(positions: PositionCounts, points: Points) -> Ratings:
    # Exact scores (fractions): only scores equal as fractions share a rank.
    return Ratings.from_scores(positions.agents, positions.score(points), info={"ballot_lengths": positions.lengths})


@method("plurality", needs=("positions",))
def plurality(positions: PositionCounts) -> Ratings:
    """Plurality: one point for the top place of each ballot."""
    return _scoring(positions, lambda length, position: int(position == 0))


@method("approval", needs=("positions",), rules={"k": at_least(1)})
def approval(positions: PositionCounts, *, k: int = 2) -> Ratings:
    """Approval: one point for each of the top k places of each ballot."""
    return _scoring(positions, lambda length, position: int(position < k))


@method("borda", needs=("positions",))
def borda(positions: PositionCounts, *, normalise: bool = False) -> Ratings:
    """Borda: L-1-position points in a ballot of length L (divided by L-1 when normalised)."""

    def points(length: int, position: int) -> Fraction | int:
        raw = length - 1 - position
        return Fraction(raw, length - 1) if normalise and length > 1 else raw

    return _scoring(positions, points)
