"""Poisson redraws of count cells for the Poisson bootstrap [VasE, 3.1], and the intervals, rank
intervals and tiers read off the rounds; used by `pipeline.methods.bradley_terry.m_elo` and
`pipeline.methods.uncertainty`.

A bootstrap redraws every cell of weight w as Poisson(w), tens of thousands of cells per round
and a thousand rounds. The count cells take few distinct weights (whole battles), so instead of
`Generator.poisson` (about 80 ns a draw, a rejection sampler that recomputes its constants
for every cell) this inverts the CDF of each distinct weight, tabulated once, with a guide table
[Dev86, ch. III.2.4]: one uniform, two table look-ups and on average about one comparison a draw
(the search compiled, `pipeline.methods.numerics.guide_table`).
Each table spans w +- (10 sqrt(w) + 20), so the dropped tail mass is below 1e-20 (the lower
tail is drawn as the table's first value). Weights with too many distinct values for the table
(`TABLE_MAX` entries) fall back to `Generator.poisson`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.methods.ratings import competition_ranks

TABLE_MAX = 1 << 21
PERCENTILES = (2.5, 97.5)  # of the 95% intervals


@dataclass(frozen=True, eq=False)
class PoissonTable:
    """The guide tables of `weights`' distinct values, built once for every chunk of rounds drawn from
    them (finding the distinct values is a sort of all the weights: 0.35 s for the 1.9M of a
    Diplomacy-scale log, per chunk of 50 rounds when each chunk built its own)."""

    weights: np.ndarray
    tables: tuple | None  # (group, guide, cdf, low, width, drawn, skipped); None: Generator.poisson

    @classmethod
    def of(cls, weights: np.ndarray) -> PoissonTable:
        weights = np.asarray(weights, dtype=np.float64)
        distinct, group = np.unique(weights, return_inverse=True)
        reach = 10 * np.sqrt(distinct) + 20
        low = np.floor(np.maximum(distinct - reach, 0.0))
        width = int(np.ceil((distinct + reach - low).max(initial=0.0))) + 1
        if not len(distinct) or len(distinct) * width > TABLE_MAX:  # no weights (no comparisons) draw nothing
            return cls(weights, None)
        # The Poisson CDF is scipy.special's pdtr (what scipy.stats.poisson.cdf returns, bit for bit), here
        # and not at the top: scipy.special is a tenth of scipy.stats' ~0.7 s import.
        from scipy.special import pdtr

        cdf = pdtr(low[:, None] + np.arange(width), distinct[:, None])
        cdf[:, -1] = 2.0  # above every uniform: the search always stops inside the table
        # guide[g, m]: the first value whose CDF exceeds m / width; the search moves on from there
        buckets = np.arange(width) / width
        guide = np.concatenate([np.searchsorted(row, buckets, side="right") for row in cdf]) + np.repeat(
            np.arange(len(distinct)) * width, width)
        positive = weights > 0  # Poisson(0) is 0: half the cells of a sparse log (a pair met once)
        return cls(weights, (group[positive], guide, cdf.ravel(), low, width, np.flatnonzero(positive), np.flatnonzero(~positive)))

    def draws(self, size: int, rng: np.random.Generator, out: np.ndarray | None = None) -> np.ndarray:
        """`size` rows of independent Poisson(weights) draws, as float64, shape (size, len(weights)), into
        `out` if given (a C-contiguous float64 array of that shape). The rows are drawn in order, so
        drawing them in several calls gives the same rows as one call."""
        from pipeline.methods.numerics.guide_table import invert  # numba is imported on first use only

        out = np.empty((size, len(self.weights))) if out is None else out
        if self.tables is None:
            out[:] = rng.poisson(self.weights, size=(size, len(self.weights)))
            return out
        group, guide, cdf, low, width, drawn, skipped = self.tables
        rng.random(out=out)  # one uniform per cell, also of weight 0: the stream stays the same
        invert(out, drawn, skipped, group, guide, cdf, low, width)
        return out


def poisson_draws(weights: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """`size` rows of independent Poisson(weights) draws, as float64, shape (size, len(weights))."""
    return PoissonTable.of(weights).draws(size, rng)


def tiers(rank: np.ndarray, rank_low: np.ndarray, rank_high: np.ndarray) -> np.ndarray:
    """Tier of each agent (1 is best): best first, the first untiered agent leads a tier that takes every
    untiered agent whose rank interval overlaps the leader's."""
    tier = np.zeros(len(rank), np.int64)
    current = 0
    for leader in np.lexsort((rank_low, rank)):
        if tier[leader]:
            continue
        current += 1
        joins = (tier == 0) & (rank_low <= rank_high[leader])
        tier[joins] = current
    return tier


def interval_columns(scores: np.ndarray, ranks: np.ndarray, rank: np.ndarray,
                     established: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """`ci_low`, `ci_high`, `rank_low`, `rank_high`, `tier` and `rounds_measured` from per-round scores and
    ranks (rounds x agents) and the full-data ranks.

    Absent is not measured: a round that drew none of an agent's records has a NaN rank for it (and a
    NaN score) and is left out of that agent's intervals; `rounds_measured` counts the rounds that
    are not (an agent no round measured has no score interval and the widest rank interval). A NaN
    score with a rank (an agent the method left out of a round) counts at its rank. Given
    `established` (a mask of the agents), ranks are counted among the established agents, and
    among the others after them, in every round (`ranks_within`), and only established agents are
    tiered (the others have tier 0)."""
    low, high = nan_percentiles(scores, PERCENTILES)
    mask = np.ones(len(rank), dtype=bool) if established is None else np.asarray(established, dtype=bool)
    if not mask.all():
        ranks, rank = ranks_within(ranks, mask), ranks_within(rank, mask)
    ordered, measured = sorted_columns(ranks)
    [rank_low] = percentiles_of_sorted(ordered, measured, PERCENTILES[:1], "lower")
    [rank_high] = percentiles_of_sorted(ordered, measured, PERCENTILES[1:], "higher")
    # an agent no round measured has NaN bounds, widened here
    rank_low, rank_high = np.nan_to_num(rank_low, nan=1.0), np.nan_to_num(rank_high, nan=float(len(rank)))
    rank_low, rank_high = rank_low.astype(np.int64), rank_high.astype(np.int64)
    return {"ci_low": low, "ci_high": high, "rank_low": rank_low, "rank_high": rank_high,
            "tier": tiers_within(rank, rank_low, rank_high, mask), "rounds_measured": measured}


def nan_percentiles(values: np.ndarray, q: Sequence[float], method: str = "linear") -> np.ndarray:
    """`np.nanpercentile(values, q, axis=0, method=method)` (q x columns; NaN for a column without a
    number), bit for bit, for every column at once (`sorted_columns`, `percentiles_of_sorted`). numpy's
    own goes column by column in Python: 19 s for 20 rounds of 53k agents."""
    return percentiles_of_sorted(*sorted_columns(values), q, method)


def sorted_columns(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each column of `values` (rounds x columns) as a sorted row, its NaNs last, and its count of numbers:
    one sort of contiguous rows (0.2 s for 1000 rounds of 53k agents; sorting the columns in place
    strides through memory, 0.5 s)."""
    ordered = np.ascontiguousarray(np.asarray(values).T, dtype=np.float64)  # one copy, whatever the dtype
    ordered.sort(axis=1)
    return ordered, ordered.shape[1] - np.isnan(ordered).sum(axis=1)


def percentiles_of_sorted(ordered: np.ndarray, counts: np.ndarray, q: Sequence[float], method: str = "linear") -> np.ndarray:
    """The percentiles `q` of each row of `ordered` (`sorted_columns`), over its first `counts` numbers, by
    numpy's own arithmetic (`np.percentile`'s virtual index (count - 1) q / 100, its neighbours, and its
    `_lerp` for "linear"; the index's floor for "lower", its ceiling for "higher"), so the same bits as
    numpy's; q x rows, NaN for a row without a number."""
    if method not in ("linear", "lower", "higher"):
        raise ValueError(f"method must be linear, lower or higher, not {method!r}")
    found = np.full((len(q), len(ordered)), np.nan)
    rows = np.flatnonzero(counts > 0)
    last = counts[rows] - 1
    for k, quantile in enumerate(np.true_divide(np.asarray(q, dtype=np.float64), 100.0)):
        virtual = last * quantile
        if method != "linear":
            index = (np.floor(virtual) if method == "lower" else np.ceil(virtual)).astype(np.intp)
            found[k, rows] = ordered[rows, index]
            continue
        previous = np.floor(virtual)
        above = virtual >= last  # numpy takes the last number for both neighbours, and gamma from index -1
        gamma = virtual - np.where(above, -1.0, previous)
        below = ordered[rows, np.where(above, last, previous).astype(np.intp)]
        following = ordered[rows, np.where(above, last, previous + 1).astype(np.intp)]
        difference = following - below
        found[k, rows] = np.where(gamma >= 0.5, following - difference * (1 - gamma), below + difference * gamma)
    return found


def tiers_within(rank: np.ndarray, rank_low: np.ndarray, rank_high: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """`tiers` of the agents of `mask`; 0 (no tier) for the others."""
    tier = np.zeros(len(mask), np.int64)
    tier[mask] = tiers(rank[mask], rank_low[mask], rank_high[mask])
    return tier


def ranks_within(ranks: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Competition ranks (one row, or rows of rounds x agents) recounted within two groups: an agent of
    `mask` is 1 + the agents of `mask` ranked strictly better; any other is `mask.sum()` + 1 + the
    others ranked strictly better. Recounting a recount changes nothing."""
    ranks = np.asarray(ranks)
    rows = np.atleast_2d(ranks).astype(np.float64)
    out = np.empty_like(rows)
    offset = 0
    for group in (mask, ~mask):
        members = rows[:, group]
        ordered = np.sort(members, axis=1)
        for r in range(len(rows)):  # NaN (an absent agent) sorts last: it is better than no one, and stays NaN
            out[r, group] = offset + 1 + np.searchsorted(ordered[r], members[r], side="left")
        offset = int(mask.sum())
    out[np.isnan(rows)] = np.nan
    return out.reshape(ranks.shape).astype(ranks.dtype)


def score_interval_columns(scores: np.ndarray, ranks: np.ndarray, rank: np.ndarray, tolerance: float,
                           established: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """`interval_columns` of a bootstrap of scores, with their `rank_ci` (`rank_upper_bounds` at the
    rounds' accuracy `tolerance`), counted among the `established` agents as the ranks are."""
    columns = interval_columns(scores, ranks, rank, established)
    mask = np.ones(len(rank), dtype=bool) if established is None else np.asarray(established, dtype=bool)
    return columns | {"rank_ci": upper_bounds_within(columns["ci_low"], columns["ci_high"], mask, tolerance)}


def upper_bounds_within(ci_low: np.ndarray, ci_high: np.ndarray, mask: np.ndarray, tolerance: float = 0.0) -> np.ndarray:
    """`rank_upper_bounds` among the agents of `mask`, and among the others after them."""
    bounds = np.empty(len(mask), np.int64)
    bounds[mask] = rank_upper_bounds(ci_low[mask], ci_high[mask], tolerance)
    bounds[~mask] = mask.sum() + rank_upper_bounds(ci_low[~mask], ci_high[~mask], tolerance)
    return bounds


def rank_upper_bounds(ci_low: np.ndarray, ci_high: np.ndarray, tolerance: float = 0.0) -> np.ndarray:
    """`rank_ci` [Arena]: 1 + the number of agents whose lower bound is more than `tolerance` (the
    rounds' accuracy) above the agent's upper bound (a NaN bound is above nothing): bounds that agree
    within the fits' accuracy are equal, not above by the solver's last digits. By a search in the
    sorted lower bounds: the agents x agents comparison took 2.8 GB and 4 s at 53k agents."""
    lows = np.sort(ci_low[~np.isnan(ci_low)])
    return (1 + len(lows) - np.searchsorted(lows, ci_high + tolerance, side="right")).astype(np.int64)


def ranks_by_round(scores: np.ndarray, tolerance: float = 0.0) -> np.ndarray:
    """The competition ranks of each round's scores (rows of rounds x agents), as float64; NaN in a
    round without scores. A round's rank is 1 + the number of agents scored more than `tolerance`
    (the rounds' accuracy) higher, counted by a search in its sorted scores (with no tolerance the
    ranks `competition_ranks` gives, without its stable argsort: 2.2x faster at 2,692 agents); a round
    with some scores NaN goes to `competition_ranks` (whose tie groups chain scores each within the
    tolerance of the next)."""
    ranks = np.full(scores.shape, np.nan)
    for r, round_scores in enumerate(scores):
        missing = np.isnan(round_scores)
        if missing.all():
            continue
        if missing.any():
            ranks[r] = competition_ranks(round_scores, tolerance=tolerance)
            continue
        ascending = np.sort(round_scores)
        ranks[r] = 1 + len(ascending) - np.searchsorted(ascending, round_scores + tolerance, side="right")
    return ranks
