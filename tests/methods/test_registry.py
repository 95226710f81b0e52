"""The registry: spec parsing, errors naming the valid choices, and every method on the shared fixtures."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pipeline.methods import REGISTRY, Ratings, Spec, needed_statistics, run
from pipeline.methods.ratings import competition_ranks


def test_spec_parsing_converts_types_and_round_trips(pentathlon):
    spec = Spec.parse("approval:k=3")
    assert spec.params == {"k": 3}
    assert run("borda:normalise=yes", pentathlon[0]).spec == "borda:normalise=true"
    assert run("copeland", pentathlon[0]).spec == "copeland:tie_credit=0.5"


@pytest.mark.parametrize(("text", "message"), [
    ("bordaa", "unknown method 'bordaa'; known methods: "),
    ("approval:j=2", r"approval: unknown parameter 'j=2' \(parameters: k\)"),
    ("approval:k=two", "approval: parameter k='two' is not a valid int"),
    ("borda:normalise=maybe", "is not a valid bool"),
    ("plurality:k=1", r"\(parameters: none\)"),
])
def test_spec_errors(text, message):
    with pytest.raises(ValueError, match=message):
        Spec.parse(text)


def test_needs_lists_the_statistics():
    assert needed_statistics(["borda", "copeland"]) == {"positions", "pairwise"}


def test_competition_ranks():
    assert competition_ranks(np.array([3.0, 5.0, 5.0, 1.0])).tolist() == [3, 1, 1, 4]
    assert competition_ranks(np.array([3.0, 5.0, 5.0, 1.0]), higher_is_better=False).tolist() == [2, 3, 3, 1]


def test_competition_ranks_tie_scores_within_the_tolerance():
    # Solver noise (1e-16) must not order equal agents; a real gap (0.5) must.
    noisy = np.array([1 / 3, 1 / 3 + 1e-16, 1 / 3 - 2e-16, -0.5, 1 / 3 + 0.5])
    assert competition_ranks(noisy, tolerance=1e-9).tolist() == [2, 2, 2, 5, 1]
    assert competition_ranks(noisy).tolist() == [3, 2, 4, 5, 1]


def test_the_registry_names_the_ratings_with_every_parameter(pentathlon):
    ratings = run("approval", pentathlon[0])
    assert (ratings.name, ratings.params) == ("approval", {"k": 2})


CORE = {"pairwise", "positions", "histogram"}


@pytest.mark.parametrize("name", sorted(n for n, m in REGISTRY.items() if CORE >= set(m.needs) and m.kinds is None))
def test_every_method_on_every_fixture(name, pentathlon, condorcet_cycle):
    """The Ratings contract and determinism, for every method that reads the core statistics."""
    for stats, _ in (pentathlon, condorcet_cycle):
        ratings = run(name, stats)
        assert isinstance(ratings, Ratings) and ratings.agents.tolist() == stats.agents.tolist()
        assert ratings.rank.min() == 1 and np.all(np.isfinite(ratings.score))
        json.dumps(ratings.info)  # diagnostics are JSON-serialisable
        again = run(name, stats)
        assert again.score.tobytes() == ratings.score.tobytes()


@pytest.mark.parametrize("name", sorted(n for n, m in REGISTRY.items() if CORE >= set(m.needs) and m.kinds is None))
def test_relabelling_agents_permutes_the_result(name):
    """Renaming agents so that their ids come in reverse order changes nothing but the order."""
    from pipeline.stats.in_memory import profile

    rankings = ["a>b>c>d", "b>a>d>c", "c>a>b>d", "a>c>d>b", "d>b>a>c"]
    rename = {"a": "w", "b": "x", "c": "y", "d": "z"}
    reverse = {"a": "z", "b": "y", "c": "x", "d": "w"}
    by_name = []
    for mapping in (rename, reverse):
        stats, names = profile(["".join(mapping.get(ch, ch) for ch in r) for r in rankings])
        ratings = run(name, stats)
        inverse = {v: k for k, v in mapping.items()}
        by_name.append({inverse[names[a]]: (s, r) for a, s, r in zip(ratings.agents, ratings.score, ratings.rank)})
    assert by_name[0] == by_name[1]


def test_methods_run_with_one_blas_thread(pentathlon):
    """Threaded BLAS sums dot products in a machine-dependent order; methods must not see it."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from pipeline.methods.registry import method

    @method("probe-blas-threads", needs=("pairwise",))
    def probe(pairs):
        seen = max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
        return Ratings.from_scores(pairs.agents, np.zeros(pairs.n), info={"threads": seen})

    try:
        with threadpool_limits(limits=2, user_api="blas"):  # what the flow process may have
            assert run("probe-blas-threads", pentathlon[0]).info["threads"] == 1
    finally:
        del REGISTRY["probe-blas-threads"]


def test_rating_errors_name_agents_by_name_where_names_are_known():
    from pipeline.methods.convergence import NoEstimate

    error = NoEstimate("m-elo: agents without a win: {agents}", agents=[2, 0])
    assert str(error) == "m-elo: agents without a win: 2, 0"
    assert error.named(["alpha", "beta", "gamma"]) == "m-elo: agents without a win: gamma, alpha"
    many = NoEstimate("{agents}", agents=range(12))
    assert many.named([f"a{i}" for i in range(12)]).endswith("a9, and 2 more")
