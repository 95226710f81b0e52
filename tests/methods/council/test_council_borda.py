"""council-borda: one test per row of the [Council] edge-case table, with the numbers worked by hand.

Labels are upper case (A, B, ...) and stand for the model of the same lower-case name (a, b, ...).
Reviewers r1, r2, ... are not models unless a test says so. N is the number of answers of the
query; a model at position p (0 is the top) gets N-1-p points; its score is the mean of its points.
"""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.methods import run
from pipeline.methods.council.council_borda import confidence, name_ranks, ranks
from pipeline.stats.council import council_profile


def review(reviewer, ranking, labels="ABC", query="q1", **fields):
    return {"query_id": query, "reviewer": reviewer, "ranking": list(ranking),
            "label_to_model": {label: label.lower() for label in labels}} | fields


def rate(records, spec="council-borda:compare="):
    stats, names = council_profile(records)
    result = run(spec, stats)
    return result, {names[int(a)]: i for i, a in enumerate(result.agents)}


def column(result, at, key):
    values = result.score if key == "score" else result.rank if key == "rank" else result.extras[key]
    return {name: values[i].item() for name, i in at.items()}


def test_self_vote_excluded_by_default():
    # Reviewer a ranks A>B>C, reviewer c ranks C>B>A (N = 3).
    # Excluded: a's review gives b 1, c 0 (a's own first place is skipped); c's gives b 1, a 0.
    #   a = 0/1 = 0, b = (1+1)/2 = 1, c = 0/1 = 0 -> b first; a and c tie on score and wins: by name, a 2, c 3.
    # Included: a = (2+0)/2 = 1 with 1 win, b = 1 with 0 wins, c = (0+2)/2 = 1 with 1 win -> a 1, c 2, b 3.
    records = [review("a", "ABC"), review("c", "CBA")]
    result, at = rate(records)
    assert column(result, at, "score") == {"a": 0.0, "b": 1.0, "c": 0.0}
    assert column(result, at, "rank") == {"a": 2, "b": 1, "c": 3}
    assert result.info["self_votes_excluded"] == 2
    included, at = rate(records, "council-borda:compare=,exclude_self_votes=false")
    assert column(included, at, "score") == {"a": 1.0, "b": 1.0, "c": 1.0}
    assert column(included, at, "rank") == {"a": 1, "b": 3, "c": 2}
    assert included.params["exclude_self_votes"] is False


def test_abstention_skipped_entirely():
    # r1 and r3 rank B>A>C; r2 abstains (its ranking C>A>B is ignored). N = 3.
    # a = (1+1)/2 = 1, b = (2+2)/2 = 2, c = 0. Possible votes: the 2 reviews that did not abstain, so
    # coverage is 2/2 = 1 (high): the abstention does not count against anyone.
    records = [review("r1", "BAC"), review("r2", "CAB", abstained=True), review("r3", "BAC")]
    result, at = rate(records)
    assert column(result, at, "score") == {"a": 1.0, "b": 2.0, "c": 0.0}
    assert column(result, at, "vote_count") == {"a": 2, "b": 2, "c": 2}
    assert set(column(result, at, "confidence").values()) == {"high"}
    assert result.info["abstentions"] == 1


def test_partial_ranking_uses_the_positions_given():
    # N = 4. r1 ranks only C>A: c 3 points (a win), a 2. r2 ranks A>B>C>D: a 3 (win), b 2, c 1, d 0.
    # a = (2+3)/2 = 2.5, b = 2/1 = 2, c = (3+1)/2 = 2, d = 0/1 = 0; c beats b on wins (1 to 0).
    # Coverage: 2 possible votes each; b and d got 1 -> 0.5 -> medium.
    result, at = rate([review("r1", "CA", "ABCD"), review("r2", "ABCD", "ABCD")])
    assert column(result, at, "score") == {"a": 2.5, "b": 2.0, "c": 2.0, "d": 0.0}
    assert column(result, at, "rank") == {"a": 1, "c": 2, "b": 3, "d": 4}
    assert column(result, at, "confidence") == {"a": "high", "b": "medium", "c": "high", "d": "medium"}


# r1 ranks A>B>C, r2 ranks C>B>A (N = 3): a = (2+0)/2 = 1, b = (1+1)/2 = 1, c = (0+2)/2 = 1;
# wins: a 1, b 0, c 1.
TIED = [review("r1", "ABC"), review("r2", "CBA")]


def test_tie_in_scores_broken_by_win_count():
    # All score 1; b has no #1 vote, so it ranks below a and c.
    result, at = rate(TIED)
    assert column(result, at, "score") == {"a": 1.0, "b": 1.0, "c": 1.0}
    assert column(result, at, "win_count") == {"a": 1, "b": 0, "c": 1}
    assert column(result, at, "rank")["b"] == 3


def test_tie_in_wins_ordered_by_model_name():
    # a and c tie on score and wins: the table breaks it alphabetically, a 1 and c 2.
    result, at = rate(TIED)
    assert (column(result, at, "rank")["a"], column(result, at, "rank")["c"]) == (1, 2)
    table = result.tables["per_query"].to_pydict()
    names = council_profile(TIED)[1]
    assert [names[a] for a in table["agent"]] == ["a", "c", "b"] and table["final_rank"] == [1, 2, 3]
    # The name, not the id, orders: ids 0 ("zed") and 1 ("amy") with equal score and wins list 1 first.
    # (name_ranks takes each id's position in name order: "zed" is after "amy".)
    order, rank = ranks(np.zeros(2, np.int64), np.ones(2, bool), np.ones(2), np.ones(2), name_ranks({0: 1, 1: 0}, np.array([0, 1])))
    assert order.tolist() == [1, 0] and rank.tolist() == [2, 1]


# Five models (N = 5, 4 - position points), four reviewers; points a 3+3+0+2 = 8... per model:
#   a: A at 0, 1, 4, 2 -> 4+3+0+2 = 9, one win;   b: 2, 3, 2, 0 -> 2+1+2+4 = 9, one win;
#   c: 4, 0, 3, 1 -> 0+4+1+3 = 8, one win;         d: 1, 4, 0, 4 -> 3+0+4+0 = 7, one win;
#   e: 3, 2, 1, 3 -> 1+2+3+1 = 7, no win. Every model got 4 votes, so the score is points / 4.
READINGS = [review("r1", "ADBEC", "ABCDE"), review("r2", "CAEBD", "ABCDE"), review("r3", "DEBCA", "ABCDE"),
            review("r4", "BCAED", "ABCDE")]


@pytest.mark.parametrize(("reading", "expected"), [("strict", [1, 2, 3, 4, 5]), ("shared", [1, 1, 3, 4, 4]),
                                                   ("shared-wins", [1, 1, 3, 4, 5])])
def test_the_three_readings_of_the_record(reading, expected):
    # a, b tie on score and wins (the table: by name; the code: shared); d, e tie on score, d has a win.
    result, at = rate(READINGS, f"council-borda:compare=,ranks={reading}")
    assert column(result, at, "score") == {"a": 2.25, "b": 2.25, "c": 2.0, "d": 1.75, "e": 1.75}
    assert column(result, at, "win_count") == {"a": 1, "b": 1, "c": 1, "d": 1, "e": 0}
    assert [column(result, at, "rank")[x] for x in "abcde"] == expected


def test_no_votes_received_scores_zero_and_ranks_last():
    # N = 4. r1 ranks only A, r2 only B: a = 3, b = 3 (one win each: by name, a 1, b 2); c and d get no
    # vote: score 0 and the last rank, shared (3). A voted model with 0 points would still rank above them.
    result, at = rate([review("r1", "A", "ABCD"), review("r2", "B", "ABCD")])
    assert column(result, at, "score") == {"a": 3.0, "b": 3.0, "c": 0.0, "d": 0.0}
    assert column(result, at, "vote_count") == {"a": 1, "b": 1, "c": 0, "d": 0}
    assert column(result, at, "rank") == {"a": 1, "b": 2, "c": 3, "d": 3}
    # A model whose only review is its own (self-vote excluded) has no votes either.
    result, at = rate([review("a", "AB", "AB"), review("r1", "A", "AB")])  # b: ranked only by a, below a
    assert column(result, at, "vote_count") == {"a": 1, "b": 1}
    result, at = rate([review("a", "AB", "AB")])
    assert column(result, at, "score") == {"a": 0.0, "b": 0.0} and column(result, at, "vote_count") == {"a": 0, "b": 1}
    assert column(result, at, "rank") == {"b": 1, "a": 2}


def test_single_reviewer_rankings_as_is_with_low_confidence():
    # One reviewer ranks B>A>C: b = 2, a = 1, c = 0, ranks as given; coverage is 1, yet confidence is low.
    result, at = rate([review("r1", "BAC")])
    assert column(result, at, "rank") == {"b": 1, "a": 2, "c": 3}
    assert set(column(result, at, "confidence").values()) == {"low"}
    # Two reviewers, one abstaining: still a single reviewer.
    result, at = rate([review("r1", "BAC"), review("r2", "", abstained=True)])
    assert set(result.tables["per_query"].column("confidence").to_pylist()) == {"low"}


def test_score_rank_mismatch_trusts_the_ranking():
    # r1 ranks A>B but scores B higher: the ranking counts (a 2 points and a win, b 1).
    # r2 gives no ranking: its scores B 9 > C 5 > A 1 are the fallback (b 2 and a win, c 1, a 0).
    # a = (2+0)/2 = 1, b = (1+2)/2 = 1.5, c = 1/1 = 1; a beats c on wins.
    records = [review("r1", "AB", scores={"A": 1, "B": 9}), review("r2", "", scores={"A": 1, "B": 9, "C": 5})]
    result, at = rate(records)
    assert column(result, at, "score") == {"a": 1.0, "b": 1.5, "c": 1.0}
    assert column(result, at, "rank") == {"b": 1, "a": 2, "c": 3}
    assert result.info["rankings_from_scores"] == 1


def test_confidence_thresholds():
    # coverage 0.8 -> high, 0.79 -> medium, 0.5 -> medium, 0.49 -> low, no possible vote -> low.
    got = confidence(np.array([8, 79, 5, 49, 0]), np.array([10, 100, 10, 100, 0]), np.zeros(5, bool))
    assert got.tolist() == ["high", "medium", "medium", "low", "low"]
    assert confidence(np.array([1]), np.array([1]), np.array([True])).tolist() == ["low"]


def day(d):
    return f"2024-01-{1 + d:02d}T00:00:00Z" if d < 31 else f"2024-02-{d - 30:02d}T00:00:00Z"


def test_cross_query_mean_of_means_and_window():
    # q1 (day 0, x): r1 A>B, r2 B>A (N = 2): a = (1+0)/2 = 1/2, b = 1/2, one win each.
    # q2 (day 40, x): r1 B>A: b = 1, a = 0.
    # q3 (day 35, y): r1 A>B>C (N = 3): a = 2, b = 1, c = 0.
    # All queries: a = (1/2 + 0 + 2)/3 = 5/6, b = (1/2 + 1 + 1)/3 = 5/6; wins a 2, b 2 -> by name a 1, b 2;
    # c = 0/1 (one vote, 0 points) -> rank 3. (Pooled points would give a 3/4, b 4/4: mean of means differs.)
    records = [
        review("r1", "AB", "AB", "q1", category="x", timestamp=day(0)),
        review("r2", "BA", "AB", "q1", category="x", timestamp=day(0)),
        review("r1", "BA", "AB", "q2", category="x", timestamp=day(40)),
        review("r1", "ABC", "ABC", "q3", category="y", timestamp=day(35)),
    ]
    result, at = rate(records)
    assert column(result, at, "score") == pytest.approx({"a": 5 / 6, "b": 5 / 6, "c": 0.0})
    assert column(result, at, "rank") == {"a": 1, "b": 2, "c": 3}
    assert column(result, at, "appearances") == {"a": 3, "b": 3, "c": 1}
    assert column(result, at, "vote_count") == {"a": 4, "b": 4, "c": 1}
    # The 30-day window ends at day 40 and starts after day 10: q1 is out.
    # x: q2 only -> b 1 (rank 1), a 0 (rank 2). y: q3 -> a 2, b 1, c 0.
    names = council_profile(records)[1]
    board = result.tables["leaderboard"].to_pylist()
    got = [(row["category"], row["final_rank"], names[row["agent"]], row["aggregate_borda"], row["total_votes"], row["total_wins"], row["appearances"])
           for row in board]
    assert got == [("x", 1, "b", 1.0, 1, 1, 1), ("x", 2, "a", 0.0, 1, 0, 1),
                   ("y", 1, "a", 2.0, 1, 1, 1), ("y", 2, "b", 1.0, 1, 0, 1), ("y", 3, "c", 0.0, 1, 0, 1)]
    assert result.info["window_queries"] == 2
    everything, _ = rate(records, "council-borda:compare=,window_days=0")
    x_rows = [row for row in everything.tables["leaderboard"].to_pylist() if row["category"] == "x"]
    # x over q1 and q2: a = (1/2 + 0)/2 = 1/4, b = (1/2 + 1)/2 = 3/4.
    assert sorted((names[r["agent"]], r["aggregate_borda"]) for r in x_rows) == [("a", 0.25), ("b", 0.75)]


def test_comparison_reports_unregistered_specs():
    result, at = rate(TIED, "council-borda:compare=copeland+borda+no-such-method")
    assert result.info["compared_with"] == ["copeland", "borda"]
    assert "not registered" in result.info["comparison_unavailable"]["no-such-method"]
    assert result.tables["comparison"].column_names == ["agent", "council-borda", "copeland", "borda", "max_rank_difference", "flagged_by"]
    with pytest.raises(ValueError, match="itself"):
        rate(TIED, "council-borda:compare=council-borda")


def test_every_review_abstained_rates_the_models_zero_beside_methods_that_rate_nobody():
    # No vote at all: every model scores 0 and shares the last (so the first) rank; the default
    # comparison's pairwise methods see no comparison and rate nobody, which leaves their ranks empty.
    result, at = rate([review("r1", "", abstained=True), review("r2", "", abstained=True)], "council-borda")
    assert column(result, at, "score") == {"a": 0.0, "b": 0.0, "c": 0.0}
    assert column(result, at, "rank") == {"a": 1, "b": 1, "c": 1}
    assert result.tables["comparison"].to_pydict()["copeland"] == [None, None, None]


def test_relabelling_and_reordering_change_nothing():
    records = [review("r1", "BAC"), review("r2", "CAB"), review("a", "ABC"), review("r3", "", abstained=True)]
    first, at1 = rate(records)
    second, at2 = rate(records[::-1])
    assert column(first, at1, "score") == column(second, at2, "score")
    assert first.tables["per_query"].equals(second.tables["per_query"])
