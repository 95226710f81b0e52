"""The HTML report: what each page holds, against what run.json promises; escaping; future columns and keys."""

from __future__ import annotations

import base64
import html as html_text
import json
import re
import shutil
from importlib import resources

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from pipeline.backtest.evaluate import RESULT_SCHEMA
from pipeline.backtest.summary import summarise, write_backtest
from pipeline.board import Board, run_board
from pipeline.cli import app
from pipeline.methods.standing import PROVISIONAL
from pipeline.report import RunRecord, write_report
from pipeline.report.diagnostics import Context, Note, describe
from pipeline.report.folders import BoardFolder, read_run
from pipeline.report.history import SCHEMA as HISTORY_SCHEMA
from pipeline.report.site import (CARD_AGENTS, anchor, backtest_card, board_card, image, leader, leaderboards, method_stems, render,
                                  run_label, split_provisional, sub_boards)
from pipeline.store import Store

from tests.report.conftest import HOSTILE_AGENTS, HOSTILE_CATEGORIES, HOSTILE_FILE, HOSTILE_TITLE, RUNS
from tests.report.pages import Page, injected


def expected_counts(run: dict, outputs: set[str]) -> dict[str, int]:
    """What a board page must show, from its run.json: a table and a ratings plot per method, a
    head-to-head map when pairwise.parquet was published, agreement with two or more methods."""
    methods = len(run["methods"])
    return {"leaderboard": methods, "ratings-plot": methods, "heatmap": int("pairwise.parquet" in outputs),
            "agreement": int(methods > 1)}


def test_every_board_page_shows_what_run_json_promises(demo_nightly):
    latest = demo_nightly / "latest"
    index = Page.read(latest / "index.html")
    boards = sorted(p.parent.name for p in latest.glob("*/run.json"))
    assert sorted(link.split("/")[0] for link in index.links) == boards
    for board in boards:
        run = json.loads((latest / board / "run.json").read_text())
        page = Page.read(latest / board / "index.html")
        want = expected_counts(run, set(run["outputs"]))
        assert len(page.tables_of("leaderboard")) == want["leaderboard"], board
        for css in ("ratings-plot", "heatmap", "agreement"):
            assert len(page.images_of(css)) == want[css], (board, css)
        assert all(i["src"].startswith("data:image/svg+xml;base64,") and i["alt"] for i in page.images)
        assert len(page.tables_of("inputs")) == 1 and run["inputs"][0]["sha256"][:12] in page.all_text
        assert not [link for link in page.links if link.startswith(("http:", "https:", "//"))]  # nothing fetched at view time
        for table in page.tables_of("leaderboard"):
            ranks = [int(r[table.column("rank")][0]) for r in table.rows]
            assert ranks == sorted(ranks) and ranks[0] == 1


def test_intervals_records_and_method_tables(demo_nightly):
    page = Page.read(demo_nightly / "latest" / "llmfao" / "index.html")
    melo = next(t for t in page.tables_of("leaderboard") if "95% interval" in t.header)
    assert {"rank (UB)", "records"} <= set(melo.header)
    agents = pl.read_parquet(demo_nightly / "latest" / "llmfao" / "agents.parquet")
    gpt4 = melo.row_of("GPT 4")
    assert int(gpt4["records"][0].replace(",", "")) == agents.filter(pl.col("agent") == "GPT 4").get_column("records").item()
    low, high = (float(x) for x in gpt4["95% interval"][0].split(" \u2013 "))
    assert low < float(gpt4["score"][0]) < high
    text = page.all_text
    assert "flagged" in text and "Flagged annotators" in text  # am-elo's annotators, in words
    assert any("judge" in t.header and "ability" in t.header for t in page.tables)  # and its table


def test_diagnostics_of_every_sample_method_are_in_words(demo_nightly):
    """Each info key the sample boards publish has a sentence; nothing falls through to key: value."""
    for board in read_run(demo_nightly / "latest"):
        for spec, info in board.run["diagnostics"].items():
            rows = board.ratings.filter(pl.col("method") == spec)
            assert describe(info, Context({}, rows, board.tables)).other == [], (board.name, spec)


def test_unknown_keys_future_columns_categories_refusals_and_failures(demo_nightly, tmp_path):
    board = tmp_path / "board"
    shutil.copytree(demo_nightly / "latest" / "f1", board)
    shutil.copytree(demo_nightly / "latest" / "f1", board / "category=wet races")
    ratings = pl.read_parquet(board / "ratings.parquet")
    n = ratings.height
    ratings.with_columns(rank_low=pl.col("rank"), rank_high=pl.col("rank") + 2, tier=pl.col("rank") // 3 + 1,
                         win_share=pl.lit(0.25), speed_low=pl.lit(1.0), speed_high=pl.lit(2.0)).write_parquet(board / "ratings.parquet")
    run = json.loads((board / "run.json").read_text())
    spec = next(iter(run["diagnostics"]))
    run["diagnostics"][spec]["a_key_from_the_future"] = {"answer": 42}
    run["refused"] = [{"file": "broken.csv", "reason": "not UTF-8 (byte 0xff at offset 3)"}]
    run["failed_methods"] = {"kemeny": "kemeny stops above 5,000 agents (52,958)"}
    run["something_new"] = "kept"
    (board / "run.json").write_text(json.dumps(run))
    page = Page.read(write_report(board))
    table = page.tables_of("leaderboard")[0]
    assert {"rank interval", "tier", "win share", "speed interval"} <= set(table.header) and len(table.rows) == n // 4
    text = page.all_text
    assert "a_key_from_the_future" in text and '{"answer": 42}' in text
    assert "broken.csv" in text and "not UTF-8" in text
    assert "Method kemeny failed: kemeny stops above 5,000 agents (52,958)" in text
    assert "something_new" in text and "kept" in text
    assert "category=wet%20races/index.html" in page.links  # a folder name is quoted in a link
    assert Page.read(board / "category=wet races" / "index.html").tables_of("leaderboard")


def test_names_are_text_never_markup(tmp_path):
    hostile = ["<script>alert(1)</script>", '"><img src=x onerror=alert(2)>', "Ω & co"]
    pairs = [(a, b) for a in hostile for b in hostile if a != b] * 2
    source = tmp_path / "battles.csv"
    pl.DataFrame({"model_a": [a for a, _ in pairs], "model_b": [b for _, b in pairs], "winner": ["model_a"] * len(pairs)}).write_csv(source)
    out = tmp_path / "out"
    run_board(Board("hostile", "battles", (str(source),), ("copeland", "borda"), min_records=0), Store(tmp_path / "store"), out)
    html = (out / "index.html").read_text()
    assert "<script>alert(1)" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "Ω &amp; co" in html
    assert html.count("<script>") == 1  # the page's own
    page = Page(html)
    assert set(r[page.tables_of("leaderboard")[0].column("agent")][0] for r in page.tables_of("leaderboard")[0].rows) == set(hostile)


def test_every_page_shows_hostile_names_as_text(hostile_nightly):
    # Every page the report writes (the run's index, the board with its history, each category's
    # board, the backtest) shows the names as text and holds none of them as markup.
    latest = (hostile_nightly / "latest").resolve()
    pages = {str(path.parent.relative_to(latest)): path.read_text(encoding="utf-8") for path in latest.rglob("index.html")}
    categories = sorted(p for p in pages if p.startswith("hostile/category="))
    assert sorted(pages) == sorted([".", "hostile", "backtest-0", *categories]) and len(categories) == len(HOSTILE_CATEGORIES)
    assert 'id="history"' in pages["hostile"]  # the second run: scores over time, and rank changes on the index
    for where, html in pages.items():
        assert injected(html) == [], where
    shown = {where: Page(html).all_text for where, html in pages.items()}
    assert all(HOSTILE_FILE in text for where, text in shown.items() if where != "."), "the inputs table names the log"
    assert all(HOSTILE_TITLE in shown[where] for where in (".", "hostile"))
    assert all(agent in shown[where] for agent in HOSTILE_AGENTS for where in ["hostile", *categories])
    assert sum(agent in shown["."] for agent in HOSTILE_AGENTS) == len(HOSTILE_AGENTS)  # the card's top agents
    assert all(category in shown["hostile"] for category in HOSTILE_CATEGORIES)


def test_same_run_same_bytes(demo_nightly, tmp_path):
    copy = tmp_path / "runs" / RUNS[1]
    shutil.copytree(demo_nightly / "runs" / RUNS[1], copy)
    shutil.copy(demo_nightly / "history.parquet", tmp_path / "history.parquet")
    write_report(copy)  # the history beside runs/ and the run id from the folder's name, as `vase report` finds them
    for page in sorted(copy.rglob("index.html")):
        original = demo_nightly / "runs" / RUNS[1] / page.relative_to(copy)
        assert page.read_bytes() == original.read_bytes(), page


def test_quarantine_reasons_and_the_report_command(tmp_path):
    source = tmp_path / "battles.csv"
    source.write_text("model_a,model_b,winner\n" + "a,b,model_a\nb,c,model_b\n" * 5 + "a,a,model_a\nc,d,nobody\nc,d,nobody\n")
    out = tmp_path / "out"
    run_board(Board("q", "battles", (str(source),), ("copeland",)), Store(tmp_path / "store"), out)
    (out / "index.html").unlink()
    result = CliRunner().invoke(app, ["report", str(out)], terminal_width=60)
    assert result.exit_code == 0 and result.output.strip() == f"report: {out / 'index.html'}"
    page = Page.read(out / "index.html")
    (reasons,) = page.tables_of("quarantine")
    assert sum(int(r[0][0]) for r in reasons.rows) == 3 and len(reasons.rows) == 2
    assert not page.images_of("agreement")  # one method: nothing to compare
    assert CliRunner().invoke(app, ["report", str(tmp_path / "nothing")]).exit_code != 0


def test_duplicates_are_one_quarantine_reason_whatever_line_they_repeat(tmp_path):
    # Each duplicate's reason names the line it repeats: F1's 91 duplicate drivers were "Top 8 of 85
    # reasons" of one or two rows each, LiveBench's 7,372 repeated models thousands of reasons.
    first, again = tmp_path / "first.csv", tmp_path / "again.csv"
    first.write_text("battle_id,model_a,model_b,winner\n" + "".join(f"b{i},a,b,model_a\n" for i in range(4)))
    again.write_text("battle_id,model_a,model_b,winner\n" + "".join(f"b{i},a,b,model_a\nb{i},b,a,model_b\n" for i in range(4, 8))
                     + "b0,a,b,model_a\n")
    out = tmp_path / "out"
    run_board(Board("q", "battles", (str(first), str(again)), ("copeland",)), Store(tmp_path / "store"), out)
    (reasons,) = Page.read(out / "index.html").tables_of("quarantine")
    assert [[cell[0] for cell in row] for row in reasons.rows] == [["5", "battle_id", "duplicate battle_id", "again.csv, line 3"]]


def test_a_board_whose_outputs_cannot_be_read_is_named_and_the_others_shown(demo_nightly, tmp_path):
    copy = tmp_path / "runs" / RUNS[1]
    shutil.copytree(demo_nightly / "runs" / RUNS[1], copy)
    boards = sorted(p.parent for p in copy.glob("*/ratings.parquet"))
    broken = boards[0] / "ratings.parquet"
    broken.write_bytes(broken.read_bytes()[:300])  # cut short
    (copy / "failed_boards.json").write_text("{not json")  # and the list of failed boards too
    write_report(copy)
    index = (copy / "index.html").read_text()
    assert f"The outputs of {boards[0].name} are not shown: ratings.parquet cannot be read" in index
    assert index.count('class="card"') == len(boards) - 1
    alone = CliRunner().invoke(app, ["report", str(boards[0])], terminal_width=200)
    assert alone.exit_code == 2 and "ratings.parquet cannot be read" in alone.output


def test_backtest_report(tmp_path):
    rng = np.random.default_rng(0)
    base = 8 + rng.normal(0, 0.3, 6)
    errors = {"elo": base, "copeland": base - 0.5 + rng.normal(0, 0.05, 6), "borda": base + rng.normal(0, 0.4, 6)}
    results = pa.Table.from_pylist(
        [{"split": s, "label": "", "method": m, "seed": 0, "train_units": 9, "test_units": 1, "rated_agents": 3, "test_pairs": 21,
          "unseen_pairs": 0, "kendall": float(e), "kendall_normalised": float(e) / 21, "log_loss": None, "brier": None, "auc": None}
         for m, values in errors.items() for s, e in enumerate(values)], schema=RESULT_SCHEMA)
    record = RunRecord("games", list(errors), "store", [], parameters={"reference": "elo"}, title="backtest: games")
    write_backtest(tmp_path, results, summarise(results, list(errors), "elo"), record, "backtest: games", "elo")
    page = Page.read(write_report(tmp_path))
    assert [len(page.images_of(css)) for css in ("errors", "differences", "scatter")] == [1, 1, 1]
    summary = page.tables[0]
    assert [r[summary.column("method")][0] for r in summary.rows] == list(errors)
    assert dict((r[summary.column("method")][0], r[summary.column("verdict")][0]) for r in summary.rows)["copeland"] == "better"


def test_anchors_are_lowercase_slugs_made_unique_by_a_counter():
    taken: set[str] = set()
    assert [anchor(text, taken) for text in ("Elo (shuffles=100)", "-ELO · wet-", "elo", "elo", "!!!", "?")] == \
        ["elo-shuffles-100", "elo-wet", "elo", "elo-2", "method", "method-2"]
    assert taken == {"elo-shuffles-100", "elo-wet", "elo", "elo-2", "method", "method-2"}
    assert anchor("elo", taken) == "elo-3"


def test_a_methods_second_spec_has_the_stem_its_tables_were_published_under():
    specs = ["elo", "m-elo:bootstrap=100", "elo:k=8", "elo:k=16", "borda:normalise=true"]
    assert method_stems(specs) == {"elo": "elo", "m-elo:bootstrap=100": "m-elo", "elo:k=8": "elo-2", "elo:k=16": "elo-3",
                                   "borda:normalise=true": "borda"}


def test_provisional_agents_are_those_flagged_and_a_table_without_the_flag_has_none():
    rows = pl.DataFrame({"agent": ["a", "b", "c"], "rank": [1, 2, 3], PROVISIONAL: [False, True, None]})
    established, provisional = split_provisional(rows)
    assert established.get_column("agent").to_list() == ["a", "c"] and provisional.get_column("agent").to_list() == ["b"]
    established, provisional = split_provisional(rows.drop(PROVISIONAL))
    assert established.equals(rows.drop(PROVISIONAL)) and provisional.height == 0 and provisional.columns == ["agent", "rank"]


def test_run_ids_read_as_utc_minutes_and_other_names_stay_as_they_are():
    assert run_label(RUNS[0]) == "2024-06-01 03:00"
    assert run_label("2024-06-02T031544.000000Z") == "2024-06-02 03:15"
    assert run_label("manual") == "manual"


def test_a_boards_leader_is_who_ranks_first_under_its_first_method(tmp_path):
    ratings = pl.DataFrame({"method": ["elo"] * 6 + ["copeland"] * 2, "agent": ["e", "d", "c", "b", "a", "f", "z", "a"],
                            "rank": [1, 1, 1, 1, 1, 2, 1, 2]})
    assert leader(BoardFolder(tmp_path, "b", {}, ratings)) == "a, b, c and 2 more"  # names() shows three
    assert leader(BoardFolder(tmp_path, "b", {}, ratings.filter(pl.col("method") == "copeland"))) == "z"
    assert leader(BoardFolder(tmp_path, "b", {}, pl.DataFrame({"agent": ["a"]}))) == ""  # every method refused


def test_sub_boards_are_named_by_their_category_linked_by_their_folder_and_a_failed_one_is_a_warning(tmp_path):
    ratings = pl.DataFrame({"method": ["elo"] * 2, "agent": ["b", "a"], "rank": [1, 2]})
    wet = BoardFolder(tmp_path / "category=wet races", "b/wet", {"parameters": {"category": "Wet races"}}, ratings)
    dry = BoardFolder(tmp_path / "category=dry", "b/dry", {"parameters": {}}, ratings.with_columns(rank=pl.lit(1)))
    run = {"categories": {"boards": [{"category": "Wet races"}, {"category": "snow", "failed": "no rows"}, "not a mapping"]}}
    children, failed = sub_boards(BoardFolder(tmp_path, "b", run, ratings, children=[wet, dry]))
    assert children == [("Wet races", "category=wet%20races/index.html", "b"), ("dry", "category=dry/index.html", "a, b")]
    assert failed == [Note("Category 'snow' failed and was not published: no rows", "warn")]


def test_an_image_is_its_svg_inline_as_a_base64_data_uri():
    svg = '<svg xmlns="http://www.w3.org/2000/svg"><text>Ω</text></svg>'
    shown = image(svg, "scores", "a caption", "ratings-plot")
    prefix = "data:image/svg+xml;base64,"
    assert shown.uri.startswith(prefix) and base64.b64decode(shown.uri.removeprefix(prefix)).decode() == svg
    assert (shown.alt, shown.caption, shown.css) == ("scores", "a caption", "ratings-plot")


def test_pages_inline_the_packages_style_sheet_and_script_as_they_are():
    html = render("index.html.j2", cards=[], failed=[], up=None, previous=None, title="a run")
    for asset in ("report.css", "report.js"):
        text = resources.files("pipeline.report").joinpath("templates", asset).read_text(encoding="utf-8")
        assert text.strip() and text in html, asset  # unescaped: `>` in a selector stays `>`


def test_a_boards_category_pages_link_up_to_it_and_every_page_names_the_run(tmp_path):
    pairs = [("a", "b"), ("b", "c"), ("a", "c")] * 4
    source = tmp_path / "battles.csv"
    pl.DataFrame({"model_a": [a for a, _ in pairs], "model_b": [b for _, b in pairs], "winner": ["model_a"] * len(pairs),
                  "category": ["x", "y"] * 6}).write_csv(source)
    out = tmp_path / "out"
    run_board(Board("c", "battles", (str(source),), ("copeland",), by="category", min_records=0), Store(tmp_path / "store"), out)
    write_report(out, run_id=RUNS[0])
    pages = {str(p.parent.relative_to(out)): p.read_text(encoding="utf-8") for p in out.rglob("index.html")}
    assert sorted(pages) == [".", "category=x", "category=y"]
    for where, html in pages.items():
        assert f"{run_label(RUNS[0])} UTC" in Page(html).all_text, where
        assert re.findall(r'<a class="up" href="([^"]*)"', html) == ([] if where == "." else ["../index.html"]), where


def test_a_run_index_has_a_card_per_board_with_its_first_methods_top_five_and_changes_and_one_per_backtest(tmp_path):
    agents = [f"m{i}" for i in range(7)]  # m0 beats every other, m1 every other but m0, ...: ranks 1 to 7
    pairs = [(agents[i], agents[j]) for i in range(len(agents)) for j in range(i + 1, len(agents))] * 2
    source = tmp_path / "battles.csv"
    pl.DataFrame({"model_a": [a for a, _ in pairs], "model_b": [b for _, b in pairs], "winner": ["model_a"] * len(pairs)}).write_csv(source)
    run = tmp_path / "runs" / RUNS[1]
    run_board(Board("arena", "battles", (str(source),), ("borda:normalise=true", "copeland"), title="The arena", min_records=0),
              Store(tmp_path / "store"), run / "arena")
    errors = {"elo": [0.3, 0.5], "copeland": [0.2, 0.2], "borda": [0.9, 0.7]}
    results = pa.Table.from_pylist(
        [{"split": s, "label": "", "method": m, "seed": 0, "train_units": 9, "test_units": 1, "rated_agents": 3, "test_pairs": 21,
          "unseen_pairs": 0, "kendall": e, "kendall_normalised": e / 21, "log_loss": None, "brier": None, "auc": None}
         for m, values in errors.items() for s, e in enumerate(values)], schema=RESULT_SCHEMA)
    record = RunRecord("games", list(errors), "store", [], parameters={"reference": "elo"}, title="backtest: games")
    write_backtest(run / "bt", results, summarise(results, list(errors), "elo"), record, "backtest: games", "elo")
    before = {"m0": 3, "m1": 1, "m2": 2, "m4": 5}  # m3 was not ranked in the previous run
    history = pl.DataFrame([{"run_id": RUNS[0], "board": "arena", "method": "borda:normalise=true", "agent": a, "rank": r,
                             "score": 0.0} for a, r in before.items()], schema_overrides=HISTORY_SCHEMA)
    history = history.select([pl.col(c) if c in history.columns else pl.lit(None, t).alias(c) for c, t in HISTORY_SCHEMA.items()])
    folders = {f.name: f for f in read_run(run)}

    card = board_card(folders["arena"], history, RUNS[1])
    ratings = folders["arena"].ratings.filter(pl.col("method") == "borda:normalise=true").sort("rank")
    assert (card.title, card.name, card.link, card.kind, card.method, card.alerts) == (
        "The arena", "arena", "arena/index.html", "battles", "borda (normalise=True)", [])
    assert card.facts == [("agents", "7"), ("methods", "2"), ("rows", f"{len(pairs):,}")]
    assert [(rank, agent) for rank, agent, _, _ in card.top] == [(str(i + 1), f"m{i}") for i in range(CARD_AGENTS)]
    assert [float(score) for _, _, score, _ in card.top] == pytest.approx(ratings.get_column("score").to_list()[:CARD_AGENTS], abs=1e-3)
    assert [change.text for _, _, _, change in card.top] == ["\u25b2 2", "\u25bc 1", "\u25bc 1", "new", "="]
    assert card.top[0][3].title == f"rank 3 in run {RUNS[0]}"
    without_history = board_card(folders["arena"], history.clear(), RUNS[1])
    assert [change for *_, change in without_history.top] == [None] * CARD_AGENTS

    bt = backtest_card(folders["bt"])
    means = {m: sum(v) / len(v) for m, v in errors.items()}
    best = sorted(means, key=means.get)
    assert (bt.title, bt.name, bt.link, bt.kind, bt.method, bt.facts, bt.alerts) == (
        "backtest: games", "bt", "bt/index.html", "backtest", "mean error", [("methods", "3")], [])
    assert bt.top == [(str(i + 1), m, f"{means[m]:.4g}", None) for i, m in enumerate(best)]

    # The run folder's report: its id and the history beside it (<out>/history.parquet) found from the path alone
    history.write_parquet(tmp_path / "history.parquet")
    (run / "failed_boards.json").write_text(json.dumps({"gone": "no rows"}))
    (run / "cut").mkdir()
    (run / "cut" / "ratings.parquet").write_bytes(b"PAR1 cut short")
    index_path = write_report(run)
    assert index_path == run / "index.html"
    index = Page.read(index_path)
    assert re.search(r"<title>([^<]*)</title>", index_path.read_text(encoding="utf-8")).group(1) == f"vase: run of {run_label(RUNS[1])} UTC"
    assert sorted(index.links) == ["arena/index.html", "bt/index.html"]
    assert f"2 boards; changes are against the run of {run_label(RUNS[0])} UTC." in index.all_text
    arena_card, bt_card = index.tables_of("mini")
    assert [[text for text, _ in row] for row in arena_card.rows] == [
        [rank, agent, score, change.text] for rank, agent, score, change in card.top]  # the changes from the history file
    assert [[text for text, _ in row] for row in bt_card.rows] == [[rank, method, mean] for rank, method, mean, _ in bt.top]
    warnings = re.findall(r'<li class="warn">([^<]*)</li>', index_path.read_text(encoding="utf-8"))
    assert warnings == ["Board gone failed and was not published: no rows",
                        "The outputs of cut are not shown: ratings.parquet cannot be read (cut short, or not Parquet)"]
    for name in ("arena", "bt"):
        html = (run / name / "index.html").read_text(encoding="utf-8")
        assert re.findall(r'<a class="up" href="([^"]*)"', html) == ["../index.html"], name
    assert f"{run_label(RUNS[1])} UTC" in Page.read(run / "arena" / "index.html").all_text
    # a history given elsewhere is read in place of the one beside
    (tmp_path / "history.parquet").rename(tmp_path / "kept.parquet")
    changes = [t.rows[0][3][0] for t in Page.read(write_report(run, history=tmp_path / "kept.parquet")).tables_of("mini")[:1]]
    assert changes == ["\u25b2 2"]


def test_a_run_index_warns_of_a_board_whose_page_cannot_be_built_and_cards_a_board_without_methods(tmp_path, caplog):
    run = tmp_path / "runs" / RUNS[1]
    for name in ("broken", "empty"):
        (run / name).mkdir(parents=True)
    pl.DataFrame(schema={"method": pl.String, "agent": pl.String, "rank": pl.Int64, "score": pl.Float64}).write_parquet(
        run / "empty" / "ratings.parquet")
    pl.DataFrame({"method": ["copeland"], "agent": ["a"], "score": [1.0]}).write_parquet(run / "broken" / "ratings.parquet")  # no rank
    empty = next(f for f in read_run(run) if f.name == "empty")
    card = board_card(empty, pl.DataFrame(schema=HISTORY_SCHEMA), RUNS[1])
    assert (card.title, card.link, card.kind, card.facts, card.top, card.method) == (
        "empty", "empty/index.html", "", [("agents", "0"), ("methods", "0"), ("rows", "0")], [], "")

    index_path = write_report(run)
    html = index_path.read_text(encoding="utf-8")
    assert Page(html).links == ["empty/index.html"]
    [warning] = [html_text.unescape(w) for w in re.findall(r'<li class="warn">([^<]*)</li>', html)]
    assert warning.startswith("The report of broken could not be built: ColumnNotFoundError: ") and '"rank"' in warning
    assert f"report of {run / 'broken'} failed" in caplog.messages  # the traceback goes to the log

    plain = tmp_path / "plain"  # the same boards in a folder not named as a nightly run: no run id, no history
    shutil.copytree(run, plain)
    html = write_report(plain).read_text(encoding="utf-8")
    assert re.search(r"<title>([^<]*)</title>", html).group(1) == "vase: plain" and "changes are against" not in html
    single = tmp_path / "single"  # a run of one board is still a run: an index with its card
    shutil.copytree(run / "empty", single / "empty")
    assert write_report(single) == single / "index.html" and Page.read(single / "index.html").links == ["empty/index.html"]


def test_leaderboards_are_one_per_method_and_one_per_category_when_ratings_carry_categories(tmp_path):
    rows = [("borda", None, "b", 2), ("borda", None, "a", 1), ("copeland", "math", "z", 1), ("copeland", "code", "y", 2),
            ("copeland", "code", "x", 1), ("copeland", None, "w", 1), ("elo", None, "v", 1)]
    ratings = pl.DataFrame(rows, schema={"method": pl.String, "category": pl.String, "agent": pl.String, "rank": pl.Int64},
                           orient="row")
    boards = leaderboards(BoardFolder(tmp_path, "b", {}, ratings))
    assert [(key, label, part.get_column("agent").to_list()) for key, label, part in boards] == [
        ("borda", "borda", ["a", "b"]),  # no category: the method's rows, by rank
        ("copeland|code", "copeland \u00b7 code", ["x", "y"]), ("copeland|math", "copeland \u00b7 math", ["z"]),  # sorted
        ("elo", "elo", ["v"])]
