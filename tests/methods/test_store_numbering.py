"""Same battles, two store numberings: the same ratings files, byte for byte.

One store ingests the LLMFAO crowd battles alone; the other first ingests an unrelated ballots
file naming half of the models, so every model gets another store id. Seeded
methods draw their random streams in the canonical order of the agents' names, and the
deterministic ones sum in an order that does not depend on the ids, so nothing may differ (the
published files hold names, never store ids).
"""

from __future__ import annotations

import json

import polars as pl
import pyarrow.parquet as pq
import pytest

from pipeline.board import Board, run_board
from pipeline.methods import Spec
from pipeline.store import Store
from tests.conftest import SAMPLES

CROWD = SAMPLES / "llmfao" / "crowd_battles.csv"
# Kemeny is left out: its optimum on these 59 models is not unique, and the canonical choice costs
# about 60 MIPs (two minutes per store); tests/methods/voting/test_kemeny.py checks that choice against
# store ids and against enumeration on relabelled profiles.
METHODS = ("m-elo:bootstrap=200", "elo:shuffles=20", "am-elo", "elo", "plurality", "approval", "borda", "borda:normalise=true",
           "copeland", "schulze", "ranked-pairs", "maximal-lotteries", "iterative-maximal-lotteries", "stv")


@pytest.fixture(scope="module")
def two_numberings(tmp_path_factory):
    root = tmp_path_factory.mktemp("numbering")
    names = sorted(set(pl.read_csv(CROWD)["model_a"]) | set(pl.read_csv(CROWD)["model_b"]))
    unrelated = root / "unrelated.csv"
    # The store numbers a file's new names in sorted order: naming every other model (and one that
    # never battles) first gives each model another id.
    pl.DataFrame({"ranking": [">".join(["0 unrelated", *names[1::2]])]}).write_csv(unrelated)
    outputs = []
    for label, first in (("plain", None), ("rotated", unrelated)):
        store = Store(root / label / "store")
        if first is not None:
            store.ingest([first], "ballots")
        result = run_board(Board("crowd", "battles", (str(CROWD),), METHODS), store, root / label / "out")
        assert not result.errors
        outputs.append((store, root / label / "out"))
    return outputs


def test_the_stores_number_the_agents_differently(two_numberings):
    (plain, _), (rotated, _) = two_numberings
    ids = [{name: i for i, name in enumerate(store.dictionary("agents").names)} for store in (plain, rotated)]
    common = sorted(set(ids[0]) & set(ids[1]))
    assert len(common) == 59 and sum(ids[0][n] != ids[1][n] for n in common) > 50


def records(out, spec: str) -> str:
    """The spec's rows of ratings.json, as text."""
    canonical = str(Spec.parse(spec))
    return json.dumps([r for r in json.loads((out / "ratings.json").read_text()) if r["method"] == canonical], indent=1)


@pytest.mark.parametrize("spec", METHODS)
def test_each_method_rates_the_same_whatever_the_numbering(two_numberings, spec):
    (_, plain), (_, rotated) = two_numberings
    mine = records(plain, spec)
    assert len(json.loads(mine)) >= 58 and mine == records(rotated, spec)


def test_ratings_files_are_identical(two_numberings):
    """The whole files."""
    (_, plain), (_, rotated) = two_numberings
    texts = [(out / "ratings.json").read_text() for out in (plain, rotated)]
    tables = [pq.read_table(out / "ratings.parquet") for out in (plain, rotated)]
    assert texts[0] == texts[1] and '"ci_low"' in texts[0] and '"sd"' in texts[0]
    assert "agent_id" not in tables[0].column_names and tables[0].equals(tables[1])
