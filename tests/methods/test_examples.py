"""The worked examples of docs/architecture.md ("Recipes") run as they stand there: a method with
its registration, rule, bootstrap and test, and a log kind ingested into a real store and rated."""

from __future__ import annotations

import re
import types
from pathlib import Path

import pytest

from pipeline.logs.kinds import KINDS
from pipeline.methods import REGISTRY, run
from pipeline.stats.reduce import reduce_store
from pipeline.store import Store

ARCHITECTURE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def example(name: str) -> str:
    """The Python block that follows `<!-- example: name -->` in docs/architecture.md."""
    found = re.search(rf"<!-- example: {re.escape(name)} -->\n```python\n(.*?)```", ARCHITECTURE.read_text(), re.S)
    assert found, f"docs/architecture.md has no example {name!r}"
    return found.group(1)


def load(name: str, module_name: str) -> types.ModuleType:
    module = types.ModuleType(module_name)
    exec(compile(example(name), f"docs/architecture.md ({name})", "exec"), module.__dict__)
    return module


@pytest.fixture
def registered():
    """The examples' registrations, removed afterwards so that no other test sees them."""
    yield
    REGISTRY.pop("win-rate", None)
    KINDS.pop("matches", None)


def test_the_method_example_and_its_test_run(registered):
    load("method", "example_win_rate")
    assert REGISTRY["win-rate"].rules["pseudo"].problem(-1.0) is not None
    exec(compile(example("method test"), "docs/architecture.md (method test)", "exec"), {})


def test_the_log_kind_example_ingests_and_rates(registered, tmp_path):
    load("method", "example_win_rate")
    load("log kind", "example_matches")
    log = tmp_path / "results.csv"
    log.write_text("winner,loser\nann,bob\nann,cy\nbob,cy\ncy,ann\n,bob\ncy,cy\n")
    [report] = Store(tmp_path / "store").ingest([log], "matches")
    assert (report.rows_accepted, report.rows_quarantined) == (4, 2)
    ratings = run("win-rate:pseudo=0", reduce_store(Store(tmp_path / "store"), "matches"))
    # ann: 2 wins of 3; bob: 1 of 2; cy: 1 of 3
    assert sorted(ratings.score.tolist()) == [1 / 3, 1 / 2, 2 / 3]
