"""Shared fixtures: small profiles with known answers, stores, a real Dask cluster."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
import pytest

# Prefect in local mode, offline, with its state out of the home folder.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")

from pipeline.stats.in_memory import profile  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "data-samples"
PENTATHLON = ["A>B>C", "A>C>B", "C>A>B", "C>A>B", "B>C>A"]  # [VasE] figure 1 / appendix C


def data_rows(path: Path) -> int:
    """The data rows of a CSV file, counted by the standard library's reader: the expected row count of
    a sample every row of which is valid, derived here rather than written into a test."""
    with path.open(newline="", encoding="utf-8") as handle:
        return sum(1 for _ in csv.DictReader(handle))


@pytest.fixture(scope="session", autouse=True)
def _prefect_home(tmp_path_factory):
    os.environ.setdefault("PREFECT_HOME", str(tmp_path_factory.mktemp("prefect-home")))


@pytest.fixture(autouse=True)
def _log_levels_restored():
    """Every CLI command sets Dask's and Prefect's log levels in the environment (`runtime.quiet_logs`); a test
    leaves them as it found them, or a Prefect worker a later test starts inherits WARNING, and its flow runs'
    INFO lines (a deployment's pull steps) are never logged."""
    from pipeline.runtime import DASK_LOG_ENV, PREFECT_LOG_ENV

    saved = {name: os.environ.get(name) for name in (DASK_LOG_ENV, PREFECT_LOG_ENV)}
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(autouse=True)
def _not_stopped():
    """A test that sends itself SIGTERM sets the process-wide stop (pipeline.cancellation.STOP), which stays
    set in a command that is leaving; the next test starts unstopped."""
    from pipeline.cancellation import STOP

    yield
    STOP.clear()


@pytest.fixture
def pentathlon():
    """A, B, C over five events: C is the Condorcet winner; Borda and plurality tie A and C."""
    return profile(PENTATHLON)


@pytest.fixture
def condorcet_cycle():
    """Rock-paper-scissors: each agent beats the next by 2 votes to 1."""
    return profile(["a>b>c", "b>c>a", "c>a>b"])


@pytest.fixture
def biased_shapley():
    """[DevR] table 2a: the biased Shapley game (symmetric) with the augmented Nash strategy N.

    The 3x3 game has the single mixed Nash equilibrium N = (87, 100, 54)/241, against which R, P and
    S each get -680/241; N's row is that mixture of the R, P, S rows.
    """
    from pipeline.games import Game

    n = [-680 / 241, -712 / 241, -920 / 241, -184 / 241]
    g = np.array([[-8, -2, 4, n[0]], [2, -8, -1, n[0]], [-4, 1, -8, n[0]], [n[1], n[2], n[3], n[0]]])
    return Game((g, g.T.copy()), ("row", "col"), (("R", "P", "S", "N"),) * 2)


@pytest.fixture(scope="session")
def session_cluster():
    """One real LocalCluster per test process, as the flows start it: two single-threaded workers."""
    from pipeline.runtime import local_cluster

    with local_cluster(2) as cluster:
        yield cluster


@pytest.fixture
def dask_cluster(session_cluster):
    """The session's LocalCluster, its TLS credentials in Dask's configuration during the test, so that
    the test can hand its address to the command line and the flows, as a team hands them a cluster's."""
    import dask

    with dask.config.set(client_configuration(session_cluster.security)):
        yield session_cluster


def client_configuration(security) -> dict[str, str]:
    """The Dask configuration of a client holding `security`'s CA and client certificate (file paths or PEM texts)."""
    return {"distributed.comm.tls.ca-file": security.tls_ca_file, "distributed.comm.tls.client.cert": security.tls_client_cert,
            "distributed.comm.tls.client.key": security.tls_client_key}


@pytest.fixture
def dask_client(dask_cluster):
    from distributed import Client

    with Client(dask_cluster) as client:
        yield client


@pytest.fixture
def log_stats(tmp_path):
    """Factory: statistics of log rows (dicts) of one kind, through a real store and reduction."""
    import polars as pl

    from pipeline.stats import reduce_store
    from pipeline.store import Store

    def make(rows: list[dict], statistics: set[str], kind: str = "battles", files: int = 1, **options):
        store = Store(tmp_path / f"store-{len(list(tmp_path.iterdir()))}")
        paths = []
        for part in range(files):
            path = tmp_path / f"{kind}-{len(list(tmp_path.iterdir()))}-{part}.csv"
            pl.DataFrame(rows[part::files]).write_csv(path)
            paths.append(path)
        store.ingest(paths, kind)
        return reduce_store(store, kind, statistics, **options), store

    return make


# The inputs of every rating method, as small logs of each kind through a real store and reduction
# (tests/methods/test_contract.py runs every registered method on every kind whose statistics it reads).
# Names mix case and scripts and include a look-alike pair ("Epsilon" / Greek "Εpsilon"), so that
# name order, store-id order and file order all differ.
CONTRACT_NAMES = ["Alpha", "beta", "Γάμμα", "delta 4", "Epsilon", "Εpsilon", "eta-7", "Theta"]
CONTRACT_KINDS = ("battles", "games", "scores", "ballots", "reviews")
WEIGHT_COLUMN = {"battles": "weight", "games": "weight", "scores": "task_weight", "ballots": "weight"}  # reviews: none


def contract_rows(kind: str) -> list[dict]:
    """A deterministic log of `kind` over CONTRACT_NAMES on which every method has an answer (every agent
    wins and loses, every pair is compared): judges, prompts, timestamps, ties and uneven weights."""
    import json

    rng = np.random.default_rng(CONTRACT_KINDS.index(kind) + 11)
    names, k = CONTRACT_NAMES, len(CONTRACT_NAMES)
    strength = np.linspace(1.2, -1.2, k)[rng.permutation(k)]
    weights = [1.0, 0.5, 2.0, 1.0]
    if kind == "battles":
        rows = []
        for i in range(360):
            a = i % k
            b = (a + 1 + (i // k) % (k - 1)) % k
            u = rng.random()
            p = 1 / (1 + np.exp(strength[b] - strength[a]))
            winner = "tie" if u < 0.1 else ("model_a" if rng.random() < p else "model_b")
            rows.append({"battle_id": f"b{i:04d}", "model_a": names[a], "model_b": names[b], "winner": winner,
                         "judge": f"judge-{i % 4}", "prompt": f"p{i % 9}", "weight": weights[i % 4],
                         "timestamp": f"2024-01-{1 + i // 60:02d}T{(i % 60) // 6:02d}:{i % 6 * 7:02d}:00Z"})
        return rows
    if kind == "games":
        rows = []
        for g in range(48):
            players = rng.choice(k, size=3 + g % 3, replace=False)
            noisy = strength[players] + rng.normal(0, 1, len(players))
            places = 1 + np.argsort(np.argsort(-np.round(noisy, 0), kind="stable"), kind="stable")
            places = np.where(np.round(noisy, 0) == np.round(noisy, 0).max(), 1, places)  # ties for first happen
            rows += [{"game_id": f"g{g:03d}", "player": names[p], "place": int(pl), "weight": weights[g % 4],
                      "timestamp": f"2024-02-{1 + g // 4:02d}T{g % 4:02d}:00:00Z"} for p, pl in zip(players, places)]
        return rows
    if kind == "scores":
        rows = []
        for t in range(7):
            for i, name in enumerate(names):
                if (t, i) != (3, 5):  # one agent did not run one task
                    # a task weight is a number of copies of the task in the games built from scores
                    rows.append({"task": f"task-{t}", "agent": name, "task_weight": 2 * weights[t % 4],
                                 "score": float(np.round(50 + 10 * strength[i] + rng.normal(0, 8), 1))})
        return rows
    if kind == "ballots":
        rows = []
        for v in range(40):
            chosen = rng.permutation(k)[: 3 + v % (k - 2)]
            order = chosen[np.argsort(-(strength[chosen] + rng.normal(0, 1, len(chosen))), kind="stable")]
            text = names[order[0]]
            for j, agent in enumerate(order[1:], start=1):
                text += ("=" if (v + j) % 7 == 0 else ">") + names[agent]
            rows.append({"ranking": text, "weight": weights[v % 4]})
        return rows
    rows = []  # reviews: six models answer each query; each one reviews the others' anonymised answers
    models = names[:6]
    labels = [f"Response {c}" for c in "ABCDEF"]
    for q in range(24):
        mapping = dict(zip(labels, [models[j] for j in rng.permutation(6)]))
        for reviewer in models:
            if (q + models.index(reviewer)) % 11 == 0:
                rows.append({"query_id": f"q{q:03d}", "reviewer": reviewer, "abstained": True, "ranking": [],
                             "label_to_model": mapping, "category": "general", "timestamp": f"2024-03-{1 + q:02d}T00:00:00Z"})
                continue
            noise = {label: strength[names.index(m)] + rng.normal(0, 1) for label, m in mapping.items()}
            rows.append({"query_id": f"q{q:03d}", "reviewer": reviewer, "abstained": False,
                         "ranking": sorted(labels, key=lambda label: -noise[label]), "label_to_model": mapping,
                         "category": ["coding", "writing"][q % 2], "timestamp": f"2024-03-{1 + q:02d}T00:00:00Z"})
    return json.loads(json.dumps(rows))


def write_log(path: Path, kind: str, rows: list[dict]) -> Path:
    """Rows as a log file: JSONL for reviews, CSV otherwise."""
    import json

    import polars as pl

    if kind == "reviews":
        path = path.with_suffix(".jsonl")
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    else:
        path = path.with_suffix(".csv")
        pl.DataFrame(rows).write_csv(path)
    return path


def write_label_formats(table, folder: Path, stem: str, row_group_size: int = 200) -> dict[str, Path]:
    """`table` (text columns) as CSV, as Parquet whose text is stored as dictionaries (those of few
    values read as categoricals, each row group with a dictionary of its own) and as plain Parquet."""
    import pyarrow.csv as pa_csv
    import pyarrow.parquet as pq

    paths = {"csv": folder / f"{stem}.csv", "dictionary": folder / f"{stem}-dictionary.parquet",
             "plain": folder / f"{stem}-plain.parquet"}
    pa_csv.write_csv(table, paths["csv"])
    pq.write_table(table, paths["dictionary"], row_group_size=row_group_size)
    pq.write_table(table, paths["plain"], row_group_size=row_group_size, use_dictionary=False)
    return paths


def numbered(template: list[tuple], copies: int, columns: tuple[str, ...]):
    """The rows of `template` `copies` times, `{n}` in a value the copy's number, as a table."""
    import pyarrow as pa

    rows = [tuple(value.format(n=n) if value else value for value in row) for n in range(copies) for row in template]
    return pa.table(dict(zip(columns, map(list, zip(*rows)))))


def read_rows_and_quarantine(path: Path, kind: str) -> tuple[list[dict], list[tuple]]:
    """The rows `kind`'s reader accepts from `path` and its quarantine as (line, field, reason, record)."""
    from pipeline.logs import read_log

    result = read_log(path, kind)
    return result.table.to_pylist(), [(q["line"], q["field"], q["reason"], q["record"]) for q in result.quarantined.to_pylist()]


def header_counted(quarantined: list[tuple]) -> list[tuple]:
    """Quarantined rows of a Parquet file as those of the same rows in CSV, whose lines (and the
    lines its reasons name) count the header."""
    import re

    def later(reason: str) -> str:
        return re.sub(r"line (\d+)", lambda found: f"line {int(found.group(1)) + 1}", reason)

    return [(line + 1, field, later(reason), record) for line, field, reason, record in quarantined]


def read_alike(files: dict[str, Path], kind: str) -> tuple[list[dict], list[tuple]]:
    """The rows and quarantine of `write_label_formats`' files, asserted the same in every format (CSV's
    lines counting its header)."""
    rows, quarantined = read_rows_and_quarantine(files["dictionary"], kind)
    assert read_rows_and_quarantine(files["plain"], kind) == (rows, quarantined)
    csv_rows, csv_quarantined = read_rows_and_quarantine(files["csv"], kind)
    assert csv_rows == rows and csv_quarantined == header_counted(quarantined)
    return rows, quarantined


def assert_labels_are_cleaned_dictionaries(path: Path, kind: str, columns: tuple[str, ...]) -> None:
    """The read table of `kind` carries `columns` as dictionary arrays of stripped, non-empty text."""
    import pyarrow as pa

    from pipeline.logs import read_batches

    [result] = read_batches(path, kind)
    for name in columns:
        column = result.table.column(name).combine_chunks()
        assert pa.types.is_dictionary(column.type), name
        assert all(value == value.strip() and value for value in column.dictionary.to_pylist()), name


def renamed_rows(kind: str, rows: list[dict], rename: dict[str, str]) -> list[dict]:
    """The same log with every agent name mapped through `rename`."""
    import re

    out = []
    for row in rows:
        row = dict(row)
        if kind == "battles":
            row["model_a"], row["model_b"] = rename[row["model_a"]], rename[row["model_b"]]
        elif kind == "games":
            row["player"] = rename[row["player"]]
        elif kind == "scores":
            row["agent"] = rename[row["agent"]]
        elif kind == "ballots":
            row["ranking"] = re.sub(r"[^>=]+", lambda m: rename[m.group(0)], row["ranking"])
        else:
            row["reviewer"] = rename[row["reviewer"]]
            row["label_to_model"] = {label: rename[m] for label, m in row["label_to_model"].items()}
        out.append(row)
    return out


def scaled_rows(kind: str, rows: list[dict], factor: float) -> list[dict]:
    return [dict(r, **{WEIGHT_COLUMN[kind]: r[WEIGHT_COLUMN[kind]] * factor}) for r in rows]


def all_statistics(kind: str) -> frozenset[str]:
    """Every statistic a reduction can give for `kind`."""
    from pipeline.stats.extras import kind_statistics

    return kind_statistics(kind)


def stats_of_rows(root: Path, kind: str, rows: list[dict], first: tuple[tuple[str, list[dict]], ...] = ()):
    """(statistics, agent names of the store) of a log of `kind` ingested into a fresh store at `root`,
    after the logs `first` ((kind, rows) each, e.g. to give the agents other store ids)."""
    from pipeline.stats import reduce_store
    from pipeline.store import Store

    store = Store(root / "store")
    for i, (other_kind, other_rows) in enumerate(first):
        store.ingest([write_log(root / f"first-{i}", other_kind, other_rows)], other_kind)
    store.ingest([write_log(root / "log", kind, rows)], kind)
    return reduce_store(store, kind, all_statistics(kind)), store.dictionary("agents").names


@pytest.fixture(scope="session")
def contract_inputs(tmp_path_factory):
    """Factory: (statistics, names) of `contract_rows(kind)`, optionally relabelled or with scaled weights; cached."""
    made: dict[tuple, tuple] = {}

    def make(kind: str, variant: str = "base"):
        if (kind, variant) not in made:
            rows = contract_rows(kind)
            if variant == "reversed":  # names in reverse order, and rows too (other store ids)
                ordered = sorted(CONTRACT_NAMES)
                rows = renamed_rows(kind, rows, dict(zip(ordered, ordered[::-1])))[::-1]
            elif variant == "prefixed":  # names in the same order, rows reversed (other store ids)
                rows = renamed_rows(kind, rows, {n: f"x-{n}" for n in CONTRACT_NAMES})[::-1]
            elif variant == "scaled":
                rows = scaled_rows(kind, rows, 8.0)
            made[kind, variant] = stats_of_rows(tmp_path_factory.mktemp(f"contract-{kind}-{variant}"), kind, rows)
        return made[kind, variant]

    return make
