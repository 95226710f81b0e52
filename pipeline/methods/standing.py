"""Who holds a headline rank, and by which key: provisional agents and a board's order key.

Rating systems for people keep newcomers apart until they have played enough (FIDE's and USCF's
provisional ratings, Glicko's deviation, Arena's vote threshold): on a long-tailed log the point
estimate of an agent seen once or twice is as much the prior as the data, and a board ordered by
it puts such agents on top (on WTA 2000-2024, m-Elo with prior 0.01 ranks a player with 4 matches
first, above Serena Williams and her 913). A `Standing` says

- `min_records`: an agent that appears in fewer records (battles, games, tasks, ballots:
  `Statistics.appearances`) is *provisional*. It keeps its score and intervals, but its rank
  is counted among the provisional agents only, after every established agent
  (`ranks_within`), and it has no tier (0). Ranks of established agents are counted among
  established agents only, in the point ranking and in every bootstrap round (so their rank
  intervals and tiers say nothing about agents with a handful of records). The default,
  `MIN_RECORDS`, is where the median 95% interval of m-Elo (prior 0.01) on WTA becomes narrower
  than the logistic scale, 400 points, odds of 10:1 (docs/design-notes.md). With every agent
  provisional, or none, the ranks are the method's.
- `order`: the key of the headline ranks: `score` (the method's own ranking), `lower` (the lower
  end of the 95% score interval, a conservative estimate) or `rank_ub` (the rank upper bound of
  [Arena], `rank_ci`: 1 + the established agents whose whole interval lies above this one's).
  The last two need intervals (`bootstrap=R`).

The registry applies a standing after a method rates (`pipeline.methods.registry.run`); the
bootstraps receive the established agents (`established`, store ids) to count rank intervals
among them (`pipeline.methods.numerics.resample.interval_columns`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from pipeline.methods.numerics.resample import ranks_within, tiers_within, upper_bounds_within
from pipeline.methods.ratings import Ratings, competition_ranks
from pipeline.stats.counts import Statistics

MIN_RECORDS = 25
ORDERS = ("score", "lower", "rank_ub")
PROVISIONAL = "provisional"  # the extras column that flags provisional agents


@dataclass(frozen=True)
class Standing:
    min_records: int = MIN_RECORDS
    order: str = "score"

    def __post_init__(self) -> None:
        check_standing(self.min_records, self.order)

    def established(self, stats: Statistics) -> np.ndarray:
        """Store ids of the agents with at least `min_records` records."""
        return stats.agents[np.asarray(stats.appearances) >= self.min_records]

    def apply(self, ratings: Ratings, established: np.ndarray) -> Ratings:
        """`ratings` with headline ranks by `order` among the `established` agents (store ids), the
        provisional ones after them, flagged in the extras column `provisional`, and tiers recounted
        among the established agents by those ranks (a provisional agent has tier 0). Rank intervals
        and `rank_ci` are the bootstrap's, counted among the established agents when it was given them."""
        mask = np.isin(ratings.agents, established)
        extras = dict(ratings.extras)
        if self.order == "score":
            key = ratings.rank.astype(np.float64)
        elif "ci_low" not in extras:
            raise ValueError(f"{ratings.name}: order {self.order} needs intervals; add bootstrap=R to the spec, or order by score")
        elif self.order == "lower":
            key = -np.nan_to_num(extras["ci_low"], nan=-np.inf)
        else:
            key = extras.get("rank_ci", upper_bounds_within(extras["ci_low"], extras["ci_high"], mask)).astype(np.float64)
        rank = ranks_within(competition_ranks(key, higher_is_better=False), mask)
        if "tier" in extras:
            extras["tier"] = tiers_within(rank, extras["rank_low"], extras["rank_high"], mask)
        extras[PROVISIONAL] = ~mask
        return replace(ratings, rank=rank, extras=extras,
                       info=ratings.info | {"ordered_by": self.order, "min_records": self.min_records,
                                            "provisional_count": int((~mask).sum())})


def check_standing(min_records: object, order: object, where: str = "") -> None:
    """Raise ValueError (one line) unless `min_records` is a non-negative int and `order` one of `ORDERS`."""
    if isinstance(min_records, bool) or not isinstance(min_records, (int, np.integer)) or min_records < 0:
        raise ValueError(f"{where}min_records={min_records!r}: expected a whole number of records, 0 or more")
    if order not in ORDERS:
        raise ValueError(f"{where}order {order!r}: expected one of {', '.join(ORDERS)}")
