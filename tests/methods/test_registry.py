"""The registry: spec parsing and canonical spellings, errors naming the valid choices, the client for fan-out.

The contract of every registered method is tests/methods/test_contract.py."""

from __future__ import annotations

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
    ("approval:j=2", r"approval: unknown parameter 'j=2' \(parameters: k, bootstrap, bootstrap_seed\)"),
    ("approval:k=two", "approval: parameter k='two' is not a valid int"),
    ("borda:normalise=maybe", "is not a valid bool"),
    ("plurality:k=1", r"\(parameters: bootstrap, bootstrap_seed\)"),  # the registry's bootstrap applies to every method
    # A negative seed passed parsing and stopped the run later with numpy's "expected non-negative integer".
    ("m-elo:seed=-1", "m-elo: parameter seed='-1' is not a valid non-negative int"),
    ("borda:bootstrap=5,bootstrap_seed=-3", "borda: parameter bootstrap_seed='-3' is not a valid non-negative int"),
])
def test_spec_errors(text, message):
    with pytest.raises(ValueError, match=message):
        Spec.parse(text)


@pytest.mark.parametrize(("text", "message"), [
    ("m-elo:prior=-1", "m-elo: parameter prior=-1.0 must be non-negative"),
    ("m-elo:ties=davidsn", "m-elo: parameter ties='davidsn' must be one of half, davidson"),
    ("m-elo:covariates=len,len", "m-elo: parameter covariates='len,len' must be distinct features"),
    ("elo:shuffles=100001", "elo: parameter shuffles=100001 must be between 0 and 100,000"),
    ("borda:bootstrap=-1", "borda: parameter bootstrap=-1 must be between 0 and 100,000"),
    ("approval:k=0", "approval: parameter k=0 must be at least 1"),
    ("copeland:tie_credit=1.5", "copeland: parameter tie_credit=1.5 must be between 0 and 1"),
    ("uniform:game=agent-agnet", "uniform: parameter game='agent-agnet' must be one of auto, agent-task"),
    ("deviation:norm=l2", "deviation: parameter norm='l2' must be one of minmax, zscore, none"),
    # decay=1 never lowered the temperature to tau_min: the method looped forever.
    ("affinity-ne:decay=1", r"affinity-ne: parameter decay=1.0 must be between 0 and 1 \(excluding 0 and 1\)"),
    ("alpha-rank:epsilon=0.5", r"alpha-rank: parameter epsilon=0.5 must be between 0 and 0.5 \(excluding 0.5\)"),
    ("council-borda:compare=borda+council-borda", "council-borda: parameter compare='borda[+]council-borda' must be specs joined by [+], none of them council-borda itself"),
])
def test_a_value_out_of_its_range_is_refused_where_the_spec_is_parsed(text, message):
    with pytest.raises(ValueError, match=f"^{message}"):
        Spec.parse(text)


def test_a_direct_call_checks_the_same_rules(pentathlon):
    from pipeline.methods.voting.scoring import approval

    with pytest.raises(ValueError, match="^approval: parameter k=0 must be at least 1$"):
        approval(pentathlon[0].positions, k=0)
    assert approval(pentathlon[0].positions, k=1).score.tolist() == run("approval:k=1", pentathlon[0]).score.tolist()


def test_every_rule_names_a_parameter_of_its_method_and_passes_its_default():
    for name, chosen in REGISTRY.items():
        assert set(chosen.rules) <= set(chosen.parameters), name
        chosen.check(chosen.parameters | chosen.generic_parameters)  # the defaults are valid


def test_a_rule_for_a_parameter_the_method_lacks_is_refused_at_registration():
    from pipeline.methods.registry import POSITIVE, method

    with pytest.raises(ValueError, match=r"rules for parameters it does not have: \['tol'\]"):
        method("no-such-method", needs=("pairwise",), rules={"tol": POSITIVE})(lambda pairs, *, k=1: None)
    assert "no-such-method" not in REGISTRY


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


def test_a_spec_has_one_canonical_spelling_equal_to_the_ratings_spec(pentathlon):
    spellings = ["borda", " borda ", "borda:normalise=false", "borda:normalise=no", "borda:normalise=0"]
    specs = [Spec.parse(s) for s in spellings]
    assert {s.canonical for s in specs} == {"borda:normalise=false"} and len(set(specs)) == 1
    assert str(specs[0]) == run(specs[0], pentathlon[0]).spec
    assert Spec.parse("borda:normalise=true") != specs[0]
    assert Spec.parse("m-elo:scale=400") == Spec.parse("m-elo") and Spec.parse("m-elo:seed=1") != Spec.parse("m-elo")


def test_specs_given_twice_under_different_spellings_run_once():
    from pipeline.methods.registry import unique_specs

    specs, merged = unique_specs(["borda", "copeland", "borda:normalise=false", "copeland:tie_credit=0.5", "borda:normalise=true"])
    assert [str(s) for s in specs] == ["borda:normalise=false", "copeland:tie_credit=0.5", "borda:normalise=true"]
    assert merged == {"borda:normalise=false": ["borda", "borda:normalise=false"],
                      "copeland:tie_credit=0.5": ["copeland", "copeland:tie_credit=0.5"]}


@pytest.mark.parametrize("text", ["m-elo:tol=nan", "m-elo:prior=inf", "elo:k=1e400"])
def test_non_finite_numbers_are_refused(text):
    with pytest.raises(ValueError, match="is not a valid finite number"):
        Spec.parse(text)


def test_the_client_reaches_methods_that_fan_out_and_is_no_parameter(pentathlon):
    from pipeline.methods.registry import GIVEN, method

    assert "client" not in REGISTRY["m-elo"].parameters and REGISTRY["m-elo"].fans_out
    assert not REGISTRY["borda"].fans_out
    with pytest.raises(ValueError, match="unknown parameter 'client=x'"):
        Spec.parse("m-elo:client=x")
    sentinel = object()

    @method("probe-client", needs=("pairwise", "agent_keys"))
    def probe(pairs, keys, *, client=None):
        return Ratings.from_scores(pairs.agents, keys.astype(float), info={"client": client is sentinel})

    try:
        ratings = run("probe-client", pentathlon[0], client=sentinel)
        assert ratings.info["client"] and ratings.params == {} and ratings.spec == "probe-client"
        assert needed_statistics(["probe-client", "m-elo:games=player"]) == {"pairwise", "pairwise_per_game"}  # agent_keys is no reduction
        assert GIVEN >= {"agent_keys"}
    finally:
        del REGISTRY["probe-client"]
