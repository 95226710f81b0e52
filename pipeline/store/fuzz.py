"""A seeded generator of malformed log files, and a check that ingest is total on them.

`generate(folder, count, seed)` writes `count` small files of every stored kind in every tabular
format, each with one failure family of the kinds ingest meets in practice (bad numbers and
timestamps, wrong encodings, broken CSV lines, odd Parquet types, hostile names, duplicate ids,
cut or corrupted bytes), and returns a `Fuzzed` per file. Where the failure leaves each record on
its own line (or element, or Parquet row), `records` is the number of records the file holds,
counted here from what was written, so a test can check `rows_in` without trusting the reader;
for byte-level damage (a cut file, flipped bytes) it is None and only the accounting is checked.
The same seed gives the same files. `check` ingests them and counts crashes, silent drops,
accounting violations, false skips and unnamed refusals or quarantined rows (`tests/store/test_fuzz.py`
and `benchmarks/bench_ingest_fuzz.py` each run ten thousand files). The check trusts nothing the store
says about a file's identity: it hashes each file itself, so a file reported skipped must have the
bytes of a file stored before it, and a file said to continue an earlier one must start with its bytes.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

KINDS = ("battles", "games", "scores", "ballots")
FORMATS = ("csv", "tsv", "jsonl", "json", "parquet")
NAMES = ("alpha", "beta", "gamma", "delta", "Alpha", "al\u200bpha", "be\u0301ta", "b\u00e9ta", "\u0430lpha", "x\u202ey",
         " gamma ", "delta\u0000", "e" * 300, "")


@dataclass(frozen=True)
class Fuzzed:
    path: Path
    kind: str
    family: str
    records: int | None  # the records written, where each is one line/element/row; None after byte damage


def _valid(kind: str, rng: random.Random, i: int) -> dict[str, object]:
    a, b = rng.sample(NAMES[:4], 2)
    if kind == "battles":
        return {"battle_id": f"b{i}", "model_a": a, "model_b": b, "winner": rng.choice(["model_a", "model_b", "tie"]),
                "timestamp": f"2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T10:00:00Z", "weight": rng.choice(["1", "0.5", "2"])}
    if kind == "games":
        return {"game_id": f"g{i // 3}", "player": NAMES[i % 4], "score": str(rng.randint(0, 9))}
    if kind == "scores":
        return {"task": f"t{i // 2}", "agent": NAMES[i % 4], "score": str(rng.random())}
    return {"ballot_id": f"v{i}", "ranking": f"{a}>{b}", "weight": "1"}


def _poison(kind: str, rng: random.Random) -> tuple[str, object]:
    """A field and a bad value for it."""
    fields = {"battles": ["model_a", "timestamp", "weight", "winner", "battle_id"], "games": ["player", "score", "game_id"],
             "scores": ["agent", "score", "task"], "ballots": ["ranking", "weight", "ballot_id"]}[kind]
    value = rng.choice(["nan", "NaN", "inf", "-inf", "1e13", "1e400", "-1", "1e308", "2e9", "10" * 2500, "2024-13-45",
                        "", None, "x" * 5000, *NAMES, "a>a", ">", "a>>b", "[1, 2]", '{"x": 1}', True, 3.5, -7,
                        float("nan"), float("inf"), 10**400, [1, 2], {"k": "v"}, "\ud800", "\x1b[31mred", "a\tb"])
    return rng.choice(fields), value


def _records(kind: str, rng: random.Random, family: str) -> list[dict[str, object]]:
    n = rng.choice([0, 1, 2, 3, 5, 8, 20])
    records = [_valid(kind, rng, i) for i in range(n)]
    if family == "values" and records:
        for record in rng.sample(records, rng.randint(1, len(records))):
            field, value = _poison(kind, rng)
            record[field] = value
    elif family == "names" and records:
        field = {"battles": "model_b", "games": "player", "scores": "agent", "ballots": "ranking"}[kind]
        for record in records:
            record[field] = rng.choice(NAMES)
    elif family == "duplicates" and records:
        records += [dict(r) for r in rng.choices(records, k=rng.randint(1, 3))]
    elif family == "columns" and records:
        column = rng.choice(list(records[0]))
        case = rng.choice(["drop", "upper", "extra"])
        for record in records:
            if case == "drop":
                record.pop(column)
            elif case == "upper":
                record[column.upper()] = record[column]
            elif case == "extra":
                record["\u200bextra"] = "1"
    return records


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


def _delimited(records: list[dict], delimiter: str, rng: random.Random, family: str) -> tuple[str, int | None]:
    columns = list(dict.fromkeys(c for r in records for c in r)) or ["model_a", "model_b", "winner"]

    def cell(value: object) -> str:
        text = _text(value).replace("\n", " ").replace("\r", " ")
        if any(ch in text for ch in (delimiter, '"')):
            return '"' + text.replace('"', '""') + '"'
        return text

    lines = [delimiter.join(cell(c) for c in columns)]
    lines += [delimiter.join(cell(r.get(c)) for c in columns) for r in records]
    rows = len(records)
    if family == "csv-lines" and records:
        at = rng.randint(1, len(lines) - 1)
        broken = rng.choice(["extra", "quote", "short", "multiline"])
        if broken == "extra":
            lines[at] += delimiter + "surplus"
        elif broken == "quote":
            lines[at] = '"' + lines[at]
            rows = None  # a stray quote may swallow the lines after it, up to the reader's limit
        elif broken == "short":
            lines[at] = lines[at].split(delimiter)[0]
        else:
            first, _, rest = lines[at].partition(delimiter)
            lines[at] = f'"{first}\nsecond line"{delimiter}{rest}'
    return "\n".join(lines) + rng.choice(["\n", "\r\n", ""]), rows


def _json_safe(value: object) -> object:
    return value if not isinstance(value, float) or value == value and abs(value) != float("inf") else str(value)


def _serialise(records: list[dict], fmt: str, rng: random.Random, family: str) -> tuple[bytes, int | None]:
    if fmt in ("csv", "tsv"):
        text, rows = _delimited(records, "," if fmt == "csv" else "\t", rng, family)
        return text.encode("utf-8", "surrogatepass"), rows
    if fmt == "jsonl":
        lines = [json.dumps(r, default=str) for r in records]
        if family == "json-syntax" and lines:
            at = rng.randrange(len(lines))
            lines[at] = rng.choice([lines[at][:-1], "[" * 100_000, '{"model_a": ' + "9" * 5000 + "}", "NaN", "{}", "[1, 2]", "null"])
        return "\n".join(lines).encode("utf-8", "surrogatepass") + b"\n", len(lines)
    if fmt == "json":
        text = json.dumps(records, default=str)
        if family == "json-syntax":
            text = rng.choice([text[:-1], "[" * 100_000 + "]" * 100_000, text.replace("[", "[" + "[" * 5, 1), "{}", "3"])
            return text.encode(), None
        return text.encode("utf-8", "surrogatepass"), len(records)
    return _parquet(records, rng, family), len(records)


def _parquet(records: list[dict], rng: random.Random, family: str) -> bytes:
    columns = list(dict.fromkeys(c for r in records for c in r)) or ["model_a"]
    arrays = {}
    for column in columns:
        values = [_json_safe(r.get(column)) for r in records]
        try:
            arrays[column] = pa.array(values)
        except (pa.ArrowException, OverflowError, UnicodeError):  # mixed types: as text, or bytes that are not UTF-8
            arrays[column] = pa.array([None if v is None else _text(v).encode("utf-8", "surrogatepass") for v in values],
                                      pa.binary())
    if family == "parquet-types" and records:
        n = len(records)
        column = rng.choice(columns)
        arrays[column] = rng.choice([
            pa.array([[1, 2]] * n), pa.array([{"x": 1}] * n), pa.array([[("k", "v")]] * n, pa.map_(pa.string(), pa.string())),
            pa.array([1] * n, pa.duration("s")), pa.array([1] * n, pa.time32("s")), pa.array([b"\xff\xfe"] * n, pa.binary()),
            pa.array([10**18] * n, pa.int64()), pa.array([1.5] * n, pa.float32()),
            pa.array([2**62] * n, pa.timestamp("ns")), pa.array(["a"] * n).dictionary_encode(), pa.array([None] * n, pa.null()),
            pa.array([1] * n, pa.decimal128(38, 0)), pa.array([True] * n),
        ])
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(arrays), sink)
    return sink.getvalue().to_pybytes()


def _damage(data: bytes, rng: random.Random, family: str) -> tuple[bytes, bool]:
    """The bytes after the family's damage, and whether records may have been lost or merged."""
    if family == "encoding":
        choice = rng.choice(["bom", "latin-1", "utf-16", "utf-16-nobom", "nul"])
        if choice == "bom":
            return b"\xef\xbb\xbf" + data, False
        if choice == "latin-1":
            return data.decode("utf-8", "replace").encode("latin-1", "replace") + b"caf\xe9\n", True
        if choice == "utf-16":
            return data.decode("utf-8", "replace").encode("utf-16"), True
        if choice == "utf-16-nobom":
            return data.decode("utf-8", "replace").encode("utf-16-le"), True
        return data[: len(data) // 2] + b"\x00" + data[len(data) // 2:], True
    if family == "cut":
        return data[: rng.randrange(len(data) + 1)], True
    if family == "flip" and data:
        out = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            out[rng.randrange(len(out))] = rng.randrange(256)
        return bytes(out), True
    if family == "empty":
        return rng.choice([b"", b"\n", b"\xef\xbb\xbf", b"   \n\n"]), True
    return data, False


FAMILIES: dict[str, Callable[[str], bool]] = {  # failure family -> the formats it applies to
    "valid": lambda fmt: True,
    "values": lambda fmt: True,
    "names": lambda fmt: True,
    "duplicates": lambda fmt: True,
    "columns": lambda fmt: True,
    "csv-lines": lambda fmt: fmt in ("csv", "tsv"),
    "json-syntax": lambda fmt: fmt in ("json", "jsonl"),
    "parquet-types": lambda fmt: fmt == "parquet",
    "encoding": lambda fmt: fmt != "parquet",
    "cut": lambda fmt: True,
    "flip": lambda fmt: True,
    "empty": lambda fmt: True,
}


def generate(folder: Path, count: int, seed: int = 0) -> list[Fuzzed]:
    """`count` malformed files in `folder`, cycling through kinds x formats x failure families."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    combos = [(k, f, fam) for k in KINDS for f in FORMATS for fam, applies in FAMILIES.items() if applies(f)]
    out = []
    for i in range(count):
        kind, fmt, family = combos[i % len(combos)]
        records = _records(kind, rng, family)
        data, rows = _serialise(records, fmt, rng, family)
        data, damaged = _damage(data, rng, family)
        path = folder / f"{i:05d}-{kind}-{family}.{fmt}"
        path.write_bytes(data)
        out.append(Fuzzed(path, kind, family, None if damaged else rows))
    return out


@dataclass
class Summary:
    """What ingest made of the fuzzed files; every list should stay empty."""

    files: int = 0
    ingested: int = 0
    refused: int = 0
    skipped: int = 0  # the same bytes as a file ingested before
    rows_in: int = 0
    accepted: int = 0
    quarantined: int = 0
    crashes: list[str] = field(default_factory=list)  # an exception escaped, or a file was refused by the safety net
    silent_drops: list[str] = field(default_factory=list)  # rows_in differs from the records written
    accounting: list[str] = field(default_factory=list)  # rows_in != accepted + quarantined, counted from the files written
    unnamed: list[str] = field(default_factory=list)  # a refusal not naming its file, a quarantined row without its where and why
    false_skips: list[str] = field(default_factory=list)  # a skip, continuation or hash the file's own bytes do not bear out

    def failures(self) -> list[str]:
        return self.crashes + self.silent_drops + self.accounting + self.unnamed + self.false_skips

    def line(self) -> str:
        return (f"{self.files} files: {self.ingested} ingested, {self.refused} refused, {self.skipped} skipped; rows in {self.rows_in} = accepted "
                f"{self.accepted} + quarantined {self.quarantined}; crashes {len(self.crashes)}, silent drops "
                f"{len(self.silent_drops)}, accounting violations {len(self.accounting)}, unnamed {len(self.unnamed)}, "
                f"false skips {len(self.false_skips)}")


def check(files: list[Fuzzed], root: Path, per_store: int = 200) -> Summary:
    """Ingest `files` (`per_store` of a kind into each store under `root`) and check every report
    against the files it wrote and the records the generator wrote."""
    from pipeline.store.store import Store

    summary = Summary()
    by_kind: dict[str, list[Fuzzed]] = {}
    for fuzzed in files:
        by_kind.setdefault(fuzzed.kind, []).append(fuzzed)
    for kind, group in sorted(by_kind.items()):
        for start in range(0, len(group), per_store):
            chunk = group[start: start + per_store]
            store = Store(root / f"{kind}-{start}")
            try:
                reports = store.ingest([f.path for f in chunk], kind)
            except Exception as exc:  # noqa: BLE001 (counted, not raised: the point of the check)
                summary.crashes.append(f"{kind} files {chunk[0].path.name}..: {type(exc).__name__}: {exc}")
                continue
            stored: dict[str, Fuzzed] = {}  # by the sha256 of its bytes: each file this store ingested
            for fuzzed, report in zip(chunk, reports, strict=True):
                _check_one(fuzzed, report, store, summary, stored)
    return summary


def _check_one(fuzzed: Fuzzed, report, store, summary: Summary, stored: dict[str, Fuzzed]) -> None:
    name = str(fuzzed.path)
    data = fuzzed.path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    summary.files += 1
    if report.status not in ("ingested", "skipped", "unreadable"):
        summary.crashes.append(f"{name}: status {report.status!r}")
        return
    if report.sha256 and report.sha256 != sha:
        summary.false_skips.append(f"{name}: reported as {report.status} under the hash {report.sha256[:16]}, "
                                   f"its bytes hash to {sha[:16]}")
    if report.status == "unreadable":
        summary.refused += 1
        if "bug of vase" in (report.error or ""):
            summary.crashes.append(report.error)
        elif not (report.error or "").startswith(name + ":") or "\n" in report.error:
            summary.unnamed.append(f"{name}: refusal {report.error!r}")
        return
    if report.status == "skipped":  # must have the same bytes as an earlier file of the store
        summary.skipped += 1
        if sha not in stored:
            summary.false_skips.append(f"{name}: skipped, but no file stored before it has its bytes")
        return
    stored[sha] = fuzzed
    summary.ingested += 1
    summary.rows_in += report.rows_in
    summary.accepted += report.rows_accepted
    summary.quarantined += report.rows_quarantined
    written = sum(pq.read_metadata(store.root / p.path).num_rows for p in report.partitions)
    quarantined = pq.read_table(store.root / report.quarantine) if report.quarantine else None
    held = quarantined.num_rows if quarantined is not None else 0
    if (written, held) != (report.rows_accepted, report.rows_quarantined) or report.rows_in != written + held:
        summary.accounting.append(f"{name}: rows in {report.rows_in}, reported {report.rows_accepted} + "
                                  f"{report.rows_quarantined}, written {written} + {held}")
    expected = fuzzed.records
    if report.continues is not None:  # a file that starts with an earlier one: only the rows after it are read
        before = stored.get(report.continues)
        if before is None or not data.startswith(before.path.read_bytes()):
            summary.false_skips.append(f"{name}: said to continue {report.continues[:16]}, which it does not start with")
        expected = None if expected is None or before is None or before.records is None else expected - before.records
    if expected is not None and report.rows_in != expected:
        summary.silent_drops.append(f"{name}: {expected} records written, {report.rows_in} read")
    if quarantined is not None:
        for row in quarantined.to_pylist():
            if row["file"] != name or row["line"] is None or not row["field"] or not row["reason"]:
                summary.unnamed.append(f"{name}: quarantined row {row}")
                break
