"""The council board of data-samples/nightly.yaml through the nightly Prefect flow (slow)."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.conftest import SAMPLES


@pytest.mark.slow
def test_nightly_flow_publishes_the_council_board(tmp_path):
    from flows.nightly import nightly

    config = yaml.safe_load((SAMPLES / "nightly.yaml").read_text())
    council = [b for b in config["boards"] if b["kind"] == "reviews"]
    assert [b["name"] for b in council] == ["council-reviews"]
    council[0]["sources"] = [str(SAMPLES / s) for s in council[0]["sources"]]
    (tmp_path / "boards.yaml").write_text(yaml.safe_dump({"boards": council}))
    run = tmp_path / "run"
    nightly(str(tmp_path / "boards.yaml"), str(run), workers=1)
    out = run / "latest" / "council-reviews"
    record = json.loads((out / "run.json").read_text())
    assert record["rows"] == {"rows_in": 454, "rows_accepted": 450, "rows_quarantined": 4}
    assert "council-borda.leaderboard.parquet" in record["outputs"] and (out / "council-borda.leaderboard.md").exists()
    diagnostics = next(v for k, v in record["diagnostics"].items() if k.startswith("council-borda"))
    assert set(diagnostics["comparison_unavailable"]) <= {"maximal-lotteries", "m-elo"}
    assert diagnostics["compared_with"][0] == "copeland" and diagnostics["abstentions"] > 0
    # `by: category` in the config: a board per category beside the overall one, linked from its page.
    categories = record["categories"]
    assert [(b["category"], b["folder"]) for b in categories["boards"]] == [
        ("coding", "category=coding"), ("math", "category=math"), ("writing", "category=writing")]
    assert categories["rows_without_category"] == 0 and not any("failed" in b for b in categories["boards"])
    for entry in categories["boards"]:
        child = json.loads((out / entry["folder"] / "run.json").read_text())
        assert child["parameters"]["category"] == entry["category"]
        assert (out / entry["folder"] / "index.html").exists()
    assert "category=math/index.html" in (out / "index.html").read_text()
    # The history follows each category's board.
    import polars as pl

    boards = set(pl.read_parquet(run / "history.parquet").get_column("board").to_list())
    assert {"council-reviews", "council-reviews/category=coding", "council-reviews/category=writing"} <= boards
