"""Method diagnostics in plain words; keys no reader knows are kept as they are."""

from __future__ import annotations

import polars as pl

from pipeline.report.diagnostics import Context, describe, number

EMPTY = Context({}, pl.DataFrame(), {})


def texts(info: dict, context: Context = EMPTY) -> str:
    return " | ".join(n.text for n in describe(info, context).notes)


def test_condorcet_and_uniqueness_sentences():
    text = texts({"condorcet_winner_agent": None, "weak_condorcet_winner_agents": [], "unique": False,
                  "choice": "maximum-entropy maximal lottery", "support_agents": ["a", "b"]})
    assert "No Condorcet winner" in text and "No weak Condorcet winner" in text
    assert "not unique" in text and "maximum-entropy maximal lottery" in text and "Support (agents with positive probability, 2): a, b" in text
    assert "x is the Condorcet winner" in texts({"condorcet_winner_agent": "x", "weak_condorcet_winner_agents": ["x"]})
    assert "several" not in texts({"kemeny_unique": True, "kemeny_value": 12.0}).lower()
    assert "Several orders" in texts({"kemeny_unique": False})


def test_likelihood_existence_and_prior():
    assert "maximum-likelihood ratings exist" in texts({"iterations": 6, "log_likelihood": -953.07})
    assert "Gaussian prior" in texts({"iterations": 6}, Context({"prior": "0.01"}, pl.DataFrame(), {}))
    dropped = describe({"bootstrap_rounds": 1000, "bootstrap_dropped": 3}, EMPTY).notes[0]
    assert dropped.tone == "warn" and "3 rounds dropped" in dropped.text


def test_flagged_annotators_with_abilities_from_the_method_table():
    annotators = pl.DataFrame({"judge": ["alice", "bob", "cy"], "records": [10.0, 20.0, 30.0], "ability": [0.6, -0.01, 0.41],
                               "flagged": [False, True, False]})
    text = texts({"annotators_used": 2, "annotators_flagged": 1, "annotators_flagged_at": "ability <= 0.0"},
                 Context({}, pl.DataFrame(), {"am-elo.annotators": annotators}))
    assert "1 flagged (ability <= 0.0)" in text and "bob (ability -0.01, 20 records)" in text and "alice" not in text


def test_council_confidence_counts_from_the_rows():
    rows = pl.DataFrame({"confidence": ["high", "high", "low"]})
    assert "Confidence: high for 2, low for 1" in texts({"reviews": 3, "queries": 1, "reviewer_agents": ["a"]}, Context({}, rows, {}))


def test_unknown_keys_are_kept_and_long_values_cut_with_a_pointer():
    result = describe({"brand_new": {"k": [1, 2]}, "huge": list(range(1000)), "condorcet_winner_agent": "x"}, EMPTY)
    other = dict(result.other)
    assert other["brand_new"] == '{"k": [1, 2]}' and "characters in run.json" in other["huge"]
    assert len(result.notes) == 1


def test_numbers_for_reading():
    assert [number(v) for v in (-1.41095e-14, 8931, 1234.0, 0.123456, float("nan"), True)] == ["0", "8,931", "1,234", "0.1235", "nan", "True"]


def test_the_order_of_online_updates_is_said_once():
    # "in timestamp, then ingest order order"
    text = texts({"comparisons": 12, "order": "timestamp, then ingest order"})
    assert "Online updates over 12 comparisons, ordered by timestamp, then ingest order." in text and "order order" not in text
    assert "scores are the mean over 5 shuffles" in texts({"comparisons": 12, "order": "mean over 5 shuffles"})
