"""The contract every registered method keeps, on every log kind whose statistics it reads.

The logs are `tests.conftest.contract_rows`, through a real store and reduction. A method is run
on each kind that gives all its inputs; one registered later gets these tests without a line
here, and one whose inputs no fixture gives fails `test_every_method_has_a_fixture`. A method
either returns ratings or refuses with a one-line `RatingError`, and must return ratings on at
least one fixture. For ratings:
- the `Ratings` schema: ids of rated agents, float scores, competition ranks, one extra per agent;
- determinism: two runs give identical bytes, and `info` is JSON;
- relabelling: the same log with the agents' names reversed (and rows reversed, so store ids
  change too) gives the same scores and ranks agent by agent; for a seeded method, whose random
  streams follow the names' order, the names are renamed in order and every byte must be equal;
- scale: all weights x8 gives the same ranks, and scores equal or x8, except where a method is
  documented as not scale-free (`NOT_SCALE_FREE`). Extras are not compared: bootstrap intervals
  treat a weight as that many battles.
Scores of solvers are compared to SOLVER_ACCURACY, ranks exactly.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from pipeline.methods import REGISTRY, Ratings, run
from pipeline.methods.convergence import RatingError
from pipeline.methods.registry import GIVEN
from tests.conftest import CONTRACT_KINDS, CONTRACT_NAMES, WEIGHT_COLUMN, all_statistics

# Specs that keep the test fast; the parameters they change do not touch the contract.
# affinity-ne: 5000 iterations reach its tolerance on the score table; on the battles' 3-player game it
# refuses with a ConvergenceError either way (its damped step stalls).
FAST = {"m-elo": "m-elo:bootstrap=30", "elo": "elo:shuffles=4", "council-borda": "council-borda:compare=copeland",
        "affinity-ne": "affinity-ne:max_iter=5000"}
NOT_SCALE_FREE = {
    "elo": "a step is k times the weight (docs/guide.md, Elo family)",
    "am-elo": "its priors count in votes of weight 1 (pipeline/methods/bradley_terry/am_elo.py)",
    "alpha-rank": "a task weight is a number of copies of the task, and alpha-Rank is not invariant to copies of a strategy",
}
SCORE_NOT_PROPORTIONAL = {"stv": "its score adds the vote totals at election or elimination to order points; ranks are compared"}
SOLVER_ACCURACY = 1e-6  # scores of iterative and LP solvers agree to this (relative to max(1, |score|)) under relabelling
# Known to fail, each for its owner to fix; strict, so a fix shows up as an unexpected pass.
KNOWN_RELABEL = {("kemeny", "scores"): "a non-unique Kemeny optimum is picked by the agents' order (kemeny_unique = false)"}
KNOWN_SCALE = {("stv", "scores"): "the Droop quota floor(n / (k + 1) + 1) counts weight in votes: x8 changes the order"}


def kinds_for(name: str) -> list[str]:
    method = REGISTRY[name]
    return [kind for kind in CONTRACT_KINDS if (method.kinds is None or kind in method.kinds)
            and set(method.statistics) <= all_statistics(kind) and set(method.needs) - set(method.statistics) <= GIVEN]


CASES = [(name, kind) for name in sorted(REGISTRY) for kind in kinds_for(name)]


def known(cases: list[tuple[str, str]], failures: dict[tuple[str, str], str]) -> list:
    return [pytest.param(*c, marks=pytest.mark.xfail(reason=failures[c], strict=True)) if c in failures else c for c in cases]


def outcome(name: str, stats) -> Ratings | RatingError:
    try:
        return run(FAST.get(name, name), stats)
    except RatingError as refusal:
        return refusal


def by_name(ratings: Ratings, names: list[str]) -> dict[str, tuple[float, int]]:
    return {names[a]: (s, r) for a, s, r in zip(ratings.agents.tolist(), ratings.score.tolist(), ratings.rank.tolist())}


def test_every_method_has_a_fixture():
    missing = [name for name in REGISTRY if not kinds_for(name)]
    assert not missing, f"no log in tests/conftest.py gives the inputs of {missing}: add one to contract_rows"


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_method_rates_some_fixture(name, contract_inputs):
    results = {kind: outcome(name, contract_inputs(kind)[0]) for kind in kinds_for(name)}
    assert any(isinstance(r, Ratings) for r in results.values()), f"{name} refused every fixture: {results}"


@pytest.mark.parametrize(("name", "kind"), CASES)
def test_schema_determinism_and_json_info(name, kind, contract_inputs):
    stats, _ = contract_inputs(kind)
    first, second = outcome(name, stats), outcome(name, stats)
    if isinstance(first, RatingError):
        assert isinstance(second, RatingError) and str(first) == str(second) and "\n" not in str(first)
        return
    k = len(first.agents)
    assert first.agents.dtype == np.int64 and len(set(first.agents.tolist())) == k
    assert set(first.agents.tolist()) <= set(stats.agents.tolist())
    assert first.score.dtype == np.float64 and first.rank.dtype == np.int64 and k > 0
    ranks = np.sort(first.rank)
    assert ranks[0] == 1 and all(r in (ranks[i - 1], i + 1) for i, r in enumerate(ranks) if i)  # 1, 2, 2, 4
    assert all(len(column) == k for column in first.extras.values())
    assert first.name == name and first.spec.startswith(name)
    json.dumps(first.info)
    assert json.dumps(first.info, sort_keys=True, default=str) == json.dumps(second.info, sort_keys=True, default=str)
    for a, b in ((first.score, second.score), (first.rank, second.rank), *zip(first.extras.values(), second.extras.values())):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


@pytest.mark.parametrize(("name", "kind"), known(CASES, KNOWN_RELABEL))
def test_relabelling_agents_permutes_the_result(name, kind, contract_inputs):
    stats, names = contract_inputs(kind)
    base = outcome(name, stats)
    seeded = "seed" in REGISTRY[name].parameters
    other_stats, other_names = contract_inputs(kind, "prefixed" if seeded else "reversed")
    other = outcome(name, other_stats)
    assert type(base) is type(other)
    if isinstance(base, RatingError):
        return
    ordered = sorted(CONTRACT_NAMES)
    rename = {n: f"x-{n}" for n in CONTRACT_NAMES} if seeded else dict(zip(ordered, ordered[::-1]))
    expected, got = by_name(base, names), by_name(other, other_names)
    assert set(got) == {rename[n] for n in expected}
    for agent, (score, rank) in expected.items():
        assert got[rename[agent]][1] == rank, agent
        assert got[rename[agent]][0] == pytest.approx(score, rel=SOLVER_ACCURACY, abs=SOLVER_ACCURACY), agent
    if seeded:  # name order kept: every byte equal, extras included, row by row in name order
        rows = np.argsort([names[a] for a in base.agents]), np.argsort([other_names[a] for a in other.agents])
        assert base.score[rows[0]].tobytes() == other.score[rows[1]].tobytes()
        for key, column in base.extras.items():
            assert np.asarray(column)[rows[0]].tobytes() == np.asarray(other.extras[key])[rows[1]].tobytes(), key


@pytest.mark.parametrize(("name", "kind"), known([c for c in CASES if c[1] in WEIGHT_COLUMN and c[0] not in NOT_SCALE_FREE], KNOWN_SCALE))
def test_scaling_every_weight_changes_no_rank(name, kind, contract_inputs):
    (stats, names), (scaled, scaled_names) = contract_inputs(kind), contract_inputs(kind, "scaled")
    base, other = outcome(name, stats), outcome(name, scaled)
    assert type(base) is type(other)
    if isinstance(base, RatingError):
        return
    expected, got = by_name(base, names), by_name(other, scaled_names)
    assert {a: r for a, (_, r) in got.items()} == {a: r for a, (_, r) in expected.items()}
    if name in SCORE_NOT_PROPORTIONAL:
        return
    score, scaled_score = np.array([expected[a][0] for a in sorted(expected)]), np.array([got[a][0] for a in sorted(expected)])
    close = lambda a, b: np.allclose(a, b, rtol=SOLVER_ACCURACY, atol=SOLVER_ACCURACY)  # noqa: E731
    assert close(scaled_score, score) or close(scaled_score, 8 * score)


@pytest.mark.parametrize("name", sorted(NOT_SCALE_FREE | SCORE_NOT_PROPORTIONAL))
def test_exceptions_are_registered_methods(name):
    assert name in REGISTRY
