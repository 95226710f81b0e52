"""STV: exact Gregory transfers on the weight grid, simultaneous ties, weak and partial ballots,
whole-ballot transfers in id order (the [VasE] Atari table), degenerate data."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from pipeline import methods
from pipeline.methods.convergence import RatingError
from pipeline.methods.voting.stv import GRID, count_rounds, stv, vote_fraction
from pipeline.stats import reduce_store
from pipeline.stats.ballot_order import BallotOrder
from pipeline.stats.counts import BallotHistogram
from pipeline.stats.in_memory import profile, statistics_of_records
from pipeline.store import Store
from tests.conftest import SAMPLES
from tests.voting_profiles import strict_ballots, weak_ballots


def plain_gregory(histogram: BallotHistogram, winners: int, fixed_point: bool = True):
    """Reference: textbook Gregory, ballot by ballot, in Python fractions; with vase's fixed point
    (each ballot's weight after a transfer truncated to 2^-64, votes compared to the nearest
    2^-40), or exact."""
    weight = [Fraction(int(round(w * GRID)), GRID) for w in histogram.weights]
    q = Fraction(int(sum(weight) // (winners + 1)) + 1)
    live, rounds = set(range(len(histogram.agents))), []

    def tops(ballot):
        return next(([a for a in group if a in live] for group in ballot if any(a in live for a in group)), [])

    def compared(v):
        return math.floor(v * 2**40 + Fraction(1, 2)) if fixed_point else v

    while live:
        votes = dict.fromkeys(live, Fraction(0))
        for ballot, w in zip(histogram.ballots, weight):
            for a in tops(ballot):
                votes[a] += w / len(tops(ballot))
        best, worst = max(compared(v) for v in votes.values()), min(compared(v) for v in votes.values())
        if best >= compared(q):
            chosen = sorted(a for a in live if compared(votes[a]) == best)
            t = max(votes[a] for a in chosen)
            for i, ballot in enumerate(histogram.ballots):
                top = tops(ballot)
                weight[i] *= 1 - Fraction(sum(a in chosen for a in top), max(len(top), 1)) * q / t
                if fixed_point:
                    weight[i] = Fraction(math.floor(weight[i] * 2**64), 2**64)
            rounds.append((True, chosen, t))
        else:
            chosen = sorted(a for a in live if compared(votes[a]) == worst)
            rounds.append((False, chosen, min(votes[a] for a in chosen)))
        live -= set(chosen)
    return rounds


def test_count_equals_textbook_gregory():
    # Equal rounds, and every vote the correctly rounded float of the reference's; ties are exact.
    # The fixed point places every agent of these 200 profiles as exact rationals do, exact ties
    # and votes exactly at the quota included (truncation alone, compared exactly, does not).
    rng = np.random.default_rng(4)
    for trial in range(200):
        m, n = int(rng.integers(3, 8)), int(rng.integers(2, 15))
        ballots = (weak_ballots if trial % 2 else strict_ballots)(rng, m, n)
        stats = profile(ballots, weights=rng.choice([1, 2, 0.5, 1 / 3, 0.1], n))[0]
        k = int(rng.integers(1, m))
        rounds, _ = count_rounds(stats.histogram, k)
        plain = plain_gregory(stats.histogram, k)
        assert [(w, a) for w, a, _ in rounds] == [(w, a) for w, a, _ in plain]
        assert [v for *_, v in rounds] == [float(v) for *_, v in plain]
        assert [(w, a) for w, a, _ in plain_gregory(stats.histogram, k, fixed_point=False)] == [(w, a) for w, a, _ in plain]


def test_fractional_surplus():
    # 4 a>b, 2 a>c, 3 c; 2 winners: quota floor(9/3 + 1) = 4. a is elected with 6 and passes on its
    # surplus 2, a third of each of its ballots: b gets 4/3, c 3 + 2/3. Nobody reaches 4, so b is
    # eliminated (its a>b ballots are then exhausted), and c, alone with 11/3 < 4, goes last.
    stats, _ = profile(["a>b"] * 4 + ["a>c"] * 2 + ["c"] * 3)
    rounds, q = count_rounds(stats.histogram, 2)
    assert q == 4
    assert rounds == [(True, [0], 6.0), (False, [1], 4 / 3), (False, [2], 11 / 3)]


def test_ties_are_placed_together(condorcet_cycle):
    # Rock-paper-scissors: one first place each, quota 2 for one winner: all three are eliminated
    # together in round one, so they share rank 1 and score 3.1 (m - 0 plus 1 vote).
    r = methods.run("stv:winners=1", condorcet_cycle[0])
    np.testing.assert_array_equal(r.rank, [1, 1, 1])
    np.testing.assert_allclose(r.score, [3.1, 3.1, 3.1])


def test_exact_ties_after_transfers_whatever_the_weights():
    # a and b are mirror images (every ballot has its twin with a and b swapped, same weight), so
    # their votes are equal in every round in exact arithmetic; in floating point a sum of thirds
    # and sevenths in another order can differ in the last bit. They must share every place.
    rng = np.random.default_rng(6)
    for _ in range(100):
        base = weak_ballots(rng, 5, 6)
        twins = [b.translate(str.maketrans("ab", "ba")) for b in base]
        w = rng.choice([1 / 3, 1 / 7, 0.1, 2.5], size=6)
        for ballots in (base + twins, twins + base):
            r = methods.run("stv:winners=2", profile(ballots, weights=np.r_[w, w])[0])
            assert r.rank[0] == r.rank[1] and r.score[0] == r.score[1]


def test_one_grid_step_is_a_difference():
    # 1000 ballots, a ahead of b by 2^-24 of weight. A tolerance of 1e-9 of the total weight (1e-6)
    # would tie them and eliminate both in round two (ranks 1, 1, 3); exactly, b alone goes out.
    stats, _ = profile(["a>c"] * 500 + ["b>c"] * 500, weights=[1.0 + 1 / GRID] + [1.0] * 999)
    rounds, _ = count_rounds(stats.histogram, 1)
    assert rounds == [(False, [2], 0.0), (False, [1], 500.0), (False, [0], 500.0 + 1 / GRID)]
    assert methods.run("stv", stats).rank.tolist() == [1, 2, 3]


def test_weak_top_splits_the_vote():
    # "a=b>c" gives a and b half a vote each, "c" one to c; quota floor(2/2 + 1) = 2. a and b tie
    # for the fewest and go out together; their ballot then counts for c, which reaches 2.
    rounds, _ = count_rounds(profile(["a=b>c", "c"])[0].histogram, 1)
    assert rounds == [(False, [0, 1], 0.5), (True, [2], 2.0)]


def test_score_digits_and_weights():
    assert vote_fraction(3) == pytest.approx(0.3) and vote_fraction(12) == pytest.approx(0.12) and vote_fraction(2.5) == 0.25
    ballots = ["a>b>c", "b>a>c", "c>b>a", "a>c>b"]
    one, ten = profile(ballots)[0], profile(ballots, weights=[10] * 4)[0]
    np.testing.assert_array_equal(methods.run("stv", one).rank, methods.run("stv", ten).rank)


def test_huge_weights_count_exactly():
    # Weights of 1e11 (totals up to 5e11, the store's exact limit: 2^62 grid units and more) are
    # counted on Python integers, exactly: Gregory equals exact rationals, the whole count equals
    # OpenSpiel's on the same integer weights. (The Droop quota floor(n/(k+1) + 1) adds one unit
    # of weight, so scaling every weight may change the count: it does in OpenSpiel too.)
    from open_spiel.python.voting import base
    from open_spiel.python.voting import stv as open_spiel_stv

    rng = np.random.default_rng(7)
    for _ in range(20):
        ballots = strict_ballots(rng, 5, 4)
        weights = 1e11 + rng.integers(0, 3, 4) * 1e10 + rng.integers(0, 1000, 4)
        stats, names = profile(ballots, weights=weights, statistics={"histogram", "ballot_order"})
        rounds, _ = count_rounds(stats.histogram, 2)
        assert [(w, a) for w, a, _ in rounds] == [(w, a) for w, a, _ in plain_gregory(stats.histogram, 2)]
        whole = methods.run("stv:winners=2,transfer=whole", stats)
        votes = [base.WeightedVote(int(w), b.split(">")) for b, w in zip(ballots, weights)]
        grouped = base.PreferenceProfile(votes=votes, alternatives=names)
        grouped.group()
        theirs = open_spiel_stv.STVVoting(num_winners=2).run_election(grouped)
        assert [names[i] for i in np.argsort(whole.rank)] == theirs.ranking


def test_degenerate_data():
    # One agent: elected, rank 1. All ballots tied: Gregory eliminates everyone together; the whole
    # count splits the tie by name, as it says in ballot_ties_broken.
    alone = methods.run("stv", profile(["a", "a"])[0])
    assert alone.rank.tolist() == [1] and alone.info["winner_agents"] == [0]
    tied = profile(["a=b=c"] * 3)[0]
    assert methods.run("stv", tied).rank.tolist() == [1, 1, 1]
    whole = methods.run("stv:transfer=whole", tied)
    assert whole.rank.tolist() == [1, 2, 3] and whole.info["ballot_ties_broken"] == 1
    # Nothing to count (every ballot filtered out), and more winners than agents: one-line refusals.
    with pytest.raises(RatingError, match=r"^stv: no ballots to count \(2 agents, 0 ballots"):
        stv(BallotHistogram(np.array([0, 1]), (), np.zeros(0)), np.arange(2), BallotOrder({}))
    with pytest.raises(RatingError, match=r"^stv: 4 winners asked of 3 agents; ask for at most 3$"):
        methods.run("stv:winners=4", profile(["a>b>c"])[0])
    with pytest.raises(ValueError, match="parameter winners=-1 must be non-negative"):
        methods.run("stv:winners=-1", profile(["a>b>c"])[0])


def test_whole_transfer_counts_ballots_in_id_order():
    # a is elected with 3 of 5 ballots (quota floor(5/3 + 1) = 2): the first two by id are used up
    # and the third moves on whole. Which one moves on decides between b and c.
    rows = [{"ballot_id": "v10", "ranking": "a>c>b"}, {"ballot_id": "v2", "ranking": "a>b>c"},
            {"ballot_id": "v1", "ranking": "a>b>c"}, {"ballot_id": "v3", "ranking": "b>c>a"}, {"ballot_id": "v4", "ranking": "c>b>a"}]
    stats, names = statistics_of_records(rows, "ballots", {"histogram", "ballot_order"})
    r = methods.run("stv:winners=2,transfer=whole", stats)
    # v1 and v2 (a>b>c, one ballot of weight 2) make the quota; v10 (a>c>b) moves on: c reaches 2.
    assert [names[a] for a in r.info["winner_agents"]] == ["a", "c"]
    rows[0]["ballot_id"] = "v0"  # now a>c>b is used up and one a>b>c moves on: b is elected
    stats, names = statistics_of_records(rows, "ballots", {"histogram", "ballot_order"})
    assert [names[a] for a in methods.run("stv:winners=2,transfer=whole", stats).info["winner_agents"]] == ["a", "b"]
    # Gregory does not depend on the order: a third of each of a's ballots moves on.
    gregory = methods.run("stv:winners=2", stats)
    assert methods.run("stv:winners=2", statistics_of_records(rows[::-1], "ballots", {"histogram", "ballot_order"})[0]).score.tolist() == gregory.score.tolist()


# [VasE] appendix table 6, STV (num winners = 3) on the Atari table of Hessel et al.: rank order
# and scores as printed (agent names as in the data file).
ATARI_STV = [("rainbow", 16.19), ("distrib-dqn", 15.14), ("a3c", 14.16), ("dueling-ddqn", 8.12), ("prior-ddqn", 7.6),
             ("noisy-dqn", 6.3), ("ddqn", 5.2), ("dqn", 4.0)]


@pytest.fixture(scope="module")
def atari(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("atari"))
    store.ingest([SAMPLES / "atari" / "rainbow_noop_scores.csv"], "scores")
    return reduce_store(store, "scores", {"histogram", "ballot_order"}), store.dictionary("agents").names


def test_atari_table_with_whole_transfers(atari):
    # The published STV column, rank by rank and score by score. The table lists the games by
    # name, which is vase's ballot order; its three tied pairs split by name are one of the
    # tie-breaks with which OpenSpiel gives this column (docs/reproductions.md).
    stats, names = atari
    r = methods.run("stv:winners=3,transfer=whole", stats)
    order = np.argsort(r.rank)
    assert [(names[r.agents[i]], round(float(r.score[i]), 2)) for i in order] == ATARI_STV
    assert r.info["ballot_ties_broken"] == 2 and r.info["quota"] == 14


def test_atari_table_with_gregory_transfers_differs_in_places_2_and_3(atari):
    # Gregory hands on 5/19 of each of rainbow's 19 ballots instead of its last 5 whole ballots: a3c
    # (4 of the 19 next preferences) gets 20/19 instead of 1 and distrib-dqn (7) 35/19 instead of
    # 2; from there a3c reaches the quota before distrib-dqn.
    stats, names = atari
    r = methods.run("stv:winners=3", stats)
    assert [names[r.agents[i]] for i in np.argsort(r.rank)][:3] == ["rainbow", "a3c", "distrib-dqn"]


def test_every_formula_one_race_is_counted():
    # Exact rationals took 67 s on the first 70 of F1's 1,143 races (864 drivers) and could not
    # finish the whole; the fixed point counts them all, and on the first 30 races (where exact
    # rationals take a fraction of a second) it places every driver as they do.
    from benchmarks.datasets import f1_ballots, shared_datasets

    if not (shared_datasets() / "f1_race_results").is_dir():
        pytest.fail(f"the shared data sets are not at {shared_datasets()}")
    rankings = f1_ballots(None)["ranking"].to_list()
    stats, names = profile(rankings)
    assert (len(names), len(stats.histogram)) == (864, 1143)
    r = methods.run("stv", stats)
    # The quota is floor(1143/433) + 1 = 3 wins: round one elects the driver with the most wins alone.
    (most_wins, _), (_, runner_up) = Counter(x.split(">")[0] for x in rankings).most_common(2)
    assert r.info["quota"] == 3 and runner_up > 3
    assert [names[r.agents[i]] for i in np.flatnonzero(r.rank == 1)] == [most_wins]
    head = profile(rankings[:30])[0].histogram
    k = max(1, len(head.agents) // 2)
    assert [(w, a) for w, a, _ in count_rounds(head, k)[0]] == [(w, a) for w, a, _ in plain_gregory(head, k, fixed_point=False)]
