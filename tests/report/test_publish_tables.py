"""Method tables (Ratings.tables) are published beside ratings.parquet, with names, and listed in run.json."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from pipeline.board import Board, run_board
from pipeline.store import Store


def test_council_tables_are_published(tmp_path):
    source = tmp_path / "reviews.jsonl"
    mapping = {"A": "m1", "B": "m2", "C": "m3"}
    source.write_text("".join(json.dumps({"query_id": f"q{i}", "reviewer": r, "ranking": ranking, "label_to_model": mapping,
                                          "category": "code", "timestamp": "2024-11-01"}) + "\n"
                              for i, (r, ranking) in enumerate([("m1", ["A", "B", "C"]), ("m2", ["C", "B", "A"]), ("x", ["B", "A"])])))
    board = Board("council", "reviews", (str(source),), ("council-borda:compare=copeland+not-a-method", "copeland"))
    out = tmp_path / "out"
    run_board(board, Store(tmp_path / "store"), out)
    run = json.loads((out / "run.json").read_text())
    for stem in ("council-borda.per_query", "council-borda.leaderboard", "council-borda.comparison"):
        assert {f"{stem}.parquet", f"{stem}.md"} <= set(run["outputs"])
        assert (out / f"{stem}.md").read_text().startswith("# council: " + stem)
    table = pq.read_table(out / "council-borda.comparison.parquet")
    assert sorted(table.column("agent").to_pylist()) == ["m1", "m2", "m3"]
    assert "not-a-method" in (out / "leaderboard.md").read_text()  # the unavailable spec is said in the report
    assert run["diagnostics"]["council-borda:compare=copeland+not-a-method,exclude_self_votes=true,ranks=strict,window_days=30"]["reviewer_agents"] == ["m1", "m2", "x"]


def test_a_family_of_many_columns_leaves_the_leaderboard_for_a_long_table():
    # LiveBench's deviation fills a column c[<task>] per task: 25 columns, a leaderboard of
    # 3,271 px that scrolled sideways on any screen. The leaderboard keeps the method's few own
    # columns; the family is a long table, a row per agent and column, every value in it.
    import polars as pl

    from pipeline.report.tables import leaderboard_table, long_table, own_columns

    tasks = [f"c[task {i}]" for i in range(18)]
    rows = pl.DataFrame({"method": ["deviation"] * 3, "agent": ["a", "b", "c"], "rank": [1, 2, 3], "score": [0.3, 0.1, -0.4],
                         "marginal": [0.5, 0.3, 0.2]} | {t: [i / 100, -i / 100, 0.0] for i, t in enumerate(tasks)})
    names = [c.name for c in leaderboard_table(rows).columns]
    assert "marginal" in names and not [n for n in names if n.startswith("c[")]
    shown, further = own_columns(rows)
    assert shown == ["marginal"] and further == tasks
    long = long_table(rows, further)
    assert [c.name for c in long.columns] == ["agent", "column", "value"] and len(long.rows) == 3 * len(tasks)
    agent, column, value = long.rows[len(tasks) + 5]  # agent b's 6th task: -5 / 100
    assert (agent.text, column.text, float(value.text)) == ("b", "c[task 5]", -0.05)


def test_the_table_says_who_is_ranked_apart_and_never_counts_zero():
    from pipeline.report.publish import standing_sentence

    some = standing_sentence({"ordered_by": "score", "min_records": 25, "provisional_count": 2})
    none = standing_sentence({"ordered_by": "score", "min_records": 5, "provisional_count": 0})
    assert some.endswith("at least 25 records; the 2 with fewer are provisional, ranked apart after them.")
    assert none == "Ranked by the method's score, among the agents with at least 5 records; no agent has fewer."
    dated = standing_sentence({"ordered_by": "lower", "min_records": 3, "provisional_count": 1, "as_of": "2024-05-01",
                               "ages_from": "2024-04-01", "half_life_days": 30.0})
    assert dated == ("Records as of 2024-05-01. Each record weighed by its age: half-life 30 days from 2024-04-01. Ranked by "
                     "the lower end of the 95% score interval, among the agents with at least 3 records; the 1 with fewer are "
                     "provisional, ranked apart after them.")


def test_method_tables_name_agents_and_judges_and_a_second_spec_gets_its_own_stem():
    # A table's `agent` / `*_agent` columns hold agent store ids, `judge` / `*_judge` judge store
    # ids (-1: a battle without a judge); other columns (`count`, `agents`) stay as they are.
    import dataclasses

    import numpy as np
    import pyarrow as pa

    from pipeline.methods.ratings import Ratings
    from pipeline.report.publish import method_tables

    table = pa.table({"agent": [0, 1], "best_agent": [1, None], "judge": [1, -1], "count": [3, 4], "agents": [0, 1]})
    rated = Ratings.from_scores(np.array([0, 1]), np.array([1.0, 0.0]), tables={"votes": table})
    specs = [dataclasses.replace(rated, name="elo")] * 2
    tables = method_tables(specs, ["ann", "bob"], judges=["j0", "j1"])
    assert list(tables) == ["elo.votes", "elo-2.votes"]
    assert tables["elo.votes"].to_pydict() == {"agent": ["ann", "bob"], "best_agent": ["bob", None], "judge": ["j1", "(none)"],
                                               "count": [3, 4], "agents": [0, 1]}
    # without a judges dictionary a judge keeps its id, as text
    assert method_tables(specs[:1], ["ann", "bob"])["elo.votes"].column("judge").to_pylist() == ["1", "(none)"]


def test_a_method_table_in_markdown_is_its_title_header_and_rows_as_text():
    import pyarrow as pa

    from pipeline.report.publish import table_markdown

    table = pa.table({"agent": ["a|b", None], "p_win": [2 / 3, float("nan")], "n": [1, 2]})
    # floats to 6 significant digits, NaN and null as empty cells, text escaped (`|` is a column break; `_` inside a word is plain)
    assert table_markdown("T: x.y", table) == ("# T: x.y\n\n| agent | p_win | n |\n|---|---|---|\n"
                                              "| a\\|b | 0.666667 | 1 |\n|  |  | 2 |\n")


def test_a_column_of_agents_none_of_them_known_is_still_text():
    # a `*_agent` column with no value at all: pyarrow would type [None, None] as null; published, it is text like any other
    import numpy as np
    import pyarrow as pa

    from pipeline.methods.ratings import Ratings
    from pipeline.report.publish import method_tables

    table = pa.table({"agent": [0, 1], "best_agent": pa.array([None, None], pa.int64())})
    rated = Ratings.from_scores(np.array([0, 1]), np.array([1.0, 0.0]), tables={"votes": table})
    named = method_tables([rated], ["ann", "bob"])[f"{rated.name}.votes"]
    assert named.schema.field("best_agent").type == pa.string() and named.column("best_agent").to_pylist() == [None, None]


def test_diagnostics_are_published_json_safe_with_agents_named_at_any_depth():
    # `*_agents` may nest (a list of tiers, each a list of ids); mappings and arrays keep their keys and items, as JSON
    import numpy as np

    from pipeline.methods.ratings import Ratings
    from pipeline.report.publish import published_info

    info = {"tier_agents": [[2, 0], np.array([1])], "task_ratings": {"t1": np.float64(0.25), 3: float("nan")},
            "weights": np.array([0.5, np.inf])}
    rated = Ratings.from_scores(np.array([0, 1, 2]), np.array([1.0, 0.5, 0.0]), info=info)
    assert published_info(rated, ["ann", "bob", "cy"]) == {"task_ratings": {"t1": 0.25, "3": None},
                                                           "tier_agents": [["cy", "ann"], ["bob"]], "weights": [0.5, None]}
