"""Generate the synthetic council log `reviews.jsonl` (see PROVENANCE.md). Deterministic: seed 8.

Run from anywhere: `python data-samples/council/make_council.py`.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np

SEED = 8
QUERIES = 90
DAYS = 45  # spread over 45 days, so the default 30-day leaderboard window leaves some out
START = dt.datetime(2024, 11, 1, tzinfo=dt.UTC)
# Latent answer quality of each model (higher is better); reviewers see it through noise.
QUALITY = {"atlas-70b": 1.2, "borealis-8x7b": 0.9, "cirrus-34b": 0.6, "dune-13b": 0.2, "ember-7b": 0.0, "fjord-3b": -0.4}
SELF_PROMOTERS = ("borealis-8x7b", "dune-13b")  # always rank their own answer first
ABSTAINER = "cirrus-34b"  # abstains on about half of the queries
REVIEWERS = ("atlas-70b", "borealis-8x7b", "cirrus-34b", "dune-13b", "ember-7b")
CATEGORIES = ("coding", "math", "writing")
LABELS = ("Response A", "Response B", "Response C", "Response D", "Response E")


def review(rng: np.random.Generator, reviewer: str, mapping: dict[str, str]) -> dict:
    """One reviewer's parsed ranking of one query's answers."""
    if reviewer == ABSTAINER and rng.random() < 0.5:
        return {"abstained": True, "ranking": []}
    labels = list(mapping)
    perceived = {label: QUALITY[mapping[label]] + rng.normal(0, 0.6) for label in labels}
    ranking = sorted(labels, key=lambda label: -perceived[label])
    if reviewer in SELF_PROMOTERS:
        own = [label for label in labels if mapping[label] == reviewer]
        ranking = own + [label for label in ranking if label not in own]
    scores = {label: int(np.clip(round(5 + 2 * perceived[label]), 1, 9)) for label in labels}
    if reviewer in SELF_PROMOTERS:
        scores |= {label: 10 for label in labels if mapping[label] == reviewer}
    style = rng.random()
    if style < 0.1:  # scores only: the ranking is derived from them
        return {"abstained": False, "ranking": [], "scores": scores}
    if style < 0.25:  # a partial ranking: the top three
        return {"abstained": False, "ranking": ranking[:3], "scores": scores}
    return {"abstained": False, "ranking": ranking, "scores": scores}


def generate(seed: int = SEED) -> list[dict]:
    rng = np.random.default_rng(seed)
    models = list(QUALITY)
    records = []
    for q in range(QUERIES):
        answering = sorted(rng.choice(models, size=int(rng.integers(3, 6)), replace=False).tolist())
        labels = list(LABELS[: len(answering)])
        rng.shuffle(answering)
        mapping = dict(zip(labels, answering))
        category = CATEGORIES[int(rng.integers(len(CATEGORIES)))]
        when = START + dt.timedelta(seconds=int(rng.integers(DAYS * 86_400)))
        for k, reviewer in enumerate(REVIEWERS):
            stamp = (when + dt.timedelta(seconds=30 * k)).isoformat().replace("+00:00", "Z")
            records.append({"query_id": f"q{q:03d}", "reviewer": reviewer, **review(rng, reviewer, mapping),
                            "label_to_model": mapping, "category": category, "timestamp": stamp})
    # Malformed reviews, as a council sometimes emits them: the reader must quarantine each one.
    mapping = records[0]["label_to_model"]
    bad = [
        {"ranking": ["Response A", "Response Z"]},  # unknown label
        {"ranking": ["Response A", "Response A"]},  # duplicated label
        {"ranking": [], "abstained": False},  # empty ranking that is not an abstention
        {"ranking": ["Response B"], "abstained": "maybe"},  # abstained is not a boolean
    ]
    for i, fields in enumerate(bad):
        records.append({"query_id": f"bad{i}", "reviewer": "ember-7b", "label_to_model": mapping,
                        "category": "coding", "timestamp": records[0]["timestamp"]} | fields)
    return records


def main() -> None:
    out = Path(__file__).resolve().parent / "reviews.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in generate()), encoding="utf-8")


if __name__ == "__main__":
    main()
