"""Published outputs: schema, names from the store, stable bytes, run accounting."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from pipeline.board import Board, run_board
from pipeline.store import Store

from tests.conftest import SAMPLES, data_rows


def test_board_outputs(tmp_path):
    board = Board("f1", "games", (str(SAMPLES / "f1"),), ("borda", "copeland"), "F1")
    result = run_board(board, Store(tmp_path / "store"), tmp_path / "out")
    out = tmp_path / "out"
    table = pq.read_table(out / "ratings.parquet")
    assert table.column_names[:4] == ["method", "agent", "rank", "score"] and "agent_id" not in table.column_names
    records = json.loads((out / "ratings.json").read_text())
    assert {r["method"] for r in records} == {"borda:normalise=false", "copeland:tie_credit=0.5"}
    top = [r for r in records if r["method"].startswith("borda")][0]
    assert (top["agent"], top["rank"]) == ("Max Verstappen", 1)
    # Each method's rows go by rank, and the ranks of a method are a competition ranking.
    ranks = [r["rank"] for r in records if r["method"].startswith("copeland")]
    assert ranks == sorted(ranks) and ranks[0] == 1
    run = json.loads((out / "run.json").read_text())
    assert run["rows"]["rows_in"] == run["rows"]["rows_accepted"] + run["rows"]["rows_quarantined"] == \
        data_rows(SAMPLES / "f1" / "races_2021_2023.csv")
    assert run["outputs"] == ["agents.parquet", "leaderboard.md", "pairwise.parquet", "ratings.json", "ratings.parquet", "run.json"]
    assert run["title"] == "F1" and (out / "index.html").exists()
    assert run["inputs"][0]["sha256"] and "reduce" in run["timings_s"]
    markdown = (out / "leaderboard.md").read_text()
    assert markdown.startswith("# F1\n") and "## copeland:tie_credit=0.5" in markdown and "| 1 | Max Verstappen |" in markdown
    assert len(result.ratings) == 2


def test_same_inputs_same_bytes(tmp_path):
    board = Board("arena", "battles", (str(SAMPLES / "arena_bench" / "arena_hard_battles.csv"),), ("plurality", "copeland"))
    for i in range(2):
        run_board(board, Store(tmp_path / f"store{i}"), tmp_path / f"out{i}")
    for name in ("ratings.parquet", "ratings.json", "leaderboard.md"):
        assert (tmp_path / "out0" / name).read_bytes() == (tmp_path / "out1" / name).read_bytes(), name


def test_same_battles_under_two_id_numberings_give_the_same_bytes(tmp_path):
    """Store ids follow ingest order; nothing published may depend on them."""
    source = SAMPLES / "arena_bench" / "arena_hard_battles.csv"
    games = tmp_path / "games.csv"  # names the agents in another order first: the store numbers them so
    games.write_text("game_id,player,place\ng1,gpt-4o-mini,1\ng1,gpt-4o,2\ng1,claude-3-opus-20240229,3\n")
    Store(tmp_path / "store-b").ingest([games], "games")
    # deviation on the agent-vs-agent game has a contribution column per opponent agent.
    specs = ("copeland", "borda", "plurality", "deviation:game=agent-agent")
    for name in "ab":
        run_board(Board("arena", "battles", (str(source),), specs), Store(tmp_path / f"store-{name}"), tmp_path / name)
    ids = [pq.read_table(tmp_path / f"store-{n}" / "dictionaries" / "agents.parquet").column(1).to_pylist() for n in "ab"]
    assert ids[0] != ids[1]  # the two stores did number the agents differently
    for output in ("ratings.parquet", "ratings.json", "leaderboard.md", "agents.parquet", "pairwise.parquet"):
        assert (tmp_path / "a" / output).read_bytes() == (tmp_path / "b" / output).read_bytes(), output
    opponents = [c for c in pq.read_schema(tmp_path / "a" / "ratings.parquet").names if c.startswith("c[")]
    assert opponents == [f"c[{n}]" for n in sorted(("gpt-4o-mini", "gpt-4o", "claude-3-opus-20240229", "claude-3-haiku-20240307",
                                                     "claude-3-5-sonnet-20240620"))]  # in name order
    # leaderboard.md shows the same columns, filled (its header once named them by store id, over empty cells)
    board = (tmp_path / "a" / "leaderboard.md").read_text()
    header = next(line for line in board.splitlines() if line.startswith("| rank") and "c\\[" in line)
    assert header.endswith("| c\\[gpt-4o\\] | c\\[gpt-4o-mini\\] |") and "#" not in header
    row = board.splitlines()[board.splitlines().index(header) + 2]
    assert row.count("|") == header.count("|") and "|  |" not in row


def test_pairwise_and_agents_tables(tmp_path):
    # a beats b twice and ties once; b beats c once; a and c never meet.
    source = tmp_path / "battles.csv"
    source.write_text("model_a,model_b,winner\nb,a,model_b\na,b,model_a\na,b,tie\nc,b,model_b\n")
    out = tmp_path / "out"
    run_board(Board("t", "battles", (str(source),), ("copeland",)), Store(tmp_path / "store"), out)
    pairs = pq.read_table(out / "pairwise.parquet").to_pylist()
    assert pairs == [
        {"agent": "a", "opponent": "b", "wins": 2.0, "losses": 0.0, "ties": 1.0, "win_rate": 2.5 / 3},
        {"agent": "b", "opponent": "a", "wins": 0.0, "losses": 2.0, "ties": 1.0, "win_rate": 0.5 / 3},
        {"agent": "b", "opponent": "c", "wins": 1.0, "losses": 0.0, "ties": 0.0, "win_rate": 1.0},
        {"agent": "c", "opponent": "b", "wins": 0.0, "losses": 1.0, "ties": 0.0, "win_rate": 0.0},
    ]
    assert pq.read_table(out / "agents.parquet").to_pylist() == [{"agent": "a", "records": 3}, {"agent": "b", "records": 4},
                                                                  {"agent": "c", "records": 1}]


HOSTILE_NAMES = ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "a|b", "[click](javascript:alert(1))",
                 "*bold* _it_ `code`", "&lt;b&gt;", "back\\slash", "~~gone~~", "tie_credit"]


def test_names_in_markdown_are_text_never_markup(tmp_path):
    # Rendered by a CommonMark renderer with raw HTML on and GFM tables: every row keeps its
    # columns, no name becomes a tag, a link or emphasis, and each name reads back as it is.
    from markdown_it import MarkdownIt

    source = tmp_path / "battles.csv"
    source.write_text("model_a,model_b,winner\n" + "".join(
        f'"{a.replace(chr(34), 2 * chr(34))}","{b.replace(chr(34), 2 * chr(34))}",model_a\n'
        for i, a in enumerate(HOSTILE_NAMES) for b in HOSTILE_NAMES[i + 1:]), encoding="utf-8")
    out = tmp_path / "out"
    run_board(Board("b|<i>", "battles", (str(source),), ("schulze", "copeland")), Store(tmp_path / "store"), out)
    tokens = MarkdownIt("commonmark", {"html": True}).enable("table").parse((out / "leaderboard.md").read_text())
    inline = [child for token in tokens if token.type == "inline" for child in token.children or ()]
    assert not [t.type for t in inline if t.type in ("html_inline", "link_open", "em_open", "strong_open", "s_open")]
    assert not [t for t in tokens if t.type == "html_block"]
    rows, row = [], None
    for i, token in enumerate(tokens):
        if token.type == "tr_open":
            row = []
        elif token.type == "inline" and row is not None:
            row.append("".join(child.content for child in token.children or ()))
        elif token.type == "tr_close":
            rows.append(row)
            row = None
    agents = [r[1] for r in rows if r[0] != "rank"]
    assert all(len(r) == len(rows[0]) for r in rows if len(r) in (3, 4)) and sorted(agents) == sorted(HOSTILE_NAMES * 2)
    heading = next(t for i, t in enumerate(tokens) if i and tokens[i - 1].type == "heading_open")
    assert heading.children[0].content == "b|<i>"


def test_a_code_span_is_fenced_by_more_backticks_than_it_holds_and_padded_where_commonmark_would_strip():
    # CommonMark: a span opened by n backticks ends at the next run of exactly n; one space is
    # stripped from each end when both ends have one, so text that starts or ends with a
    # backtick, or is only spaces, is padded with a space on each side.
    from pipeline.report.publish import code_span

    assert code_span("plain") == "`plain`"
    assert code_span("a``b`c") == "```a``b`c```"
    assert code_span("`x") == "`` `x ``" and code_span("x`") == "`` x` ``"
    assert code_span(" ") == "`   `"
    assert code_span("two\nlines") == "`two lines`"


def test_a_diagnostic_in_markdown_is_escaped_text_or_json():
    from pipeline.report.publish import info_markdown, markdown_text

    assert info_markdown("a|b") == "a\\|b" and markdown_text("two\nlines") == "two lines"
    assert info_markdown(["é", "x`y"]) == '``["é", "x`y"]``'  # as written (not \\u00e9), in a span it cannot close
    assert (info_markdown(0.5), info_markdown(None), info_markdown(True)) == ("0.5", "null", "true")


def test_a_leaderboard_is_a_title_then_per_method_its_diagnostics_and_table_each_block_apart():
    # A Markdown block (heading, list, table) ends at a blank line: each is followed by one.
    import dataclasses

    import numpy as np

    from pipeline.methods.ratings import Ratings
    from pipeline.report.publish import leaderboard_markdown

    rated = Ratings.from_scores(np.array([0, 1, 2]), np.array([2.0, 0.5, 0.5]), info={"best_agent": 1, "note": "a*b", "sizes": [1, 2]})
    markdown = leaderboard_markdown([dataclasses.replace(rated, name="elo", params={"k": 4})], ["ann", "bob", "c|d"], "T")
    assert markdown == ("# T\n\n## elo:k=4\n\n- best_agent: bob\n- note: a\\*b\n- sizes: `[1, 2]`\n\n"
                        "| rank | agent | score |\n|---|---|---|\n| 1 | ann | 2 |\n| 2 | bob | 0.5 |\n| 2 | c\\|d | 0.5 |\n")


def test_pairwise_and_agents_tables_of_sparse_or_dense_counts_and_of_no_battle():
    # a beats b twice and ties once; b beats c once; c and d only tie: a pair that met only in ties is listed too.
    # Counts beyond DENSE_MAX_AGENTS agents are sparse: the same table; no battle at all still gives typed columns.
    import pyarrow as pa

    from pipeline.report.publish import agents_table, pairwise_table
    from pipeline.stats.in_memory import statistics_of_records

    rows = [{"model_a": a, "model_b": b, "winner": w} for a, b, w in
            (("b", "a", "model_b"), ("a", "b", "model_a"), ("a", "b", "tie"), ("c", "b", "model_b"), ("c", "d", "tie"))]
    for dense in (True, False):
        stats, names = statistics_of_records(rows, "battles", ["pairwise"], dense=dense)
        assert stats.pairwise.is_sparse != dense
        assert pairwise_table(stats.pairwise, names).to_pylist() == [
            {"agent": "a", "opponent": "b", "wins": 2.0, "losses": 0.0, "ties": 1.0, "win_rate": 2.5 / 3},
            {"agent": "b", "opponent": "a", "wins": 0.0, "losses": 2.0, "ties": 1.0, "win_rate": 0.5 / 3},
            {"agent": "b", "opponent": "c", "wins": 1.0, "losses": 0.0, "ties": 0.0, "win_rate": 1.0},
            {"agent": "c", "opponent": "b", "wins": 0.0, "losses": 1.0, "ties": 0.0, "win_rate": 0.0},
            {"agent": "c", "opponent": "d", "wins": 0.0, "losses": 0.0, "ties": 1.0, "win_rate": 0.5},
            {"agent": "d", "opponent": "c", "wins": 0.0, "losses": 0.0, "ties": 1.0, "win_rate": 0.5}], dense
    nobody, _ = statistics_of_records([], "battles", ["pairwise"])
    assert agents_table(nobody, []).schema == pa.schema([("agent", pa.string()), ("records", pa.int64())])
    assert pairwise_table(nobody.pairwise, []).schema.types == [pa.string()] * 2 + [pa.float64()] * 4


def test_the_code_version_is_the_package_version_and_its_commit_or_unknown(tmp_path, monkeypatch):
    # run.json's "version": the package's version and the commit of the checkout holding it; outside any git
    # checkout (an installed copy), "unknown" in its place
    import subprocess
    from pathlib import Path

    import pipeline
    from pipeline.report.publish import code_version

    folder = Path(pipeline.__file__).parent
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True, check=True).stdout.strip()
    version, _, commit = code_version().partition("+")
    assert version == pipeline.__version__ and 7 <= len(commit) < len(head) and head.startswith(commit)
    (tmp_path / "pipeline").mkdir()
    monkeypatch.setattr(pipeline, "__file__", str(tmp_path / "pipeline" / "__init__.py"))
    assert code_version() == f"{pipeline.__version__}+unknown"


def test_run_json_says_inputs_parameters_version_timings_and_row_accounting(tmp_path):
    # RunRecord.to_json: every key run.json promises, each input without its partition list (their count instead),
    # the rows summed over the inputs, timings to the millisecond, outputs sorted; categories only when there are some
    import dataclasses
    import platform

    from pipeline.report.publish import RunRecord, code_version

    first, second = tmp_path / "one.csv", tmp_path / "two.csv"
    first.write_text("model_a,model_b,winner,timestamp\na,b,model_a,2024-01-01T10:00:00Z\nb,c,tie,2024-01-02T10:00:00Z\n")
    second.write_text("model_a,model_b,winner\na,c,model_b\na,a,model_a\n")  # a model against itself: quarantined
    reports = Store(tmp_path / "store").ingest([first, second], "battles")
    run = RunRecord("battles", ["copeland"], "the store", reports, parameters={"k": 4}, timings={"reduce": 0.12345},
                    diagnostics={"copeland": {"x": 1}}, outputs=["b.md", "a.md"], title="T", errors={"elo": "why"})
    record = run.to_json()
    assert record == {"title": "T", "version": code_version(), "python": platform.python_version(), "kind": "battles",
                      "methods": ["copeland"], "store": "the store", "parameters": {"k": 4},
                      "inputs": [{k: v for k, v in dataclasses.asdict(r).items() if k != "partitions"} | {"partitions": len(r.partitions)}
                                 for r in reports],
                      "rows": {"rows_in": 4, "rows_accepted": 3, "rows_quarantined": 1}, "timings_s": {"reduce": 0.123},
                      "diagnostics": {"copeland": {"x": 1}}, "errors": {"elo": "why"}, "outputs": ["a.md", "b.md"]}
    assert [i["partitions"] for i in record["inputs"]] == [2, 1]  # the first file's rows fall on two days
    assert dataclasses.replace(run, categories={"code": {}}).to_json()["categories"] == {"code": {}}


def test_publish_writes_each_output_and_lists_them_in_run_json(tmp_path):
    # publish() without a board: ratings as Parquet and as JSON (one field a line, for diffs), the leaderboard, the
    # statistics' tables, each method table in Parquet and Markdown (agents and judges named), and run.json listing them
    # all, itself included
    import dataclasses

    import numpy as np
    import pyarrow as pa

    from pipeline.methods.ratings import Ratings
    from pipeline.report.publish import RunRecord, publish, ratings_records
    from pipeline.stats.in_memory import statistics_of_records

    rows = [{"model_a": "a", "model_b": "b", "winner": "model_a"}, {"model_a": "b", "model_b": "c", "winner": "tie"}]
    stats, names = statistics_of_records(rows, "battles", ["pairwise"])
    rated = dataclasses.replace(Ratings.from_scores(stats.agents, np.array([1.0, 0.5, 0.0]), info={"best_agent": 0},
                                                    tables={"votes": pa.table({"agent": [0, 1], "judge": [1, -1]})}), name="elo")
    run = RunRecord("battles", ["elo"], "store", [])
    written = publish(tmp_path / "out", [rated], names, run, "T", judges=["j0", "j1"], stats=stats)
    files = ["agents.parquet", "elo.votes.md", "elo.votes.parquet", "leaderboard.md", "pairwise.parquet", "ratings.json",
             "ratings.parquet", "run.json"]
    assert written == [tmp_path / "out" / f for f in files] and sorted(p.name for p in (tmp_path / "out").iterdir()) == files
    assert (tmp_path / "out" / "ratings.json").read_text() == json.dumps(ratings_records([rated], names), indent=1) + "\n"
    assert pq.read_table(tmp_path / "out" / "elo.votes.parquet").to_pydict() == {"agent": ["a", "b"], "judge": ["j1", "(none)"]}
    record = json.loads((tmp_path / "out" / "run.json").read_text())
    assert record["outputs"] == files and record["title"] == "T" and record["diagnostics"] == {rated.spec: {"best_agent": "a"}}


def test_a_leaderboard_says_how_it_is_ordered_and_lists_provisional_agents_apart_each_table_cut_at_top():
    import numpy as np

    from pipeline.methods.ratings import Ratings
    from pipeline.methods.standing import PROVISIONAL
    from pipeline.report.publish import leaderboard_markdown, standing_sentence

    info = {"ordered_by": "score", "min_records": 10, "provisional_count": 3}
    flags = np.array([False, True, False, True, False, True])
    rated = Ratings.from_scores(np.arange(6), np.array([6.0, 5, 4, 3, 2, 1]), extras={PROVISIONAL: flags}, info=info)
    names = ["a", "b", "c", "d", "e", "f"]
    markdown = leaderboard_markdown([rated], names, "T", top=2)
    head = "| rank | agent | score |\n|---|---|---|\n"
    assert markdown.endswith(f"{standing_sentence(info)}\n\n"
                             f"{head}| 1 | a | 6 |\n| 3 | c | 4 |\n\n(1 more in ratings.parquet)\n\n"
                             f"### Provisional agents (3)\n\n{head}| 2 | b | 5 |\n| 4 | d | 3 |\n\n(1 more in ratings.parquet)\n")
    whole = leaderboard_markdown([rated], names, "T")
    assert "more in ratings.parquet" not in whole and "| 6 | f | 1 |" in whole and "| 5 | e | 2 |" in whole
    nobody_apart = Ratings.from_scores(np.arange(2), np.array([2.0, 1]), extras={PROVISIONAL: np.array([False, False])},
                                       info=info | {"provisional_count": 0})
    assert "Provisional" not in leaderboard_markdown([nobody_apart, rated], names, "T", top=1).split("## ")[1]
