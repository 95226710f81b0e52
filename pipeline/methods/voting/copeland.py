"""Copeland: pairwise victories plus `tie_credit` times pairwise ties [Cop51]; [VasE, C.2.5].

Copeland(a) = |{b != a : M(a, b) > 0}| + tie_credit * |{b != a : M(a, b) = 0}|, with M the
margins. A pair that never met has margin 0 and counts as a tie, as in the paper's definition.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import between, method
from pipeline.methods.voting.majority import wins_losses
from pipeline.stats.counts import PairwiseCounts


@method("copeland", needs=("pairwise",), rules={"tie_credit": between(0, 1)})
def copeland(pairs: PairwiseCounts, *, tie_credit: float = 0.5) -> Ratings:
    """Copeland: head-to-head victories plus half a point per head-to-head tie."""
    wins, losses = wins_losses(pairs)
    ties = pairs.n - 1 - wins - losses
    # Exactly, with the credit the spec wrote (0.2 is 1/5): 1 win and 1 tie tie with 6 ties (1.2 against 1.2000000000000002).
    score = wins.astype(object) + Fraction(str(tie_credit)) * ties.astype(object)
    return Ratings.from_scores(pairs.agents, score, extras={"wins": wins.astype(np.int64), "ties": ties.astype(np.int64)})
