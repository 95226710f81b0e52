"""The ingest fuzz run: 10,000 generated malformed files (every kind x format x failure family,
`pipeline.store.fuzz`), each ingested or refused; the acceptance is 0 crashes, 0 silent drops,
0 accounting violations, 0 false skips and 0 unnamed refusals or quarantined rows. The time per file is printed
against a same-run baseline: reading the same files with pyarrow/polars and nothing else.

Run: python -m benchmarks.bench_ingest_fuzz   (writes benchmarks/results/ingest_fuzz.json)
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from benchmarks.common import save
from pipeline.store.fuzz import check, generate

FILES = 10_000
SEED = 2026


def plain_read(path: Path) -> None:
    """The baseline: what a plain reader does with the file (errors swallowed)."""
    try:
        suffix = path.suffix
        if suffix in (".csv", ".tsv"):
            pl.read_csv(path, separator="\t" if suffix == ".tsv" else ",", infer_schema=False, truncate_ragged_lines=True)
        elif suffix == ".parquet":
            pq.read_table(path)
        elif suffix == ".jsonl":
            pl.read_ndjson(path)
        else:
            pl.read_json(path)
    except (Exception, pl.exceptions.PanicException):  # noqa: BLE001 (the baseline only reads)
        pass


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        files = generate(Path(folder) / "in", FILES, seed=SEED)
        start = time.perf_counter()
        for fuzzed in files:
            plain_read(fuzzed.path)
        baseline = time.perf_counter() - start
        start = time.perf_counter()
        summary = check(files, Path(folder) / "stores")
        elapsed = time.perf_counter() - start
    print(summary.line())
    for failure in summary.failures()[:20]:
        print("  ", failure)
    print(f"ingest and check {elapsed:.1f} s ({1000 * elapsed / FILES:.1f} ms per file); plain read {baseline:.1f} s "
          f"({elapsed / baseline:.1f}x)")
    save("ingest_fuzz", {"files": summary.files, "ingested": summary.ingested, "refused": summary.refused,
                         "rows_in": summary.rows_in, "accepted": summary.accepted, "quarantined": summary.quarantined,
                         "crashes": len(summary.crashes), "silent_drops": len(summary.silent_drops),
                         "accounting_violations": len(summary.accounting), "unnamed": len(summary.unnamed),
                         "false_skips": len(summary.false_skips),
                         "seconds": elapsed, "baseline_seconds": baseline})
    if summary.failures():
        raise SystemExit(1)


if __name__ == "__main__":
    main()
