"""Council Borda: Borda points of reviewer-council rankings, averaged per query [Council].

Per query (the record's "Formalized Algorithm" and edge-case table), with N the number of answers
the review saw (its label_to_model) and position 0 the top of its ranking:
- a model gets N-1-position points from each review that ranks it; its Borda score is the mean of
  its points over the votes it received; a win is a vote at position 0;
- self-votes (the reviewer ranking its own answer) are skipped when `exclude_self_votes`, and
  still occupy their position; abstentions are skipped entirely;
- a partial ranking uses the positions it gives (unranked models get no vote from it);
- an explicit ranking wins over scores; scores are the fallback when no ranking is given (the
  reviews reader resolves this, `order_from` = "scores");
- order: Borda score, then win count (more #1 votes = higher rank), then model name (names sorted
  by code point, through `CouncilReviews.name_order`). The record reads three ways, and
  `ranks=` picks one. Case: five models, a and b with equal score and wins, c, then d and e with
  equal score and d with more wins:
    `strict` (default): the edge-case table, "Tie in scores: use win_count as tiebreaker", "Tie
      in wins: alphabetical by model name": every model its own rank, 1, 2, 3, 4, 5;
    `shared`: the record's reference code (`final_rank` changes only when the score drops):
      equal scores share a rank whatever the wins, 1, 1, 3, 4, 4;
    `shared-wins`: equal score and wins share a rank, names order only the listing: 1, 1, 3, 4, 5
      (vase's reading before `ranks=` existed);
- a model with no votes gets score 0 and the last rank, shared by all such models in every
  reading (the table's "rank = last");
- confidence: coverage = votes / possible votes, where possible votes are the query's reviews
  that did not abstain (less the model's own review when self-votes are excluded); high from
  0.8, medium from 0.5, low below, and low whenever a single reviewer did not abstain.

Across queries (the record's "Leaderboard Aggregation"): the mean of per-query Borda means over
the queries in which the model received votes (each query counts equally; a query without votes
carries no information about the model), total votes, total wins, number of such queries. The
Ratings aggregate every review; the `leaderboard` table does it per model and category over the
`window_days` before the latest review (a query's time is its latest review's; undated queries
are left out unless `window_days=0`, which takes everything). Means are exact fractions, so
equal means tie exactly.

Because Borda can favour safe answers and be gamed, the same reviews (as core statistics, with
self-votes excluded) are rated by each `compare` spec ('+'-separated) and agents whose rank
differs by more than two places are flagged (pipeline.methods.comparison).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import defaultdict
from fractions import Fraction

import numpy as np
import pyarrow as pa

from pipeline.methods.comparison import comparable_needs, compare_ranks
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import NON_NEGATIVE, Rule, method, one_of
from pipeline.stats.council import CouncilReviews
from pipeline.stats.counts import CORE_STATISTICS

CONFIDENCE = np.array(["low", "medium", "high"])
DAY_US = 86_400_000_000


def confidence(votes: np.ndarray, possible: np.ndarray, single_reviewer: np.ndarray) -> np.ndarray:
    """The record's calculate_confidence, plus "low" for a single reviewer."""
    coverage = np.divide(votes, possible, out=np.zeros(len(votes)), where=np.asarray(possible) > 0)
    level = np.where(coverage >= 0.8, 2, np.where(coverage >= 0.5, 1, 0))
    return CONFIDENCE[np.where(single_reviewer, 0, level)]


RANKS = ("strict", "shared", "shared-wins")


def ranks(group: np.ndarray, voted: np.ndarray, score: np.ndarray, wins: np.ndarray, name_rank: np.ndarray,
          reading: str = "strict") -> tuple[np.ndarray, np.ndarray]:
    """Listing order and rank within each group: voted first, then score, wins (both descending), name.

    Models without votes share the last rank; among the others `reading` (see the module doc) says
    which of score, wins and name separate ranks (a shared rank is the first of its tie, 1, 2, 2, 4).
    """
    order = np.lexsort((name_rank, -wins, -score, ~voted, group))
    g, v, s, w, n = group[order], voted[order], score[order], wins[order], name_rank[order]
    pos = np.arange(len(order))
    new_group = np.r_[True, g[1:] != g[:-1]]
    differs = (v[1:] != v[:-1]) | (s[1:] != s[:-1])
    if reading != "shared":
        differs |= w[1:] != w[:-1]
    if reading == "strict":
        differs |= (n[1:] != n[:-1]) & v[1:]
    new_tie = new_group | np.r_[True, differs]
    start = np.maximum.accumulate(np.where(new_group, pos, 0))
    rank = np.empty(len(order), np.int64)
    rank[order] = np.maximum.accumulate(np.where(new_tie, pos, 0)) - start + 1
    return order, rank


class QueryResults:
    """Per (query, candidate model) cell: points, votes, wins, possible votes, rank, confidence."""

    def __init__(self, reviews: CouncilReviews, exclude_self_votes: bool, reading: str):
        self.reviews = reviews
        self.query = np.repeat(np.arange(reviews.n_queries), np.diff(reviews.candidate_offsets))
        self.agent = reviews.candidates.astype(np.int64)  # the tables and ratings give store ids as int64
        universe = np.unique(self.agent)
        width = np.int64(len(universe))
        keys = self.query * width + np.searchsorted(universe, self.agent)  # sorted: queries, then ids
        review, model, position = reviews.positions()
        own = model == reviews.reviewer[review]
        keep = ~(exclude_self_votes & own) & ~reviews.abstained[review]
        self.self_votes = int(np.sum(own & ~reviews.abstained[review])) if exclude_self_votes else 0
        cell = np.searchsorted(keys, reviews.query[review] * width + np.searchsorted(universe, model))[keep]  # always a candidate
        size = len(keys)
        self.points = np.bincount(cell, weights=(reviews.size[review] - 1 - position)[keep], minlength=size).astype(np.int64)
        self.votes = np.bincount(cell, minlength=size).astype(np.int64)
        self.wins = np.bincount(cell[position[keep] == 0], minlength=size).astype(np.int64)

        active = ~reviews.abstained
        active_per_query = np.bincount(reviews.query[active], minlength=reviews.n_queries)
        self.possible = active_per_query[self.query].astype(np.int64)
        if exclude_self_votes:  # a model's own review is no possible vote for it
            slot, known = lookup(universe, reviews.reviewer[active])
            cell_of_own, own_cell = lookup(keys, reviews.query[active][known] * width + slot[known])
            self.possible -= np.bincount(cell_of_own[own_cell], minlength=size).astype(np.int64)
        self.single = active_per_query[self.query] == 1
        self.voted = self.votes > 0
        self.score = np.divide(self.points, self.votes, out=np.zeros(size), where=self.voted)
        self.reading = reading
        self.order, self.rank = ranks(self.query, self.voted, self.score, self.wins,
                                      name_ranks(reviews.name_order, self.agent), reading)
        self.confidence = confidence(self.votes, self.possible, self.single)
        self.active_reviewers = [set() for _ in range(reviews.n_queries)]
        for q, r in zip(reviews.query[active].tolist(), reviews.reviewer[active].tolist()):
            self.active_reviewers[q].add(r)

    def table(self) -> pa.Table:
        o, rv = self.order, self.reviews
        stamps = [int(rv.timestamp[q]) if rv.dated[q] else None for q in self.query[o]]
        return pa.table({
            "query_id": rv.query_ids.take(pa.array(self.query[o])).cast(pa.string()),
            "category": pa.array([rv.category[q] for q in self.query[o]], pa.string()),
            "timestamp": pa.array(stamps, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            "final_rank": self.rank[o], "agent": self.agent[o], "borda_score": self.score[o], "vote_count": self.votes[o],
            "win_count": self.wins[o], "possible_votes": self.possible[o], "confidence": self.confidence[o],
        })


def lookup(sorted_values: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index of each value in a sorted array, and whether it is there."""
    at = np.searchsorted(sorted_values, values)
    found = at < len(sorted_values)
    found[found] = sorted_values[at[found]] == values[found]
    return at, found


def name_ranks(name_order: dict[int, int], ids: np.ndarray) -> np.ndarray:
    """Alphabetical rank of each id's name (the record's last tie-break), from the ids' name order
    (`CouncilReviews.name_order`: positions of the names sorted by code point, no names needed)."""
    alphabet = {i: k for k, i in enumerate(sorted(name_order, key=lambda i: (name_order[i], i)))}
    return np.array([alphabet[int(i)] for i in ids], dtype=np.int64)


def aggregate(results: QueryResults, cells: np.ndarray, key: list) -> dict:
    """Per key: mean of per-query Borda means over voted cells, votes, wins, queries, possible, reviewers."""
    groups: dict = defaultdict(lambda: {"sum": Fraction(0), "queries": 0, "votes": 0, "wins": 0, "possible": 0, "reviewers": set()})
    for c, k in zip(cells.tolist(), key):
        g = groups[k]
        g["reviewers"] |= results.active_reviewers[results.query[c]]
        g["possible"] += int(results.possible[c])
        if results.voted[c]:
            g["sum"] += Fraction(int(results.points[c]), int(results.votes[c]))
            g["queries"] += 1
            g["votes"] += int(results.votes[c])
            g["wins"] += int(results.wins[c])
    return dict(groups)


def _columns(groups: dict, keys: list, agents: np.ndarray, results: QueryResults, group: np.ndarray) -> dict[str, np.ndarray]:
    entries = [groups[k] for k in keys]
    score = np.array([float(e["sum"] / e["queries"]) if e["queries"] else 0.0 for e in entries])
    votes = np.array([e["votes"] for e in entries], np.int64)
    wins = np.array([e["wins"] for e in entries], np.int64)
    order, rank = ranks(group, votes > 0, score, wins, name_ranks(results.reviews.name_order, agents), results.reading)
    possible = np.array([e["possible"] for e in entries], np.int64)
    single = np.array([len(e["reviewers"]) == 1 for e in entries])
    return {"order": order, "rank": rank, "score": score, "votes": votes, "wins": wins,
            "queries": np.array([e["queries"] for e in entries], np.int64), "confidence": confidence(votes, possible, single)}


def _window(reviews: CouncilReviews, window_days: int) -> tuple[np.ndarray, dict[str, object]]:
    """Queries inside the window that ends at the latest review (all queries when window_days is 0)."""
    if window_days == 0 or not reviews.dated.any():
        inside = np.ones(reviews.n_queries, bool) if window_days == 0 else np.zeros(reviews.n_queries, bool)
        return inside, {"window_days": window_days, "window_end": None}
    end = int(reviews.timestamp[reviews.dated].max())
    start = end - window_days * DAY_US
    iso = lambda us: dt.datetime.fromtimestamp(us / 1e6, dt.UTC).isoformat()  # noqa: E731
    return reviews.dated & (reviews.timestamp > start), {"window_days": window_days, "window_start": iso(start), "window_end": iso(end)}


def leaderboard(results: QueryResults, window_days: int) -> tuple[pa.Table, dict[str, object]]:
    """Per model and category over the window: the record's cross-query aggregation."""
    inside, info = _window(results.reviews, window_days)
    cells = np.flatnonzero(inside[results.query])
    categories = [results.reviews.category[q] for q in results.query[cells]]
    key = [(c if c is not None else "", int(a)) for c, a in zip(categories, results.agent[cells])]
    groups = aggregate(results, cells, key)
    keys = sorted(groups)
    category_codes = np.unique([k[0] for k in keys], return_inverse=True)[1] if keys else np.zeros(0, np.int64)
    agents = np.array([k[1] for k in keys], np.int64)
    col = _columns(groups, keys, agents, results, np.asarray(category_codes).ravel())
    o = col["order"]
    table = pa.table({
        "category": pa.array([keys[i][0] or None for i in o], pa.string()), "final_rank": col["rank"][o], "agent": agents[o],
        "aggregate_borda": col["score"][o], "total_votes": col["votes"][o], "total_wins": col["wins"][o],
        "appearances": col["queries"][o], "confidence": col["confidence"][o],
    })
    return table, info | {"window_queries": int(inside.sum())}


def comparison_specs(compare: str) -> list[str]:
    """The specs of `compare`, joined by '+'."""
    return [s.strip() for s in compare.split("+") if s.strip()]


def _without_council_borda(compare: object) -> bool:
    """Whether `compare` leaves council-borda out (a spec that cannot run is reported by the comparison)."""
    return "council-borda" not in (s.partition(":")[0].strip() for s in comparison_specs(str(compare)))


@method("council-borda", needs=("council_reviews",), kinds=("reviews",),
        rules={"window_days": NON_NEGATIVE, "ranks": one_of(*RANKS), "compare": Rule(_without_council_borda, "specs joined by +, none of them council-borda itself")})
def council_borda(reviews: CouncilReviews, *, exclude_self_votes: bool = True,
                  window_days: int = 30, ranks: str = "strict",
                  compare: str = "copeland+iterative-maximal-lotteries+m-elo:bootstrap=0") -> Ratings:
    """Council Borda: mean N-1-position points per query, self-votes and abstentions skipped [Council].

    The comparison uses maximal lotteries through their iterated form [VasE, C.2.9]: a single
    maximal lottery gives its support rank 1 and ties everyone else, so its ranks would "differ"
    from any full ranking for reasons that say nothing about Borda."""
    results = QueryResults(reviews, exclude_self_votes, ranks)
    agents = np.unique(results.agent)
    cells = np.arange(len(results.agent))
    groups = aggregate(results, cells, results.agent.tolist())
    col = _columns(groups, agents.tolist(), agents, results, np.zeros(len(agents), np.int64))
    board, window = leaderboard(results, window_days)
    ratings = Ratings(
        agents, col["score"], col["rank"],
        extras={"vote_count": col["votes"], "win_count": col["wins"], "appearances": col["queries"], "confidence": col["confidence"]},
        info={"queries": reviews.n_queries, "reviews": len(reviews.query), "abstentions": int(reviews.abstained.sum()),
              "self_votes_excluded": results.self_votes, "rankings_from_scores": int(reviews.from_scores.sum()),
              "duplicate_reviews_dropped": reviews.duplicates,
              "reviewer_agents": sorted({int(r) for r in reviews.reviewer[~reviews.abstained]})} | window,
        tables={"per_query": results.table(), "leaderboard": board},
    )
    specs = comparison_specs(compare)
    if not specs:
        return ratings
    comparison = compare_ranks(ratings, "council-borda", specs, reviews.statistics(CORE_STATISTICS | comparable_needs(specs, "reviews")))
    flagged = np.array([", ".join(f) for f in comparison.flagged_by], dtype=object)
    return dataclasses.replace(
        ratings, extras=ratings.extras | {"rank_mismatch": flagged},
        info=ratings.info | {"compared_with": [s for s in specs if s not in comparison.unavailable],
                             "comparison_unavailable": comparison.unavailable,
                             "rank_mismatch_agents": [int(a) for a, f in zip(agents, flagged) if f]},
        tables=ratings.tables | {"comparison": comparison.table},
    )
