"""The `vase` command: ingest, rate and methods use the library directly (no Prefect server)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from pipeline.cli import app
from tests.conftest import SAMPLES

runner = CliRunner()


def test_ingest_reports_accounting_and_is_idempotent(tmp_path):
    args = ["ingest", str(SAMPLES / "llmfao"), "--kind", "battles", "--store", str(tmp_path / "s")]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "rows in 8931 = accepted 8931 + quarantined 0" in first.output
    second = runner.invoke(app, args)
    assert "skipped" in second.output


def test_ingest_exits_nonzero_on_unreadable_file_but_keeps_going(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("model_a,model_b\nx,y\n")
    result = runner.invoke(app, ["ingest", str(bad), str(SAMPLES / "f1"), "--kind", "games", "--store", str(tmp_path / "s")])
    assert result.exit_code == 1 and "unreadable" in result.output and "ingested" in result.output


def test_rate_from_files_without_a_store(tmp_path):
    result = runner.invoke(app, ["rate", str(SAMPLES / "livebench"), "--kind", "scores", "--method", "borda",
                                 "--method", "approval:k=3", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    records = json.loads((tmp_path / "out" / "ratings.json").read_text())
    assert {r["method"] for r in records} == {"borda:normalise=false", "approval:k=3"}


def test_rate_rejects_bad_specs_and_kinds(tmp_path):
    bad_method = runner.invoke(app, ["rate", str(SAMPLES / "f1"), "--kind", "games", "--method", "bordaa", "--out", str(tmp_path)])
    assert bad_method.exit_code == 2 and "unknown method 'bordaa'" in bad_method.output
    bad_kind = runner.invoke(app, ["rate", str(SAMPLES / "f1"), "--kind", "race", "--method", "borda", "--out", str(tmp_path)])
    assert bad_kind.exit_code == 2 and "unknown kind 'race'" in bad_kind.output


def test_methods_lists_the_registry():
    result = runner.invoke(app, ["methods"])
    assert result.exit_code == 0 and "approval" in result.output and "k=2" in result.output
