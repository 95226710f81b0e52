"""Per-category boards (`Board.by`, `rate_categories`): each category's board is the board of a
store holding only that category's rows, hostile category names stay inside the output folder,
one category that cannot be rated never stops the others, and workers change no byte."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

from pipeline import board as boards
from pipeline.board import Board, load_boards, run_board
from pipeline.paths import CATEGORY_PREFIX, SLUG
from pipeline.runtime import dask_client
from pipeline.store import Store
from tests.conftest import SAMPLES

PUBLISHED = ("ratings.parquet", "ratings.json", "pairwise.parquet", "agents.parquet")
HOSTILE = ["coding", "Coding", "c\u043eding", "../../escaped", "\u65e5\u672c\u8a9e", "x" * 300, "a..b", "coding-0123456789"]
METHODS = ("elo", "copeland", "m-elo:bootstrap=10")


def battle_log(path: Path, categories: list[str | None], battles: int = 1200, seed: int = 7) -> list[dict]:
    """A battles CSV whose rows are spread over `categories` (None: no category) and six models
    of distinct strengths, so that every category's methods have something to rate."""
    rng = np.random.default_rng(seed)
    strength = np.linspace(-1, 1, 6)
    rows = []
    for i in range(battles):
        a, b = rng.choice(6, 2, replace=False)
        p = 1 / (1 + np.exp(strength[b] - strength[a]))
        category = categories[i % len(categories)]
        rows.append({"battle_id": f"b{i}", "model_a": f"model-{a}", "model_b": f"model-{b}",
                     "winner": "model_a" if rng.random() < p else "model_b", "category": category or "",
                     "timestamp": f"2024-0{1 + i % 3}-{1 + i % 27:02d}T{i % 24:02d}:00:00Z"})
    write_csv(path, rows)
    return rows


def write_csv(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def published(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in PUBLISHED if (folder / name).exists()}


def rate_alone(tmp_path: Path, kind: str, source: Path, methods=METHODS) -> dict[str, bytes]:
    out = tmp_path / f"alone-{source.stem}"
    run_board(Board("alone", kind, (str(source),), methods), Store(tmp_path / f"store-{source.stem}"), out)
    return published(out)


def test_each_category_board_is_the_board_of_its_rows_alone_with_hostile_names_inside_out(tmp_path):
    rows = battle_log(tmp_path / "log" / "battles.csv", [*HOSTILE, None])
    out = tmp_path / "out"
    result = run_board(Board("arena", "battles", (str(tmp_path / "log"),), METHODS, by="category"), Store(tmp_path / "store"), out)
    record = json.loads((out / "run.json").read_text())["categories"]
    # Empty and blank categories are no category: those rows are rated in the overall board only.
    assert record["rows_without_category"] == sum(not r["category"] for r in rows) > 0
    assert [b["category"] for b in record["boards"]] == sorted(HOSTILE)
    folders = [b["folder"] for b in record["boards"]]
    assert len(set(folders)) == len(HOSTILE)  # look-alikes, case and slug clashes all get their own folder
    for folder in folders:
        name = folder.removeprefix(CATEGORY_PREFIX)
        assert SLUG.fullmatch(name) and ".." not in name and len(folder) < 80
        assert (out / folder).resolve().parent == out.resolve()
    assert "category=coding" in folders  # a category that is a safe name keeps it
    assert not list(tmp_path.glob("escaped*"))
    assert all(not b.failed and not b.errors for b in result.categories.boards)
    for entry, category in zip(record["boards"], sorted(HOSTILE)):
        assert entry["rows"] == sum(r["category"] == category for r in rows)
        alone = tmp_path / "alone" / f"{entry['folder']}.csv"
        write_csv(alone, [r for r in rows if r["category"] == category])
        assert published(out / entry["folder"]) == rate_alone(tmp_path, "battles", alone), category
        child = json.loads((out / entry["folder"] / "run.json").read_text())
        assert child["parameters"]["category"] == category and child["title"].endswith(category)


def test_council_reviews_by_category_equal_each_category_rated_alone(tmp_path):
    lines = (SAMPLES / "council" / "reviews.jsonl").read_text(encoding="utf-8").splitlines()
    out = tmp_path / "out"
    methods = ("council-borda", "copeland")
    run_board(Board("council", "reviews", (str(SAMPLES / "council"),), methods, by="category"), Store(tmp_path / "store"), out)
    record = json.loads((out / "run.json").read_text())["categories"]
    assert [b["category"] for b in record["boards"]] == ["coding", "math", "writing"]
    for entry in record["boards"]:
        alone = tmp_path / "alone" / f"{entry['category']}.jsonl"
        alone.parent.mkdir(exist_ok=True)
        alone.write_text("\n".join(line for line in lines if json.loads(line).get("category") == entry["category"]) + "\n")
        assert published(out / entry["folder"]) == rate_alone(tmp_path, "reviews", alone, methods)


def test_score_tables_by_task_group(tmp_path):
    rng = np.random.default_rng(3)
    groups = ["coding", "math", "reasoning"]
    rows = [{"task": f"t{t}", "group": groups[t % 3], **{f"model-{m}": f"{rng.normal(m, 2):.3f}" for m in range(5)}} for t in range(30)]
    write_csv(tmp_path / "log" / "scores.csv", rows)
    out = tmp_path / "out"
    methods = ("borda", "copeland", "schulze")
    run_board(Board("bench", "scores", (str(tmp_path / "log"),), methods, by="category"), Store(tmp_path / "store"), out)
    record = json.loads((out / "run.json").read_text())["categories"]
    assert [(b["category"], b["rows"]) for b in record["boards"]] == [(g, 50) for g in groups]
    for group in groups:
        alone = tmp_path / "alone" / f"{group}.csv"
        write_csv(alone, [r for r in rows if r["group"] == group])
        assert published(out / f"category={group}") == rate_alone(tmp_path, "scores", alone, methods)


def test_a_category_that_cannot_be_rated_never_stops_the_others(tmp_path, monkeypatch):
    rows = battle_log(tmp_path / "log" / "battles.csv", ["coding", "math", "writing"], battles=600)
    # `sweep`: one model beats the other every time, so no maximum-likelihood rating exists (m-elo refuses).
    rows += [{**rows[0], "battle_id": f"s{i}", "model_a": "model-0", "model_b": "model-1", "winner": "model_a",
              "category": "sweep"} for i in range(5)]
    write_csv(tmp_path / "log" / "battles.csv", rows)
    # `math` and `writing` made to share a folder: both fail, with one line each.
    real = boards.category_folder
    monkeypatch.setattr(boards, "category_folder", lambda c: "category=shared" if c in ("math", "writing") else real(c))
    out = tmp_path / "out"
    result = run_board(Board("arena", "battles", (str(tmp_path / "log"),), ("copeland", "m-elo:bootstrap=20"), by="category"),
                       Store(tmp_path / "store"), out)
    outcome = {b.category: b for b in result.categories.boards}
    assert not outcome["coding"].failed and not outcome["coding"].errors and (out / "category=coding" / "ratings.parquet").exists()
    [(spec, message)] = outcome["sweep"].errors.items()
    assert spec.startswith("m-elo:") and "maximum-likelihood" in message
    assert json.loads((out / "category=sweep" / "ratings.json").read_text())  # copeland still published
    for name in ("math", "writing"):
        assert outcome[name].failed.startswith("UnsafePath:") and "\n" not in outcome[name].failed
    assert not (out / "category=shared").exists()
    assert (out / "ratings.parquet").exists()  # the overall board
    page = (out / "index.html").read_text()
    assert "category=coding/index.html" in page and "Category &#39;math&#39; failed" in page


def test_a_method_that_fails_in_any_way_never_stops_the_others(tmp_path, monkeypatch):
    # m-elo with covariates and Davidson ties refuses the pair when it runs (a ValueError); elo is made to fail as a bug
    # would (the council's IndexError of an empty comparison once stopped every method of its board).
    battle_log(tmp_path / "log" / "battles.csv", ["coding"], battles=200)
    real = boards.run

    def failing(spec, stats, client=None, standing=None):
        if spec.name == "elo":
            raise IndexError("index -1 is out of bounds for axis 0 with size 0\nsecond line")
        return real(spec, stats, client=client, standing=standing)

    monkeypatch.setattr(boards, "run", failing)
    out = tmp_path / "out"
    result = run_board(Board("arena", "battles", (str(tmp_path / "log"),), ("elo", "m-elo:covariates=len,ties=davidson", "copeland")),
                       Store(tmp_path / "store"), out)
    assert {spec.partition(":")[0]: message for spec, message in result.errors.items()} == {
        "elo": "elo: IndexError: index -1 is out of bounds for axis 0 with size 0",
        "m-elo": "m-elo: covariates need ties=half"}
    assert json.loads((out / "run.json").read_text())["errors"] == result.errors
    assert {r["method"] for r in json.loads((out / "ratings.json").read_text())} == {"copeland:tie_credit=0.5"}


def test_earlier_category_boards_are_removed_and_only_those(tmp_path):
    # Only the category boards the earlier run's run.json lists are its own: a `category=` folder
    # of the user's stays (all of them were deleted).
    out = tmp_path / "out"
    battle_log(tmp_path / "log" / "battles.csv", ["coding", "gone"], battles=300)
    run_board(Board("arena", "battles", (str(tmp_path / "log"),), ("copeland",), by="category"), Store(tmp_path / "s1"), out)
    (out / "category=mine").mkdir()
    (out / "category=mine" / "ratings.parquet").write_bytes(b"")
    (out / "notes").mkdir()
    battle_log(tmp_path / "log" / "battles.csv", ["coding", "math"], battles=300)
    run_board(Board("arena", "battles", (str(tmp_path / "log"),), ("copeland",), by="category"), Store(tmp_path / "s2"), out)
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["category=coding", "category=math", "category=mine", "notes"]


@pytest.mark.parametrize("kind", ["games", "ballots", "nfg"])
def test_kinds_without_a_category_column_refuse_by_category_naming_the_kind(kind):
    method = "borda" if kind != "nfg" else "nash-averaging"
    with pytest.raises(ValueError, match=rf"^board b: {kind} logs have no category column") as error:
        Board("b", kind, (), (method,), by="category")
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="expected category or a column name"):
        Board("b", "battles", (), ("borda",), by=" ")
    assert Board("b", "battles", (), ("borda",), by="release").mapping.split == "release"  # any column of the files


@pytest.mark.slow
def test_one_and_two_workers_give_the_same_category_bytes(tmp_path):
    battle_log(tmp_path / "log" / "battles.csv", ["coding", "math", None], battles=900)
    outputs = []
    for workers in (0, 2):
        out = tmp_path / f"out{workers}"
        with dask_client(None, workers) as client:
            run_board(Board("arena", "battles", (str(tmp_path / "log"),), ("elo", "copeland", "m-elo:bootstrap=20"), by="category"),
                      Store(tmp_path / f"store{workers}"), out, client)
        outputs.append({p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*.parquet"))})
    assert outputs[0] == outputs[1] and any(re.match("category=math/", k) for k in outputs[0])


def test_a_nightly_config_asks_for_categories(tmp_path):
    config = tmp_path / "nightly.yaml"
    config.write_text("boards:\n  - {name: council, kind: reviews, sources: [x], methods: [copeland], by: category}\n"
                      "  - {name: plain, kind: battles, sources: [y], methods: [copeland]}\n")
    assert [b.by for b in boards.load_boards(config)] == ["category", None]


def test_a_nightly_config_reads_one_text_as_a_list_of_one(tmp_path):
    # `sources: arena.csv` was read letter by letter: `.` named the config's own folder, so every
    # log in it was rated; `methods: borda` was the unknown methods 'b', 'o', ...
    config = tmp_path / "nightly.yaml"
    config.write_text("boards:\n  - {name: arena, kind: battles, sources: arena.csv, methods: borda}\n")
    [board] = boards.load_boards(config)
    assert board.sources == (str(tmp_path / "arena.csv"),) and [str(m) for m in board.methods] == ["borda:normalise=false"]


@pytest.mark.parametrize(("text", "message"), [
    ("boards: {name: a}", "expected `boards:`, a list of boards"),
    ("[1, 2]", "expected `boards:`, a list of boards"),
    ("boards: [arena]", "board 1: expected a mapping with name, kind, sources, methods, got 'arena'"),
    ("boards: [{name: a, kind: battles, sources: [x], method: [borda]}]", "board a: unknown key\\(s\\) method; a board has"),
    ("boards: [{name: a, kind: battles, methods: [borda]}]", "board a: missing sources"),
    ("boards: [{name: a, kind: battles, sources: [x], methods: []}]", "board a: lists no methods"),
    ("boards: [{name: a, kind: battles, sources: [1], methods: [borda]}]", "board a: sources: expected a list of texts, got \\[1\\]"),
    # An emptied config published an empty run as `latest`, hiding the last good one.
    ("", "expected `boards:`, a list of boards"),
    ("boards: []", "lists no boards"),
    ("title: x", "expected `boards:`, a list of boards"),
    # YAML's own errors were several lines naming "<unicode string>", not the file.
    ("boards:\n\t- name: a", "not valid YAML at line 2, column 1: found character '\\\\t' that cannot start any token"),
    ("boards: [a", "not valid YAML at line 2, column 1: expected ',' or '\\]'"),
])
def test_a_malformed_nightly_config_is_one_line_naming_the_file_and_board(tmp_path, text, message):
    # These raised TypeError, AttributeError or KeyError from inside the loader, or were silently dropped.
    config = tmp_path / "nightly.yaml"
    config.write_text(text + "\n")
    with pytest.raises(ValueError, match=f"^{config}: {message}") as error:
        boards.load_boards(config)
    assert "\n" not in str(error.value)


def test_a_config_that_cannot_be_read_is_one_line_naming_it(tmp_path):
    # A Latin-1 config raised UnicodeDecodeError naming no file; a folder, IsADirectoryError.
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes("boards:\n  - name: caf\u00e9\n".encode("latin-1"))
    for config, message in [(latin1, "not UTF-8 text \\(byte 21\\)"), (tmp_path, "cannot read the config: Is a directory"),
                            (tmp_path / "missing.yaml", "cannot read the config: No such file or directory")]:
        with pytest.raises(ValueError, match=f"^{config}: {message}$"):
            boards.load_boards(config)


def test_a_config_with_a_byte_order_mark_is_read(tmp_path):
    config = tmp_path / "nightly.yaml"
    config.write_bytes(b"\xef\xbb\xbfboards: [{name: a, kind: battles, sources: [x], methods: [borda]}]\n")
    assert [b.name for b in boards.load_boards(config)] == ["a"]


def test_a_board_rated_without_categories_drops_the_category_boards_of_an_earlier_run(tmp_path):
    battle_log(tmp_path / "log" / "battles.csv", ["coding"], battles=200)
    out = tmp_path / "out"
    run_board(Board("arena", "battles", (str(tmp_path / "log"),), ("copeland",), by="category"), Store(tmp_path / "s1"), out)
    assert (out / "category=coding").is_dir()
    run_board(Board("arena", "battles", (str(tmp_path / "log"),), ("copeland",)), Store(tmp_path / "s2"), out)
    assert not (out / "category=coding").exists() and "categories" not in json.loads((out / "run.json").read_text())


@pytest.mark.parametrize("kind, sample", [("games", "f1/races_2021_2023.csv"), ("battles", "llmfao/crowd_battles.csv")])
def test_a_store_kept_in_its_log_folder_never_takes_in_its_own_files(tmp_path, kind, sample):
    # The store's partitions, dictionaries and quarantine are Parquet files too: scanned as logs,
    # games (no ids to catch them) were stored again as players named by their ids, on every run.
    logs = tmp_path / "logs"
    (logs / "2024").mkdir(parents=True)
    (logs / "2024" / "log.csv").write_bytes((SAMPLES / sample).read_bytes())
    (logs / "2024" / "extra.parquet").write_bytes(b"")  # the scan still finds the other files of the kind
    board = Board("b", kind, (str(logs),), ())
    store = Store(logs / "store")
    first = boards.ingest(store, board)
    assert [Path(r.source).name for r in first] == ["extra.parquet", "log.csv"]
    other = Store(logs / "2024" / "older-store")  # another board's store in the same folder
    other.ingest([logs / "2024" / "log.csv"], kind)
    second = boards.ingest(store, board)
    assert [(Path(r.source).name, r.status) for r in second] == [("extra.parquet", "unreadable"), ("log.csv", "skipped")]
    assert set(store.manifest.files) == {r.sha256 for r in first}


def test_a_board_takes_a_mapping_and_a_quarantine_limit_from_the_config(tmp_path):
    import yaml

    (tmp_path / "players.csv").write_text("player_id,name\n1,Ann\n2,Bea\n")
    board = {"name": "wta", "kind": "battles", "sources": ["matches.csv"], "methods": ["elo"], "max_quarantined": 0.1,
             "mapping": {"preset": "winner-loser", "columns": "model_a=winner_id,model_b=loser_id",
                         "names": "players.csv:player_id=name", "where": ["surface=Clay"]}}
    config = tmp_path / "nightly.yaml"
    config.write_text(yaml.safe_dump({"boards": [board]}))
    [loaded] = load_boards(config)
    assert loaded.max_quarantined == 0.1
    assert loaded.mapping.record() | {"names_sha256": ""} == {
        "preset": "winner-loser", "columns": "model_a=winner_id,model_b=loser_id", "set": "winner=model_a",
        "names": f"{tmp_path / 'players.csv'}:player_id=name", "names_sha256": "", "where": ["surface=Clay"]}
    for wrong, says in (({"mapping": {"column": "x=y"}}, "mapping: expected some of preset"),
                        ({"mapping": {"columns": "modle_a=x"}}, "'modle_a': not a column of battles"),
                        ({"max_quarantined": 5}, "max_quarantined: expected a share between 0 and 1")):
        config.write_text(yaml.safe_dump({"boards": [board | wrong]}))
        with pytest.raises(ValueError, match=says):
            load_boards(config)


def test_prior_auto_on_too_few_battles_is_refused_before_the_reduction(tmp_path, monkeypatch):
    # Before: refused by the method once the store had been reduced; now from the manifest's row counts.
    import pipeline.board as board_module
    from pipeline.board import Board, run_board
    from pipeline.store import Store

    log = tmp_path / "few.csv"
    log.write_text("model_a,model_b,winner\na,b,model_a\nb,c,model_a\nc,a,tie\n")
    asked = []
    real = board_module.reduce
    monkeypatch.setattr(board_module, "reduce", lambda *args, **options: asked.append(args[5]) or real(*args, **options))
    board = Board("few", "battles", (str(log),), ("m-elo:prior=auto,bootstrap=0", "borda"))
    result = run_board(board, Store(tmp_path / "store"), tmp_path / "out")
    [(spec, message)] = result.errors.items()
    assert spec.startswith("m-elo:") and message == ("m-elo: prior=auto needs at least 20 battles to cross-validate, and the log "
                                                     "holds 3; give the prior (for example prior=1)")
    assert [[s.name for s in specs] for specs in asked] == [["borda"]]  # m-elo's needs were never reduced
