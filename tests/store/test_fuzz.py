"""Ingest is total: 10,000 generated malformed files of every kind, format and failure family
(`pipeline.store.fuzz`), in four seeded parts that run in parallel, are each ingested or refused
in one line, with every row accounted for; and the harness itself reports each kind of violation
planted in a real store."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

import pipeline.store.store as store_module
from pipeline.store.fuzz import FAMILIES, FORMATS, KINDS, Fuzzed, check, generate
from pipeline.store.files import sha256_file
from pipeline.store.store import IngestReport, Store

PART = 2_500


@pytest.mark.parametrize("seed", [13, 14, 15, 16])
def test_no_crash_no_silent_drop_no_accounting_violation(tmp_path, seed):
    files = generate(tmp_path / "in", PART, seed=seed)
    assert {(f.kind, f.family) for f in files} == {(k, fam) for k in KINDS for fam in FAMILIES}
    assert {f.path.suffix for f in files} == {f".{fmt}" for fmt in FORMATS}
    summary = check(files, tmp_path / "stores")
    assert summary.failures() == [], summary.line()
    # Both outcomes were exercised, and rows were checked against the generator's own count.
    assert summary.refused > PART // 10 and summary.ingested > PART // 2 and summary.quarantined > PART
    assert sum(f.records is not None for f in files) > PART // 2


def test_the_same_seed_gives_the_same_files(tmp_path):
    first = generate(tmp_path / "a", 60, seed=5)
    second = generate(tmp_path / "b", 60, seed=5)
    assert [f.path.read_bytes() for f in first] == [f.path.read_bytes() for f in second]


# The harness itself: each kind of violation, planted in a real store, must be reported.

def battles_file(folder: Path, name: str, ids: range) -> Fuzzed:
    path = folder / name
    path.write_text("".join(["battle_id,model_a,model_b,winner\n", *(f"b{i},alpha,beta,model_a\n" for i in ids)]))
    return Fuzzed(path, "battles", "valid", len(ids))


@pytest.fixture
def honest_files(tmp_path) -> list[Fuzzed]:
    """Two files of the same size but other bytes, a true copy of the first, a refused file, the first
    grown by two rows, a file with a row to quarantine, and another refused file."""
    one = battles_file(tmp_path, "one.csv", range(10, 13))
    two = battles_file(tmp_path, "two.csv", range(20, 23))
    copy = Fuzzed(tmp_path / "copy.csv", "battles", "valid", one.records)
    copy.path.write_bytes(one.path.read_bytes())
    broken = Fuzzed(tmp_path / "broken.parquet", "battles", "cut", None)
    broken.path.write_bytes(b"PAR1 cut short")
    grown = Fuzzed(tmp_path / "grown.csv", "battles", "valid", one.records + 2)
    grown.path.write_bytes(one.path.read_bytes() + b"b13,alpha,beta,model_a\nb14,alpha,beta,model_b\n")
    bad = Fuzzed(tmp_path / "bad.csv", "battles", "values", 2)
    bad.path.write_text("battle_id,model_a,model_b,winner\nb30,alpha,beta,model_a\nb31,alpha,beta,nobody\n")
    cut = Fuzzed(tmp_path / "cut.json", "battles", "cut", None)
    cut.path.write_bytes(b'[{"model_a": ')
    assert one.path.stat().st_size == two.path.stat().st_size and one.path.read_bytes() != two.path.read_bytes()
    return [one, two, copy, broken, grown, bad, cut]


REFUSED = (3, 6)  # broken.parquet and cut.json
INGESTED = (0, 1, 4, 5)


def tampered_reports(monkeypatch, tamper: Callable[[list[IngestReport]], list[IngestReport]]) -> None:
    ingest = Store.ingest
    monkeypatch.setattr(Store, "ingest", lambda self, sources, kind: tamper(ingest(self, sources, kind)))


def test_the_honest_store_passes_the_harness(tmp_path, honest_files):
    summary = check(honest_files, tmp_path / "stores")
    assert summary.failures() == [], summary.line()
    assert (summary.files, summary.ingested, summary.skipped, summary.refused) == (len(honest_files), 4, 1, 2)
    # Rows read: one and two whole, grown's two rows after one's, bad's two; bad's unknown winner quarantined.
    assert (summary.rows_in, summary.accepted, summary.quarantined) == (3 + 3 + 2 + 2, 3 + 3 + 2 + 1, 1)


def test_a_store_that_raises_is_a_crash_naming_its_files_and_the_next_store_still_runs(tmp_path, monkeypatch, honest_files):
    def raising(self, sources, kind):
        raise RuntimeError("planted")

    monkeypatch.setattr(Store, "ingest", raising)
    summary = check(honest_files, tmp_path / "stores", per_store=2)
    assert summary.crashes == [f"battles files {f.path.name}..: RuntimeError: planted" for f in honest_files[::2]]


def test_a_refusal_by_the_safety_net_is_a_crash(tmp_path, monkeypatch, honest_files):
    def bug(report: IngestReport) -> IngestReport:
        return dataclasses.replace(report, error=f"{report.source}: a bug of vase (KeyError: 'x'); please report it")

    tampered_reports(monkeypatch, lambda reports: [bug(r) if r.status == "unreadable" else r for r in reports])
    summary = check(honest_files, tmp_path / "stores")
    assert summary.crashes == [f"{honest_files[i].path}: a bug of vase (KeyError: 'x'); please report it" for i in REFUSED]


def test_a_store_that_loses_a_report_is_caught(tmp_path, monkeypatch, honest_files):
    tampered_reports(monkeypatch, lambda reports: reports[:-1])
    with pytest.raises(ValueError, match="zip"):
        check(honest_files, tmp_path / "stores")


def test_a_dropped_row_is_a_silent_drop(tmp_path, monkeypatch, honest_files):
    # The reader loses a row and says so nowhere: the accounting still adds up, the generator's count does not.
    read = store_module.read_batches

    def dropping(*args, **kwargs):
        for result in read(*args, **kwargs):
            yield dataclasses.replace(result, table=result.table.slice(1), rows_in=result.rows_in - 1, lines=result.lines[1:])

    monkeypatch.setattr(store_module, "read_batches", dropping)
    summary = check(honest_files, tmp_path / "stores")
    assert [s.split(":")[0] for s in summary.silent_drops] == [str(honest_files[i].path) for i in INGESTED]
    assert summary.accounting == []


def test_a_wrong_count_is_an_accounting_violation(tmp_path, monkeypatch, honest_files):
    # A report claiming one row more than its partitions hold, and consistent with itself: caught only by
    # counting the rows of the files written.
    def one_more(report: IngestReport) -> IngestReport:
        return dataclasses.replace(report, rows_in=report.rows_in + 1, rows_accepted=report.rows_accepted + 1)

    tampered_reports(monkeypatch, lambda reports: [one_more(reports[0]), *reports[1:]])
    summary = check(honest_files, tmp_path / "stores")
    assert [s.split(":")[0] for s in summary.accounting] == [str(honest_files[0].path)]


def test_a_store_that_skips_a_file_of_the_same_size_is_caught(tmp_path, monkeypatch, honest_files):
    # The mutant of issue 35: a new file taken for an earlier one because it has the same size.
    digest_file = store_module.digest_file
    by_size: dict[int, str] = {}

    def same_size_is_same_file(path, *args):
        digest = digest_file(path, *args)
        return dataclasses.replace(digest, sha256=by_size.setdefault(digest.size, digest.sha256))

    monkeypatch.setattr(store_module, "digest_file", same_size_is_same_file)
    summary = check(honest_files, tmp_path / "stores")
    assert summary.skipped == 2  # two.csv, wrongly, and copy.csv, rightly
    assert {s.split(":")[0] for s in summary.false_skips} == {str(honest_files[1].path)}  # its hash, and no copy stored


def test_a_skip_without_an_earlier_copy_is_caught(tmp_path, monkeypatch, honest_files):
    tampered_reports(monkeypatch, lambda reports: [reports[0], dataclasses.replace(reports[1], status="skipped"), *reports[2:]])
    summary = check(honest_files, tmp_path / "stores")
    assert summary.false_skips == [f"{honest_files[1].path}: skipped, but no file stored before it has its bytes"]


def test_a_file_reported_under_another_files_hash_is_caught(tmp_path, monkeypatch, honest_files):
    tampered_reports(monkeypatch, lambda reports: [reports[0], dataclasses.replace(reports[1], sha256=reports[0].sha256),
                                                   *reports[2:]])
    summary = check(honest_files, tmp_path / "stores")
    two = honest_files[1]
    assert summary.false_skips == [f"{two.path}: reported as ingested under the hash {sha256_file(honest_files[0].path)[:16]}, "
                                   f"its bytes hash to {sha256_file(two.path)[:16]}"]


def test_a_false_continuation_is_caught(tmp_path, monkeypatch, honest_files):
    # two.csv said to grow from one.csv: only its rows after one.csv's would be counted.
    tampered_reports(monkeypatch, lambda reports: [reports[0], dataclasses.replace(reports[1], continues=reports[0].sha256),
                                                   *reports[2:]])
    summary = check(honest_files, tmp_path / "stores")
    assert [s.split(":")[0] for s in summary.false_skips] == [str(honest_files[1].path)]


def test_a_refusal_that_does_not_name_its_file_is_caught(tmp_path, monkeypatch, honest_files):
    def unnamed(report: IngestReport) -> IngestReport:
        return dataclasses.replace(report, error=report.error.removeprefix(f"{report.source}: ")) if report.error else report

    tampered_reports(monkeypatch, lambda reports: [unnamed(r) for r in reports])
    summary = check(honest_files, tmp_path / "stores")
    assert [s.split(":")[0] for s in summary.unnamed] == [str(honest_files[i].path) for i in REFUSED]


def test_a_refusal_on_two_lines_is_caught(tmp_path, monkeypatch, honest_files):
    def two_lines(report: IngestReport) -> IngestReport:
        return dataclasses.replace(report, error=f"{report.error}\nTraceback (most recent call last):") if report.error else report

    tampered_reports(monkeypatch, lambda reports: [two_lines(r) for r in reports])
    summary = check(honest_files, tmp_path / "stores")
    assert [s.split(":")[0] for s in summary.unnamed] == [str(honest_files[i].path) for i in REFUSED]
