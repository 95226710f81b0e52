"""The reviews reader: canonical columns, the council's own record shape, and quarantine."""

from __future__ import annotations

import json

import pytest

from pipeline.logs import read_log

MAPPING = {"A": "m1", "B": "m2", "C": "m3"}


def read(tmp_path, records, suffix=".jsonl"):
    path = tmp_path / f"reviews{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(records))
    else:
        path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return read_log(path, "reviews")


def good(**fields):
    return {"query_id": "q1", "reviewer": "m1", "ranking": ["B", "A"], "label_to_model": MAPPING} | fields


def test_canonical_columns(tmp_path):
    result = read(tmp_path, [good(scores={"A": 9, "B": 2}, category="code", timestamp="2024-11-29T10:00:00Z")], ".json")
    row = result.table.to_pylist()[0]
    assert row["ranking"] == ["B", "A"] and row["labels"] == ["A", "B", "C"] and row["models"] == ["m1", "m2", "m3"]
    assert row["order"] == ["m2", "m1"] and row["order_from"] == "ranking"  # the ranking wins over the scores
    assert json.loads(row["scores"]) == {"A": 9.0, "B": 2.0}
    assert row["abstained"] is False and row["category"] == "code" and row["timestamp"].year == 2024


def test_record_shape_of_the_decision_record(tmp_path):
    # `model` for the reviewer; ranking, scores and abstained nested in `parsed_ranking`.
    records = [
        {"query_id": "q1", "model": "m2", "label_to_model": MAPPING, "parsed_ranking": {"ranking": ["C"], "abstained": False}},
        {"query_id": "q1", "model": "m3", "label_to_model": MAPPING, "parsed_ranking": {"abstained": True}},
        {"query_id": "q1", "model": "m1", "label_to_model": MAPPING, "parsed_ranking": {"scores": {"A": 1, "B": 5, "C": 5}}},
    ]
    rows = read(tmp_path, records).table.to_pylist()
    assert [(r["reviewer"], r["abstained"], r["order"], r["order_from"]) for r in rows] == [
        ("m2", False, ["m3"], "ranking"),
        ("m3", True, [], None),
        ("m1", False, ["m2", "m3", "m1"], "scores"),  # scores descending, the tie B = C in label order
    ]


@pytest.mark.parametrize("fields, field, reason", [
    ({"ranking": ["A", "Z"]}, "ranking", "unknown label 'Z'"),
    ({"ranking": ["A", "A"]}, "ranking", "label 'A' ranked twice"),
    ({"ranking": []}, "ranking", "empty ranking that is not an abstention"),
    ({"ranking": "A>B"}, "ranking", "must be a list of labels"),
    ({"abstained": "maybe"}, "abstained", "not a boolean"),
    ({"label_to_model": {}}, "label_to_model", "non-empty mapping"),
    ({"label_to_model": {"A": "m1", "B": "m1"}}, "label_to_model", "two labels"),
    ({"scores": {"Z": 1}}, "scores", "unknown label 'Z'"),
    ({"scores": {"A": "high"}}, "scores", "not a finite number"),
    ({"query_id": ""}, "query_id", "missing query_id"),
    ({"reviewer": None}, "reviewer", "missing reviewer"),
    ({"timestamp": "yesterday"}, "timestamp", "unparsable timestamp"),
])
def test_malformed_reviews_are_quarantined(tmp_path, fields, field, reason):
    other = good(reviewer="m2", timestamp="2024-11-29")
    result = read(tmp_path, [other, good(**fields)])
    assert (result.rows_in, result.rows_accepted, result.rows_quarantined) == (2, 1, 1)
    bad = result.quarantined.to_pylist()[0]
    assert (bad["line"], bad["field"]) == (2, field) and reason in bad["reason"]
    assert bad["file"].endswith("reviews.jsonl")


def test_duplicates_and_inconsistent_mappings(tmp_path):
    records = [good(), good(ranking=["A"]), good(reviewer="m2", label_to_model={"A": "m1", "B": "m2"}), "not json"]
    result = read(tmp_path, records)
    assert result.rows_in == result.rows_accepted + result.rows_quarantined == 4
    reasons = {r["line"]: (r["field"], r["reason"]) for r in result.quarantined.to_pylist()}
    assert reasons[2] == ("reviewer", "second review of this query by this reviewer (first at line 1)")
    assert reasons[3][0] == "label_to_model" and "line 1" in reasons[3][1]
    assert reasons[4][0] == "(record)" and "invalid JSON" in reasons[4][1]


def test_abstention_may_carry_no_ranking(tmp_path):
    result = read(tmp_path, [good(ranking=[], abstained=True)])
    assert result.rows_accepted == 1 and result.table.column("order").to_pylist() == [[]]
