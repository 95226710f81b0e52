"""Build the bundled samples from the original data sets (run once by a developer; outputs are committed).

    python data-samples/make_samples.py DATASETS

DATASETS is a folder with one sub-folder per original data set (`llmfao`, `f1_race_results`,
`livebench`, `arena_hard_auto`), each with its files and its PROVENANCE.md. Each sample folder
gets a PROVENANCE.md: what was done here, then the data set's own provenance, verbatim.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl

HERE = Path(__file__).resolve().parent
DATASETS = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("datasets")


def provenance(folder: str, source: str, done: str) -> None:
    original = (DATASETS / source / "PROVENANCE.md").read_text(encoding="utf-8")
    (HERE / folder / "PROVENANCE.md").write_text(
        f"# Sample: {folder}\n\n## What was done for vase\n{done.strip()}\n\n"
        f"## Provenance of the source data set (verbatim from the data set's own PROVENANCE.md, `{source}`)\n\n{original}",
        encoding="utf-8",
    )


def llmfao() -> None:
    crowd = pl.read_csv(DATASETS / "llmfao" / "crowd_comparisons.csv")
    battles = crowd.select(
        (pl.col("id").cast(pl.String) + ":" + pl.col("worker").cast(pl.String)).alias("battle_id"),
        pl.col("left").alias("model_a"),
        pl.col("right").alias("model_b"),
        pl.col("winner").replace_strict({"left": "model_a", "right": "model_b", "tie": "tie"}).alias("winner"),
        pl.col("worker").cast(pl.String).alias("judge"),
        pl.col("prompt").cast(pl.String).alias("prompt"),
    )
    (HERE / "llmfao").mkdir(exist_ok=True)
    battles.write_csv(HERE / "llmfao" / "crowd_battles.csv")
    provenance("llmfao", "llmfao", f"""
`crowd_battles.csv`: every row of `crowd_comparisons.csv` ({battles.height} battles) in vase's canonical battle
columns: `battle_id` = `<pair id>:<worker>`, `model_a` = `left`, `model_b` = `right`, `winner` left/right/tie ->
model_a/model_b/tie, `judge` = `worker` (the crowd annotator), `prompt` = prompt id. Log kind: battles.
""")


def f1() -> None:
    results = pl.read_csv(DATASETS / "f1_race_results" / "race_results.csv", infer_schema_length=None)
    drivers = pl.read_csv(DATASETS / "f1_race_results" / "drivers.csv").select(
        "driverId", (pl.col("forename") + " " + pl.col("surname")).alias("player"))
    games = (
        results.filter(pl.col("year").is_between(2021, 2023)).join(drivers, on="driverId")
        .select(pl.col("raceId").cast(pl.String).alias("game_id"), "player",
                pl.col("position_order").alias("place"), pl.col("date").alias("timestamp"))
        .sort("timestamp", "game_id", "place")
    )
    (HERE / "f1").mkdir(exist_ok=True)
    games.write_csv(HERE / "f1" / "races_2021_2023.csv")
    provenance("f1", "f1_race_results", f"""
`races_2021_2023.csv`: the {games['game_id'].n_unique()} races of the 2021-2023 seasons ({games.height} rows) as
multi-player games: `game_id` = `raceId`, `player` = driver forename + surname (drivers.csv), `place` =
`position_order` (a strict finishing order including retirements), `timestamp` = race date. Log kind: games.
""")


def livebench() -> None:
    long = pl.read_csv(DATASETS / "livebench" / "livebench_task_scores_long.csv")
    release = long.filter(pl.col("release") == "2024-08-31")
    wide = release.pivot(on="model", index="task", values="score", aggregate_function=None).sort("task")
    (HERE / "livebench").mkdir(exist_ok=True)
    wide.write_csv(HERE / "livebench" / "livebench_2024-08-31.csv")
    provenance("livebench", "livebench", f"""
`livebench_2024-08-31.csv`: the 2024-08-31 release ({release.height} scores) pivoted to a wide score table: first
column `task`, one column per model ({wide.width - 1} models, {wide.height} tasks), empty where a model has no
score. Each task is a voter ranking the models by score. Log kind: scores.
""")


def arena_bench() -> None:
    scores = pl.read_csv(DATASETS / "arena_hard_auto" / "arena_bench_v1_gpt4_single_scores.csv").drop_nulls("score")
    lines = []
    for (question,), group in scores.sort("question_id").group_by("question_id", maintain_order=True):
        levels = group.sort("score", "model", descending=[True, False])
        ranking = ">".join("=".join(g["model"].to_list()) for _, g in levels.group_by("score", maintain_order=True))
        lines.append(json.dumps({"ballot_id": question, "ranking": ranking}))
    (HERE / "arena_bench").mkdir(exist_ok=True)
    (HERE / "arena_bench" / "question_ballots.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    provenance("arena_bench", "arena_hard_auto", f"""
`question_ballots.jsonl`: `arena_bench_v1_gpt4_single_scores.csv` turned into {len(lines)} ranked ballots, one per
question: the models ordered by their GPT-4 score (1-10), equal scores tied (`=`), models with a missing score
left out (a partial ballot). Log kind: ballots.

`arena_hard_battles.csv`: `arena_hard_battles_20240907.csv` verbatim (Chatbot Arena column names:
`question_id`, `model_a`, `model_b`, `winner`). Log kind: battles.
""")
    (HERE / "arena_bench" / "arena_hard_battles.csv").write_bytes((DATASETS / "arena_hard_auto" / "arena_hard_battles_20240907.csv").read_bytes())


if __name__ == "__main__":
    llmfao()
    f1()
    livebench()
    arena_bench()
