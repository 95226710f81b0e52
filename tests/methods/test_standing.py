"""Provisional agents and the board's order key (`pipeline.methods.standing`): an agent with few records
never holds a headline rank, in any method or output, and the order key is the one asked for."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from benchmarks.datasets import ROOT as DATASETS
from pipeline.board import Board, load_boards, run_board
from pipeline.methods import needed_statistics, run
from pipeline.methods.numerics.resample import ranks_within
from pipeline.methods.standing import MIN_RECORDS, PROVISIONAL, Standing
from pipeline.stats.in_memory import statistics_of_records
from pipeline.store import Store

SPECS = ("m-elo:prior=0.01,bootstrap=40", "copeland:bootstrap=20", "borda")


def long_tail(seed: int = 3) -> list[dict]:
    """Ten regulars meeting 400 times (strength by index) and two newcomers who won their one or two battles."""
    rng = np.random.default_rng(seed)
    strength = np.linspace(-1.5, 1.5, 10)
    rows = []
    for _ in range(400):
        a, b = rng.choice(10, 2, replace=False)
        won = rng.random() < 1 / (1 + np.exp(strength[b] - strength[a]))
        rows.append({"model_a": f"r{a}", "model_b": f"r{b}", "winner": "model_a" if won else "model_b"})
    rows += [{"model_a": "new1", "model_b": "r9", "winner": "model_a"},
             {"model_a": "new2", "model_b": "r8", "winner": "model_a"}, {"model_a": "new2", "model_b": "r9", "winner": "model_a"}]
    return rows


@pytest.fixture(scope="module")
def rated():
    stats, names = statistics_of_records(long_tail(), "battles", needed_statistics(SPECS))
    standing = Standing(min_records=3)
    return {spec: run(spec, stats, standing=standing) for spec in SPECS}, names, stats


def test_an_agent_with_one_or_two_records_never_holds_a_headline_rank(rated):
    ratings, names, stats = rated
    newcomers = {names.index("new1"), names.index("new2")}
    for spec, r in ratings.items():
        flagged = {int(a) for a in r.agents[r.extras[PROVISIONAL]]}
        assert flagged == newcomers, spec
        established = ~r.extras[PROVISIONAL]
        assert r.rank[established].max() <= established.sum() < r.rank[~established].min(), spec  # ranked apart, after
        assert r.rank[established].min() == 1, spec
        assert r.info["provisional_count"] == 2
        if "tier" in r.extras:
            assert (r.extras["tier"][~established] == 0).all() and (r.extras["tier"][established] >= 1).all(), spec
            assert r.extras["rank_high"][established].max() <= established.sum(), spec  # counted among the established
    m_elo = ratings[SPECS[0]]  # without the standing, a newcomer who never lost tops m-Elo at a weak prior
    assert m_elo.agents[np.argmax(m_elo.score)] in newcomers


def test_ranks_within_recount_each_group_and_a_recount_changes_nothing():
    ranks = np.array([[1, 2, 2, 4, 5], [5, 1, 3, 2, 4]])
    mask = np.array([False, True, True, False, True])
    within = ranks_within(ranks, mask)
    assert within.tolist() == [[4, 1, 1, 5, 3], [5, 1, 2, 4, 3]]
    assert np.array_equal(ranks_within(within, mask), within)


def test_order_lower_and_rank_ub_rank_by_their_keys(rated):
    _, _, stats = rated
    r = run(SPECS[0], stats, standing=Standing(min_records=3, order="lower"))
    established = ~r.extras[PROVISIONAL]
    best_first = np.argsort(r.rank[established], kind="stable")
    assert np.all(np.diff(r.extras["ci_low"][established][best_first]) <= 0)
    r = run(SPECS[0], stats, standing=Standing(min_records=3, order="rank_ub"))
    established = ~r.extras[PROVISIONAL]
    best_first = np.argsort(r.rank[established], kind="stable")
    assert np.all(np.diff(r.extras["rank_ci"][established][best_first]) >= 0)
    assert r.info["ordered_by"] == "rank_ub"
    with pytest.raises(ValueError, match="order lower needs intervals"):
        run("borda", stats, standing=Standing(order="lower"))


@pytest.mark.parametrize("bad, message", [({"min_records": -1}, "min_records=-1"), ({"order": "best"}, "order 'best'")])
def test_bad_standing_is_one_line_before_any_work(tmp_path, bad, message):
    with pytest.raises(ValueError, match=message):
        Board("b", "battles", (), ("borda",), **bad)
    config = tmp_path / "boards.yaml"
    key, value = next(iter(bad.items()))
    config.write_text(f"boards:\n  - {{name: b, kind: battles, sources: [x.csv], methods: [borda], {key}: {value}}}\n")
    with pytest.raises(ValueError, match=f"board b: {message}"):
        load_boards(config)


def test_every_output_carries_the_flag_and_run_json_counts_it(tmp_path):
    log = tmp_path / "battles.csv"
    pl.DataFrame(long_tail()).write_csv(log)
    out = tmp_path / "out"
    board = Board("tail", "battles", (str(log),), ("copeland:bootstrap=10",), min_records=3, order="lower")
    run_board(board, Store(tmp_path / "store"), out)
    table = pl.read_parquet(out / "ratings.parquet")
    assert sorted(table.filter(pl.col(PROVISIONAL)).get_column("agent").to_list()) == ["new1", "new2"]
    assert table.filter(pl.col(PROVISIONAL)).get_column("rank").min() == 11
    assert {rec["agent"] for rec in json.loads((out / "ratings.json").read_text()) if rec[PROVISIONAL]} == {"new1", "new2"}
    markdown = (out / "leaderboard.md").read_text()
    main, apart = markdown.split("### Provisional agents (2)")
    assert "new1" not in main and "new1" in apart and "lower end of the 95% score interval" in main
    parameters = json.loads((out / "run.json").read_text())["parameters"]
    assert parameters["min_records"] == 3 and parameters["order"] == "lower"
    assert list(parameters["provisional_count"].values()) == [2]
    page = (out / "index.html").read_text()
    assert "provisional agents (2)" in page and "lower end of the 95% score interval" in page


WTA = DATASETS / "wta_matches"


def wta_battles(path: Path, since: str) -> Path:
    """The WTA matches since a date as canonical battles (the winner is model_a), names from players.csv."""
    matches = pl.read_parquet(WTA / "wta_matches_2000_2024.parquet").filter(pl.col("tourney_date") >= pl.lit(since).str.to_date())
    players = pl.read_csv(WTA / "players.csv").select(pl.col("player_id"), pl.col("name"))
    for side in ("winner", "loser"):
        matches = matches.join(players.rename({"player_id": f"{side}_id", "name": side}), on=f"{side}_id", how="left")
    matches.select(battle_id=pl.col("tourney_id") + "-" + pl.col("match_num").cast(pl.String),
                   model_a=pl.coalesce("winner", pl.col("winner_id").cast(pl.String)),
                   model_b=pl.coalesce("loser", pl.col("loser_id").cast(pl.String)),
                   winner=pl.lit("model_a")).write_csv(path)
    return path


@pytest.mark.skipif(not WTA.is_dir(), reason="the WTA data set is not on this machine")
def test_on_wta_no_player_under_the_minimum_holds_a_headline_rank_and_the_top_ten_are_regulars(tmp_path):
    log = wta_battles(tmp_path / "wta.csv", "2021-01-01")  # four seasons: a bounded slice, still long-tailed
    out = tmp_path / "out"
    run_board(Board("wta", "battles", (str(log),), ("m-elo:prior=auto,bootstrap=0",)), Store(tmp_path / "store"), out)
    rated = pl.read_parquet(out / "ratings.parquet").join(pl.read_parquet(out / "agents.parquet"), on="agent")
    established = rated.filter(~pl.col(PROVISIONAL))
    assert rated.filter(pl.col("records") < MIN_RECORDS).get_column(PROVISIONAL).all()
    assert established.get_column("rank").max() == established.height < rated.filter(pl.col(PROVISIONAL)).get_column("rank").min()
    top = established.sort("rank").head(10).get_column("records")
    # seasons of matches (one, second, played 62 before retiring), where prior=0.01 put a 4-match player first
    assert top.min() >= 2 * MIN_RECORDS and top.median() >= 150, top.to_list()


def test_the_threshold_is_capped_by_the_best_covered_agent():
    # A benchmark where every model ran the same 6 tasks: no agent can reach MIN_RECORDS, so the cap
    # (a quarter of the most records, 2) keeps every model established, and a model that ran only one
    # task is the one flagged. On the long tail above, the regulars' ~90 records keep the newcomers flagged.
    rows = [{"task": f"t{t}", "agent": f"m{a}", "score": float((a * 7 + t * 3) % 5)} for t in range(6) for a in range(5)]
    rows.append({"task": "t0", "agent": "late", "score": 1.0})
    stats, names = statistics_of_records(rows, "scores", needed_statistics(["borda"]))
    standing = Standing()
    assert standing.threshold(stats) == 2 < MIN_RECORDS
    ratings = run("borda", stats, standing=standing)
    assert [names[a] for a in ratings.agents[ratings.extras[PROVISIONAL]]] == ["late"]
    assert ratings.info["min_records"] == 2
    long_stats, _ = statistics_of_records(long_tail(), "battles", needed_statistics(["borda"]))
    assert Standing(min_records=3).threshold(long_stats) == 3 and 2 < Standing().threshold(long_stats) <= MIN_RECORDS
