"""The real data sets of ../shared/datasets as canonical log files, one per (data set, kind).

A stand-in for the column mappings of "bring your own data" (issue 31): until `vase rate` reads these
files' own columns, each data set is converted here (polars) into the canonical columns of a kind
(`pipeline/logs/<kind>.py`). `limit` keeps the first units (matches, races, tasks...) only: the
bounded slices the tests and the quick matrix use. Units are taken in file order, which is time
order for the data sets that have one, so a slice is the data set's beginning.

Each converter returns a polars frame; `write` puts it in a CSV file for `vase rate`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl


def shared_datasets() -> Path:
    """`$VASE_DATASETS`, else the `shared/datasets` folder beside the checkout (as CI lays it) or above it."""
    if given := os.environ.get("VASE_DATASETS"):
        return Path(given)
    checkout = Path(__file__).resolve().parents[1]
    found = (folder / "shared" / "datasets" for folder in checkout.parents)
    return next((f for f in found if f.is_dir()), checkout.parent / "shared" / "datasets")


ROOT = shared_datasets()


def _head(frame: pl.DataFrame, unit: str, limit: int | None) -> pl.DataFrame:
    """The rows of the first `limit` distinct values of `unit`, in file order."""
    if limit is None:
        return frame
    first = frame.select(pl.col(unit).unique(maintain_order=True).head(limit))
    return frame.join(first, on=unit, how="semi", maintain_order="left")


def football_battles(limit: int | None) -> pl.DataFrame:
    raw = pl.read_csv(ROOT / "international_football/results.csv", infer_schema_length=0).with_row_index("battle_id")
    raw = raw.filter(pl.col("home_score").is_not_null() & (pl.col("home_score") != "NA"))
    frame = raw.select(pl.col("battle_id").cast(pl.String), model_a="home_team", model_b="away_team",
                       winner=pl.when(pl.col("result") == "home").then(pl.lit("model_a"))
                       .when(pl.col("result") == "away").then(pl.lit("model_b")).otherwise(pl.lit("tie")),
                       timestamp="date")
    return _head(frame, "battle_id", limit)


def football_games(limit: int | None) -> pl.DataFrame:
    battles = football_battles(limit)
    return _two_player_games(battles)


def _two_player_games(battles: pl.DataFrame) -> pl.DataFrame:
    """Each battle as a two-player game: the winner in place 1, the loser in place 2, a tie both 1."""
    place_a = pl.when(pl.col("winner") == "model_b").then(2).otherwise(1)
    place_b = pl.when(pl.col("winner") == "model_a").then(2).otherwise(1)
    a = battles.select(game_id="battle_id", player="model_a", place=place_a)
    b = battles.select(game_id="battle_id", player="model_b", place=place_b)
    return pl.concat([a, b]).sort("game_id", maintain_order=True)


def wta_battles(limit: int | None) -> pl.DataFrame:
    raw = pl.read_parquet(ROOT / "wta_matches/wta_matches_2000_2024.parquet").with_row_index("battle_id")
    frame = raw.select(pl.col("battle_id").cast(pl.String), model_a=pl.col("winner_id").cast(pl.String),
                       model_b=pl.col("loser_id").cast(pl.String), winner=pl.lit("model_a"))
    return _head(frame, "battle_id", limit)


def wta_games(limit: int | None) -> pl.DataFrame:
    return _two_player_games(wta_battles(limit))


def llmfao_battles(limit: int | None) -> pl.DataFrame:
    raw = pl.read_csv(ROOT / "llmfao/crowd_comparisons.csv").with_row_index("battle_id")
    frame = raw.select(pl.col("battle_id").cast(pl.String), model_a="left", model_b="right",
                       winner=pl.col("winner").replace_strict({"left": "model_a", "right": "model_b", "tie": "tie"}),
                       judge=pl.col("worker").cast(pl.String), prompt=pl.col("prompt").cast(pl.String))
    return _head(frame, "battle_id", limit)


def arena_hard_battles(limit: int | None) -> pl.DataFrame:
    raw = pl.read_csv(ROOT / "arena_hard_auto/arena_hard_battles_20240907.csv").with_row_index("battle_id")
    frame = raw.select(pl.col("battle_id").cast(pl.String), "model_a", "model_b", "winner",
                       prompt=pl.col("question_id").cast(pl.String))
    return _head(frame, "battle_id", limit)


def arena_bench_scores(limit: int | None) -> pl.DataFrame:
    raw = pl.read_csv(ROOT / "arena_hard_auto/arena_bench_v1_gpt4_single_scores.csv")
    return _head(raw.select(task="question_id", agent="model", score="score").drop_nulls("score"), "task", limit)


def livebench_scores(limit: int | None) -> pl.DataFrame:
    """The latest release only: releases re-run tasks, so two releases would count one task twice."""
    raw = pl.read_csv(ROOT / "livebench/livebench_task_scores_long.csv")
    latest = raw.filter(pl.col("release") == pl.col("release").max())
    return _head(latest.select("task", agent="model", score="score", category="category").drop_nulls("score"), "task", limit)


def helm_scores(limit: int | None) -> pl.DataFrame:
    raw = pl.read_csv(ROOT / "every_eval_ever_leaderboards/helm_model_scenario_scores.csv", infer_schema_length=10000)
    frame = (raw.filter(pl.col("evaluation_name") != "Mean win rate")
             .select(task=pl.concat_str("leaderboard", "evaluation_name", separator=":"), agent="model_id",
                     score=pl.col("score").cast(pl.Float64, strict=False))
             .drop_nulls().unique(["task", "agent"], keep="first", maintain_order=True))
    return _head(frame, "task", limit)


def f1_games(limit: int | None) -> pl.DataFrame:
    raw = pl.read_csv(ROOT / "f1_race_results/race_results.csv", infer_schema_length=10000)
    frame = raw.select(game_id=pl.col("raceId").cast(pl.String), player=pl.col("driverId").cast(pl.String),
                       place="position_order", timestamp="date")
    # In the 1950s two drivers sometimes shared a car: a driver's best place in a race is kept.
    return _head(frame.unique(["game_id", "player"], keep="first", maintain_order=True), "game_id", limit)


def f1_ballots(limit: int | None) -> pl.DataFrame:
    """Each race as a ballot of its finishing order (a complete strict order of its drivers)."""
    games = f1_games(limit).sort(["game_id", "place"], maintain_order=True)
    return (games.group_by("game_id", maintain_order=True).agg(pl.col("player").str.join(">").alias("ranking"))
            .select(ballot_id="game_id", ranking="ranking"))


def diplomacy_games(limit: int | None) -> pl.DataFrame:
    """Each game as a weak order of its seven powers: winners (solo or in the draw) first, the others tied last."""
    raw = pl.read_csv(ROOT / "diplomacy_playdiplomacy_powers/games_wide.csv")
    powers = [c for c in raw.columns if c not in ("game_id", "outcome")]
    long = raw.unpivot(index="game_id", on=powers, variable_name="player", value_name="result")
    frame = long.select(pl.col("game_id").cast(pl.String), "player",
                        place=pl.when(pl.col("result") > 0).then(1).otherwise(2))
    return _head(frame.sort("game_id", maintain_order=True), "game_id", limit)


@dataclass(frozen=True)
class DataSet:
    """One real data set read as one kind."""

    name: str
    kind: str
    convert: Callable[[int | None], pl.DataFrame]
    unit: str  # what `limit` counts

    def write(self, folder: Path, limit: int | None = None) -> Path:
        path = folder / f"{self.name}.{self.kind}.csv"
        self.convert(limit).write_csv(path)
        return path


DATASETS = (
    DataSet("international_football", "battles", football_battles, "matches"),
    DataSet("international_football", "games", football_games, "matches"),
    DataSet("wta_matches", "battles", wta_battles, "matches"),
    DataSet("wta_matches", "games", wta_games, "matches"),
    DataSet("llmfao", "battles", llmfao_battles, "judgments"),
    DataSet("arena_hard_auto", "battles", arena_hard_battles, "battles"),
    DataSet("arena_hard_auto", "scores", arena_bench_scores, "questions"),
    DataSet("livebench", "scores", livebench_scores, "tasks"),
    DataSet("every_eval_ever_leaderboards", "scores", helm_scores, "scenarios"),
    DataSet("f1_race_results", "games", f1_games, "races"),
    DataSet("f1_race_results", "ballots", f1_ballots, "races"),
    DataSet("diplomacy_playdiplomacy_powers", "games", diplomacy_games, "games"),
)


def dataset(name: str, kind: str) -> DataSet:
    return next(d for d in DATASETS if d.name == name and d.kind == kind)
