"""Where a run's numbers come from, from its run.json: inputs with hashes and row accounting, the
top quarantine reasons (read from the quarantine files the store kept, when they are reachable),
refused files, failed methods, timings, versions and parameters.

Keys of run.json that this module does not know are shown as they are, never dropped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipeline.report.diagnostics import Note, number, plain
from pipeline.report.folders import section
from pipeline.report.tables import Cell, Column, Table, pairs_table

KNOWN = {"title", "version", "python", "kind", "methods", "store", "parameters", "inputs", "rows", "timings_s", "diagnostics", "outputs"}
REFUSED_KEYS = ("refused", "refused_files")
FAILED_KEYS = ("failed", "failures", "failed_methods", "method_failures", "errors")
ACCEPTED_STATUS = {"ingested", "skipped"}
TOP_REASONS = 8


@dataclass
class Provenance:
    facts: list[tuple[str, str]]
    inputs: Table | None
    quarantine: Table | None
    quarantine_note: str
    refused: Table | None
    timings: Table | None
    parameters: Table | None
    other: Table | None
    alerts: list[Note] = field(default_factory=list)


def records_table(items: list) -> Table:
    """A list of records (dicts, or plain values) as a table over the union of their keys."""
    if all(isinstance(i, dict) for i in items):
        keys = list(dict.fromkeys(k for i in items for k in i))
        return Table([Column(k) for k in keys], [[Cell(plain(i.get(k, ""), 300)) for k in keys] for i in items], "plain")
    return Table([Column("value")], [[Cell(plain(i, 300))] for i in items], "plain")


def as_records(value: object, key_name: str) -> list:
    if isinstance(value, dict):
        return [{key_name: k} | (v if isinstance(v, dict) else {"error": v}) for k, v in value.items()]
    return list(value) if isinstance(value, (list, tuple)) else [value]


def mapping_text(mapping: object) -> str:
    """How an input was read (`pipeline.logs.mapping.Mapping.record`), as the options that say it."""
    if not isinstance(mapping, dict):
        return ""
    parts = [(key, value) for key, value in mapping.items() if key not in ("names_sha256", "nested")]  # nested: a preset's
    return " ".join(f"--{key} {v}" for key, value in parts for v in (value if isinstance(value, list) else [value]))


def inputs_table(inputs: list[dict]) -> Table:
    head = [Column("file"), Column("sha256", "content hash (first 12 hex digits; hover for all)"), Column("status"),
            Column("rows in", "", True), Column("accepted", "", True), Column("quarantined", "", True), Column("ingested at")]
    mapped = any(i.get("mapping") for i in inputs)
    if mapped:
        head.append(Column("read as", "the mapping the file was read through (docs/guide.md)"))
    body = []
    for i in inputs:
        source = str(i.get("source", ""))
        sha = str(i.get("sha256", ""))
        status = str(i.get("status", ""))
        body.append([Cell(Path(source).name or source, source, "file", source), Cell(sha[:12], sha, "hash", sha),
                     Cell(status, status, "" if status in ACCEPTED_STATUS else "bad", str(i.get("error") or "")),
                     *[Cell(number(i.get(k, 0)), i.get(k, 0)) for k in ("rows_in", "rows_accepted", "rows_quarantined")],
                     Cell(str(i.get("ingested_at") or "")), *([Cell(plain(mapping_text(i.get("mapping")), 300))] if mapped else [])])
    return Table(head, body, "sortable inputs")


# The tail of a duplicate's reason (pipeline.logs): "(first at line 12)", "(first in a.csv, line 12)".
REPEATED_LINE = r" \(first (?:at|in .*,) line \d+\)$"


def quarantine_reasons(run: dict) -> tuple[Table | None, str]:
    """The most frequent (field, reason) among the quarantined rows, from the store's quarantine files."""
    inputs = [i for i in run.get("inputs") or [] if isinstance(i, dict) and i.get("rows_quarantined")]
    if not inputs:
        return None, ""
    store = Path(str(run.get("store", "")))
    frames, missing = [], []
    for i in inputs:
        path = Path(str(i.get("quarantine") or ""))
        path = path if path.is_absolute() else store / path
        try:
            frame = pl.read_parquet(path, columns=["line", "field", "reason"]).sort("line")
        except (OSError, pl.exceptions.PolarsError):
            missing.append(str(path))
            continue
        frames.append(frame.with_columns(pl.lit(Path(str(i.get("source", ""))).name).alias("file")))
    note = ""
    if missing:
        note = f"{len(missing)} quarantine file(s) not reachable from here (the store may have been temporary): {', '.join(missing[:3])}."
    if not frames:
        return None, note
    # A duplicate's reason names the line it repeats: without it, every duplicate is one reason.
    rows = pl.concat(frames).with_columns(pl.col("field").fill_null(""),
                                          pl.col("reason").fill_null("").str.replace(REPEATED_LINE, ""))
    top = (rows.group_by("field", "reason", maintain_order=True).agg(pl.len().alias("rows"), pl.col("file").first(), pl.col("line").first())
           .sort(["rows", "field", "reason"], descending=[True, False, False]))
    table = Table([Column("rows", "", True), Column("field"), Column("reason"), Column("first seen")],
                  [[Cell(number(r["rows"]), r["rows"]), Cell(r["field"]), Cell(r["reason"]), Cell(f"{r['file']}, line {r['line']}")]
                   for r in top.head(TOP_REASONS).iter_rows(named=True)], "sortable quarantine")
    if top.height > TOP_REASONS:
        table.note = f"Top {TOP_REASONS} of {top.height} reasons."
    return table, note


def provenance(run: dict) -> Provenance:
    inputs = [i for i in run.get("inputs") or [] if isinstance(i, dict)]
    alerts = []
    refused = [{"file": i.get("source", ""), "status": i.get("status", ""), "reason": i.get("error") or ""}
               for i in inputs if i.get("status") not in ACCEPTED_STATUS]
    for key in REFUSED_KEYS:
        if run.get(key):
            refused += as_records(run[key], "file")
    if refused:
        alerts.append(Note(f"{len(refused)} input file(s) refused; see Provenance.", "warn"))
    failed = [record for key in FAILED_KEYS if run.get(key) for record in as_records(run[key], "method")]
    for record in failed:
        what = record.get("method", "") if isinstance(record, dict) else ""
        why = record.get("error", record.get("reason", "")) if isinstance(record, dict) else record
        alerts.append(Note(f"Method {what} failed: {plain(why, 300)}".replace("Method  failed", "A method failed"), "warn"))
    facts = [(k, str(run[k])) for k in ("version", "python", "kind", "store") if run.get(k)]
    if isinstance(run.get("methods"), list):
        facts.append(("methods as given", ", ".join(map(str, run["methods"]))))
    if isinstance(run.get("rows"), dict):
        rows = run["rows"]
        facts.append(("rows", f"{number(rows.get('rows_in', 0))} in = {number(rows.get('rows_accepted', 0))} accepted + "
                              f"{number(rows.get('rows_quarantined', 0))} quarantined"))
    timings = section(run, "timings_s")
    timing_rows = [(k, f"{number(v)} s") for k, v in timings.items()]
    if timing_rows:
        wall = [v for k, v in timings.items() if isinstance(v, (int, float)) and not k.startswith("cpu ")]  # a spec's CPU time
        timing_rows.append(("total", f"{number(round(sum(wall), 3))} s"))  # (`pipeline.board.rate`) is inside its wall time
    parameters = section(run, "parameters")
    other = [(k, plain(v, 600)) for k, v in sorted(run.items()) if k not in KNOWN and k not in REFUSED_KEYS + FAILED_KEYS]
    quarantine, note = quarantine_reasons(run)
    return Provenance(
        facts, inputs_table(inputs) if inputs else None, quarantine, note,
        records_table(refused) if refused else None,
        pairs_table(timing_rows) if timing_rows else None,
        pairs_table([(k, v if isinstance(v, str) else json.dumps(v)) for k, v in sorted(parameters.items())]) if parameters else None,
        pairs_table(other) if other else None,
        alerts)
