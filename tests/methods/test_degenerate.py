"""Degenerate data for the Elo family and the voting rules: a documented result or a one-line refusal
whose agents are named.

Documented results: equal records give equal ranks (all ties: everyone first); online Elo and the
voting rules rate any data, including a comparison graph in pieces and agents that never win;
no agents give empty ratings. Refusals: m-Elo and am-Elo without a maximum-likelihood estimate
(one agent, pieces that never met, agents that never win or never lose) raise `NoEstimate`.
"""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.methods import run
from pipeline.methods.convergence import NoEstimate
from pipeline.stats import PairwiseCounts, PositionCounts, Statistics
from pipeline.stats.game_pairs import PerGameCounts
from tests.conftest import stats_of_rows

ELO_FAMILY = ("m-elo", "am-elo", "elo", "elo:shuffles=3")
VOTING = ("plurality", "approval", "borda", "copeland", "schulze", "ranked-pairs")


def battles(*results: tuple[str, str, str]) -> list[dict]:
    return [{"battle_id": f"{i}", "model_a": a, "model_b": b, "winner": w, "judge": f"j{i % 2}"} for i, (a, b, w) in enumerate(results)]


CASES = {
    "all ties": battles(("A", "B", "tie"), ("B", "C", "tie"), ("C", "A", "tie")),
    "in pieces": battles(("A", "B", "model_a"), ("B", "A", "model_a"), ("C", "D", "model_a"), ("D", "C", "model_a")),
    "never wins": battles(("A", "B", "model_a"), ("B", "C", "model_a"), ("C", "A", "model_b")),
}
REFUSALS = {  # m-Elo and am-Elo
    "in pieces": "the comparison graph has 2 connected piece(s) and 2 strongly connected piece(s); agents of different "
                 "pieces were never compared (the smallest piece: A, B)",
    "never wins": "agents that never win or never lose: A, C (the comparison graph has 1 connected piece(s) and 3 "
                  "strongly connected piece(s))",
}
RANKS = {  # by name; approval:k=2 approves both sides of every battle
    "all ties": {m: {"A": 1, "B": 1, "C": 1} for m in ELO_FAMILY + VOTING},
    "in pieces": {m: {"A": 1, "B": 1, "C": 1, "D": 1} for m in VOTING} | {"elo": {"A": 3, "B": 1, "C": 3, "D": 1}},
    "never wins": {m: {"A": 1, "B": 2, "C": 3} for m in VOTING + ("elo", "elo:shuffles=3") if m != "approval"}
                  | {"approval": {"A": 1, "B": 1, "C": 1}},
}


@pytest.fixture(scope="module")
def degenerate(tmp_path_factory):
    return {name: stats_of_rows(tmp_path_factory.mktemp(name.replace(" ", "-")), "battles", rows) for name, rows in CASES.items()}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("spec", ELO_FAMILY + VOTING)
def test_a_documented_result_or_a_one_line_refusal_naming_the_agents(degenerate, case, spec):
    stats, names = degenerate[case]
    if spec.partition(":")[0] in ("m-elo", "am-elo") and case in REFUSALS:
        with pytest.raises(NoEstimate) as refused:
            run(spec, stats)
        message = refused.value.named(names)
        assert REFUSALS[case] in message and message.startswith(spec.partition(":")[0] + ": ") and "\n" not in message
        assert message.endswith(f"use {spec.partition(':')[0]}:prior=auto to choose a prior by cross-validation")
        return
    ratings = run(spec, stats)
    by_name = {names[a]: int(r) for a, r in zip(ratings.agents, ratings.rank)}
    if spec in RANKS[case]:
        assert by_name == RANKS[case][spec]
    assert np.all(np.isfinite(ratings.score))


def test_one_agent_is_refused_by_name_and_ranked_first_by_the_voting_rules(tmp_path):
    stats, names = stats_of_rows(tmp_path, "ballots", [{"ranking": "Solo", "weight": 1.0}] * 3)
    with pytest.raises(NoEstimate) as refused:
        run("m-elo", stats)
    assert refused.value.named(names).startswith("m-elo: the maximum-likelihood ratings do not exist: one agent, Solo: ")
    for spec in VOTING:
        assert run(spec, stats).rank.tolist() == [1]


def test_no_agents_give_empty_ratings_or_a_refusal():
    empty = np.zeros((0, 0))
    stats = Statistics("battles", np.zeros(0, np.int64), np.zeros(0), pairwise=PairwiseCounts(np.zeros(0, np.int64), empty, empty),
                       positions=PositionCounts(np.zeros(0, np.int64)), extra={"pairwise_per_game": PerGameCounts(None)})
    with pytest.raises(NoEstimate, match="no agents: ratings need comparisons between two or more"):
        run("m-elo", stats)
    for spec in VOTING:
        assert len(run(spec, stats).agents) == 0
