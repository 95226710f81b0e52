"""Differential tests of the voting methods against OpenSpiel and pref_voting (test oracles).

OpenSpiel's maximal lotteries need cvxpy (its LP solver), which is not a dependency here, so
maximal lotteries and IML are compared with pref_voting's `maximal_lottery` LP (IML applies it
level by level, removing each level's support as [VasE] algorithm 2 does). pref_voting loads
ortools, whose bundled HiGHS clashes with highspy in one process, so it runs in a subprocess.

Profiles are odd numbers of strict complete ballots (so every margin is odd and nonzero, and the
maximal lottery is unique); a profile is compared only where the answer is unique, and each
method must be compared on at least 200 profiles. OpenSpiel breaks ties by input order or noise.
STV with whole-ballot transfers (`stv:transfer=whole`) is compared on every profile, in the
order the ballots are given.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from tests.voting_profiles import strict_ballots, weak_ballots

from pipeline import methods
from pipeline.stats.in_memory import profile

base = pytest.importorskip("open_spiel.python.voting.base")
from open_spiel.python.voting import (  # noqa: E402
    approval,
    borda,
    copeland,
    kemeny_young,
    plurality,
    ranked_pairs,
    schulze,
    stv,
)


PROFILES = 300


def _profiles(seed: int, count: int = PROFILES, most: int = 6):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        m, voters = int(rng.integers(3, most + 1)), 2 * int(rng.integers(1, 12)) + 1
        ballots = strict_ballots(rng, m, voters)
        yield ballots, profile(ballots)


def _open_spiel(rule, ballots: list[str]) -> dict[str, float]:
    outcome = rule.run_election(base.PreferenceProfile(votes=[b.split(">") for b in ballots]))
    return dict(zip(outcome.ranking, outcome.scores))


def _ours(spec: str, stats_names) -> dict[str, float]:
    stats, names = stats_names
    r = methods.run(spec, stats)
    return dict(zip(names, r.score)), r


def _strictly_ordered(scores: dict[str, float]) -> bool:
    return len(set(np.round(list(scores.values()), 9))) == len(scores)


CASES = [
    ("plurality", lambda: plurality.PluralityVoting(), 1),
    ("approval:k=2", lambda: approval.ApprovalVoting(k=2), 2),
    ("borda", lambda: borda.BordaVoting(), 3),
    ("copeland", lambda: copeland.CopelandVoting(), 4),
    ("kemeny", lambda: kemeny_young.KemenyYoungVoting(), 5),
    ("schulze", lambda: schulze.SchulzeVoting(), 6),
    ("ranked-pairs", lambda: ranked_pairs.RankedPairsVoting(), 7),
]


@pytest.mark.parametrize(("spec", "make", "seed"), CASES, ids=[c[0] for c in CASES])
def test_against_open_spiel(spec, make, seed):
    rule, compared = make(), 0
    for ballots, stats_names in _profiles(seed):
        ours, result = _ours(spec, stats_names)
        if spec in ("kemeny", "schulze", "ranked-pairs") and not result.info["strict_order"]:
            continue  # OpenSpiel orders tied agents by input order
        if spec == "kemeny" and not result.info["kemeny_unique"]:
            continue
        if spec == "ranked-pairs" and result.info["tied_edges_dropped"]:
            continue  # OpenSpiel locks equal margins in input order
        theirs = _open_spiel(rule, ballots)
        assert set(theirs) == set(ours)
        for name in ours:
            assert ours[name] == pytest.approx(theirs[name], abs=1e-6), (spec, ballots, ours, theirs)
        compared += 1
    assert compared >= 200, f"{spec}: only {compared} profiles had a unique answer"


def test_stv_whole_equals_open_spiel_in_input_order():
    # stv:transfer=whole is OpenSpiel's count on the profile as given (in-memory ballots have the
    # ids <memory>:1, 2, ..., so id order is input order), grouped by OpenSpiel's own
    # `PreferenceProfile.group()`, with the alternatives in name order and a tie inside a weak
    # ballot split in name order: equal rank by rank and score by score on every profile.
    rng = np.random.default_rng(11)
    compared = 0
    for trial in range(500):
        m = int(rng.integers(3, 7))
        ballots = (strict_ballots if trial % 2 else weak_ballots)(rng, m, int(rng.integers(1, 30)))
        weights = rng.integers(1, 4, len(ballots))
        stats, names = profile(ballots, weights=weights, statistics={"histogram", "ballot_order"})
        k = max(1, len(names) // 2)
        if k >= len(names):
            continue  # OpenSpiel asserts fewer winners than agents
        result = methods.run("stv:transfer=whole", stats)
        votes = [base.WeightedVote(int(w), [a for group in b.split(">") for a in sorted(group.split("="))])
                 for b, w in zip(ballots, weights)]
        grouped = base.PreferenceProfile(votes=votes, alternatives=names)
        grouped.group()
        outcome = stv.STVVoting(num_winners=k).run_election(grouped)
        assert [names[i] for i in np.argsort(result.rank, kind="stable")] == outcome.ranking, ballots
        assert dict(zip(names, result.score)) == pytest.approx(dict(zip(outcome.ranking, outcome.scores)), abs=1e-9)
        compared += 1
    assert compared >= 450


_PREF_VOTING_IML = """
import json, sys
from pref_voting.probabilistic_methods import maximal_lottery
from pref_voting.profiles import Profile
out = []
for ballots in json.load(sys.stdin):
    names = sorted(set(ballots[0].split(">")))
    edata = Profile([[names.index(a) for a in b.split(">")] for b in ballots])
    first = maximal_lottery(edata)
    left, levels = list(range(len(names))), []
    while left:
        p = maximal_lottery(edata, curr_cands=left)
        winners = [c for c in left if p.get(c, 0) > 1e-6]
        levels.append({c: p[c] for c in winners})
        left = [c for c in left if c not in winners]
    iml = {names[c]: len(levels) - 1 - d + q for d, level in enumerate(levels) for c, q in level.items()}
    out.append([{names[c]: first.get(c, 0.0) for c in range(len(names))}, iml])
json.dump(out, sys.stdout)
"""


def test_maximal_lotteries_against_pref_voting():
    cases = list(_profiles(8))
    run = subprocess.run([sys.executable, "-c", _PREF_VOTING_IML], input=json.dumps([b for b, _ in cases]),
                         capture_output=True, text=True, check=True)
    answers = json.loads(run.stdout)
    for (ballots, stats_names), (their_ml, their_iml) in zip(cases, answers):
        ml, _ = _ours("maximal-lotteries", stats_names)
        iml, _ = _ours("iterative-maximal-lotteries", stats_names)
        assert ml == pytest.approx(their_ml, abs=1e-6), (ballots, ml, their_ml)
        assert iml == pytest.approx(their_iml, abs=1e-6), (ballots, iml, their_iml)
    assert len(answers) >= 200
