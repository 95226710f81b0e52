"""The benchmarks print a ratio only for a contender whose answer is vase's: planted wrong answers
must come out as "NO RATIO", with what was wrong, and right answers with their ratio."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import bench_elo
from benchmarks.common import SOLVER_ONLY, Comparison, Verdict, scores_agree

ELO_TOL = bench_elo.TOL_ELO
pytestmark = pytest.mark.filterwarnings("ignore:scipy.optimize.*disp:DeprecationWarning")  # FastChat's code, as it is


def test_a_ratio_only_where_the_answers_agree():
    agreed = Comparison("case", SOLVER_ONLY, "peer", 0.5, 2.0, Verdict(True, "max |difference| 0"))
    refused = Comparison("case", SOLVER_ONLY, "peer", 0.5, 2.0, Verdict(False, "max |difference| 9"))
    assert agreed.ratio == pytest.approx(4.0) and "4x faster" in agreed.line()
    assert refused.ratio is None and refused.record()["ratio"] is None
    assert "NO RATIO" in refused.line() and "max |difference| 9" in refused.line()
    assert "[solver only]" in refused.line()


def test_scores_agree_within_the_tolerance_after_centring():
    ours = np.array([-100.0, 0.0, 100.0])
    assert scores_agree(ours, ours + 1000 + np.array([0.0, 0.4, -0.4]), ELO_TOL).agrees  # Elo has no origin
    far = scores_agree(ours, ours + np.array([0.0, 3.0, 0.0]), ELO_TOL)
    assert not far.agrees and "max |difference| 2 " in far.detail  # 3 less the shift of the mean, 3 / 3


@pytest.mark.parametrize(("theirs", "said"), [
    (np.full(3, -4000.0), "the same score (-4000) for all 3 agents"),  # evalica on the WTA tour
    (np.array([1.0, np.nan, 2.0]), "1 of 3 scores not finite"),
    (np.array([1.0, 2.0]), "2 scores for 3 agents"),
    (None, "no answer"),
])
def test_a_non_answer_is_reported_as_a_non_result(theirs, said):
    verdict = scores_agree(np.array([-100.0, 0.0, 100.0]), theirs, ELO_TOL)
    assert not verdict.agrees and verdict.detail == f"non-result: {said}"


@pytest.fixture(scope="module")
def small_arena():
    return 12, *bench_elo.battles(12, 20_000, seed=5)


def by_contender(comparisons: list[Comparison]) -> dict[str, Comparison]:
    return {c.contender.split(" (")[0]: c for c in comparisons}


def test_every_peer_agrees_with_vase_on_a_small_arena(small_arena):
    found = by_contender(bench_elo.fit_comparisons(*small_arena, "small"))
    for name in ("FastChat fit_bt", "choix ilsr_pairwise_dense", "L-BFGS rewrite"):
        assert found[name].verdict.agrees, found[name].line()
        assert found[name].ratio is not None


@pytest.mark.parametrize("peer", ["fit_bt", "ilsr_pairwise_dense"])
def test_a_planted_wrong_answer_gets_no_ratio(small_arena, monkeypatch, peer):
    # FastChat's and choix's answers with the first two models' ratings swapped: a plausible
    # answer, timed like the right one, which only the check against vase's can catch
    import choix

    module, shown = (bench_elo.fastchat, "FastChat fit_bt") if peer == "fit_bt" else (choix, "choix ilsr_pairwise_dense")
    right = getattr(module, peer)

    def swapped(*args, **kwargs):
        answer = np.array(right(*args, **kwargs))
        answer[[0, 1]] = answer[[1, 0]]
        return answer

    monkeypatch.setattr(module, peer, swapped)
    found = by_contender(bench_elo.fit_comparisons(*small_arena, "small"))
    planted = found[shown]
    assert planted.ratio is None and not planted.verdict.agrees
    assert "NO RATIO" in planted.line() and "max |difference|" in planted.verdict.detail
    assert found["L-BFGS rewrite"].ratio is not None  # the others still count


def test_the_bootstrap_ratio_is_per_round_and_checked(small_arena, monkeypatch):
    right = bench_elo.bootstrap_comparison(*small_arena, rounds=60, case="small")
    assert right.verdict.agrees, right.line()
    assert right.level.startswith("per round") and "60 rounds each" in right.case
    # a peer whose rounds all return its full-data fit has intervals of width 0
    fit_bt = bench_elo.fastchat.fit_bt
    monkeypatch.setattr(bench_elo.fastchat, "fit_bt",
                        lambda matchups, outcomes, weights, *rest: fit_bt(matchups, outcomes, np.ones_like(weights), *rest))
    planted = bench_elo.bootstrap_comparison(*small_arena, rounds=60, case="small")
    assert planted.ratio is None and "= 0.000" in planted.verdict.detail


def test_voting_refuses_a_ratio_against_a_wrong_election(monkeypatch):
    from open_spiel.python.voting import base, copeland

    from benchmarks import bench_voting

    right = copeland.CopelandVoting.run_election

    def reversed_ranking(self, profile):  # the scores handed to the wrong agents
        outcome = right(self, profile)
        return base.RankOutcome(rankings=outcome.ranking[::-1], scores=outcome.scores)

    monkeypatch.setattr(copeland.CopelandVoting, "run_election", reversed_ranking)
    comparisons, _ = bench_voting.store_to_ratings(4_000, np.random.default_rng(0))
    by_rule = {(c.contender, c.level.split(":")[0]): c for c in comparisons}
    assert len(by_rule) == 6  # three rules, each counting + method and file to ratings
    for (who, level), comparison in by_rule.items():
        if who == "OpenSpiel CopelandVoting":
            assert comparison.ratio is None and "NO RATIO" in comparison.line(), comparison.line()
        else:
            assert comparison.verdict.agrees and comparison.ratio is not None, comparison.line()


def test_maximal_lotteries_refuse_a_ratio_against_a_wrong_lottery(monkeypatch):
    from benchmarks import bench_voting

    right = bench_voting.linprog

    def shifted(*args, **kwargs):  # mass moved from the first agent to the second
        result = right(*args, **kwargs)
        result.x[[0, 1]] += [-0.01, 0.01]
        return result

    monkeypatch.setattr(bench_voting, "linprog", shifted)
    comparisons, _ = bench_voting.maximal_lotteries_50(np.random.default_rng(0))
    scipy_line, open_spiel_line = comparisons
    assert scipy_line.ratio is None and "max |difference| 0.01 " in scipy_line.verdict.detail
    cvxpy_missing = "cannot run here" in open_spiel_line.verdict.detail  # OpenSpiel's needs cvxpy (bench extra)
    assert cvxpy_missing or open_spiel_line.ratio is not None, open_spiel_line.line()


@pytest.mark.slow
def test_whole_commands_rate_the_same_file_and_are_compared(small_arena, monkeypatch):
    # vase rate and FastChat's script in fresh processes, their written ratings read back and checked
    (found,) = bench_elo.whole_command_comparisons(*small_arena, "small", peers=("fastchat",))
    assert found.level.startswith("whole command") and found.contender.startswith("FastChat compute_bt")
    assert found.verdict.agrees and found.ratio is not None, found.line()
    # a peer whose command fails is a non-result, not a crash of the benchmark
    monkeypatch.setitem(bench_elo.WHOLE_COMMAND_PEERS, "missing", "a peer that is not there")
    (failed,) = bench_elo.whole_command_comparisons(*small_arena, "small", peers=("missing",))
    assert failed.ratio is None and failed.verdict.detail.startswith("non-result: the command failed: ")
