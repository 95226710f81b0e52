"""Score tables: tasks, agents and categories cleaned once per distinct value, with the rows and
quarantine of the same text cleaned row by row, whatever the format and however Parquet stores
the text."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.logs.parquet_files import label_columns
from tests.conftest import (assert_labels_are_cleaned_dictionaries, numbered, read_alike, read_rows_and_quarantine,
                            write_label_formats)

# Per task (task, agent, score, category, higher_is_better): padded names, tasks and categories,
# case kept apart, one name in two Unicode spellings (NFC: one agent), a zero-width space, blank
# names, tasks and categories (a blank category is none), names used only by rejected rows, rows of
# a task that disagree on its category only by case, or on its direction, two spellings of one
# direction, tasks left with a single agent.
TASK = [
    (" t{n}", " a ", "1", " coding ", "true"),
    ("t{n} ", "A", "2", "coding", "true"),
    ("t{n}", "caf\u00e9", "3", "coding", "true"),
    ("t{n}", "cafe\u0301", "4", "coding", "true"),  # the same agent as the row above
    ("t{n}", "a", "5", "coding", "true"),  # stripped: the first row's agent
    ("t{n}", "z\u200bw", "6", "coding", "true"),
    ("t{n}", "   ", "7", "coding", "true"),
    ("  ", "b", "1", "math", "true"),
    ("u{n}", "only-rejected", "abc", "math", "true"),
    ("u{n}", "b", "2", "math", "true"),  # alone once the row above is out
    ("v{n}", "b", "1", "math", "true"),
    ("v{n}", "c", "2", "Math", "true"),
    ("w{n}", "b", "1", "  ", "true"),
    ("w{n}", "c", "2", None, "true"),
    ("x{n}", "Only-Rejected", "inf", "math", "true"),
    ("x{n}", "d", "1", "math", "true"),
    ("y{n}", "b", "1", "math", "true"),
    ("y{n}", "c", "2", "math", "FALSE"),
    ("z{n}", "b", "1", "math", " yes"),
    ("z{n}", "c", "2", "math", "T"),  # true, as the row above
]


def adversarial_scores(tasks: int = 20) -> pa.Table:
    return numbered(TASK, tasks, ("task", "agent", "score", "category", "higher_is_better"))


def read(path) -> tuple[list[dict], list[tuple]]:
    return read_rows_and_quarantine(path, "scores")


def test_every_format_gives_the_same_scores_and_quarantine(tmp_path):
    files = write_label_formats(adversarial_scores(), tmp_path, "scores")
    assert label_columns(pq.read_metadata(files["dictionary"])) == ["agent", "score", "category", "higher_is_better"]  # read as categoricals
    rows, quarantined = read_alike(files, "scores")
    assert {r["agent"] for r in rows} == {"a", "A", "caf\u00e9", "b", "c"}
    assert {(r["task"], r["category"]) for r in rows} == {(f"{t}{n}", c) for n in range(20) for t, c in (("t", "coding"), ("w", None), ("z", "math"))}
    reasons = {(line % len(TASK), field, reason.split(" (")[0].split(",")[0]) for line, field, reason, _ in quarantined}
    assert reasons == {(4, "agent", "duplicate agent in task"), (5, "agent", "duplicate agent in task"),
                       (6, "agent", "agent contains a control or format character"), (7, "agent", "missing agent"),
                       (8, "task", "missing task"), (9, "score", "score is not a number"),
                       (10, "task", "task has fewer than two agents"),
                       (11, "category", "rows of one task disagree on category"),
                       (12, "category", "rows of one task disagree on category"),
                       (15, "score", "score is not finite"), (16, "task", "task has fewer than two agents"),
                       (17, "higher_is_better", "rows of one task disagree on higher_is_better"),
                       (18, "higher_is_better", "rows of one task disagree on higher_is_better")}


def test_a_wide_table_in_every_format(tmp_path):
    wide = pa.table({"task": [" t1", "t1 ", "t2", "  "], "category": ["coding", " coding", "", "math"],
                     " m1": ["1", "2", "3", "4"], "m2": ["2", None, "oops", "1"], "m\u200b3": ["3", "1", "2", "2"]})
    files = write_label_formats(wide, tmp_path, "wide")
    rows, quarantined = read_alike(files, "scores")
    assert [(r["task"], r["agent"], r["category"]) for r in rows] == [("t1", "m1", "coding"), ("t1", "m2", "coding"),
                                                                      ("t2", "m1", None)]
    assert sorted((line, field, reason.split(" (")[0]) for line, field, reason, _ in quarantined) == [
        (1, "agent", "agent contains a control or format character"), (2, "agent", "duplicate agent in task"),
        (2, "agent", "duplicate agent in task"), (3, "agent", "agent contains a control or format character"),
        (3, "score", "score is not a number")] + [(4, "task", "missing task")] * 3


def test_labels_are_dictionary_arrays_of_cleaned_text_until_stored(tmp_path):
    for path in write_label_formats(adversarial_scores(), tmp_path, "scores").values():
        assert_labels_are_cleaned_dictionaries(path, "scores", ("task", "agent", "category"))
