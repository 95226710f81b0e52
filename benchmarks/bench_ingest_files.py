"""Ingest of many one-row files: the cost per file must not grow with the number of files the store
holds (issue 36: 37.7 ms a file at 9,000 entries, the manifest scanned per file).

    python -m benchmarks.bench_ingest_files [--small 1000] [--large 10000] [--batch 200] [--format jsonl]

Two stores are filled with `small` and `large` one-row battle files (2,000 a call). Then `batch`
more one-row files are ingested into each in one call, and again (a second run: all skipped). The
work of a file is the time spent in `Store._ingest_one` (reading, hashing, looking up the manifest,
writing its partitions), timed around each call of it; the ratio of that cost, large / small,
should stay near 1 (it was about large / small when the manifest was scanned per file). The rest
of a call (loading the manifest, the id index and the dictionaries, committing, saving the
manifest) is reported apart: it is O(files) once per call, not per file. Times are wall-clock,
measured in the same process one after the other; the load is saved with them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.common import save
from pipeline.store import Store


def one_row_files(folder: Path, first: int, count: int, suffix: str) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(first, first + count):
        path = folder / f"battle-{i:06d}.{suffix}"
        a, b = f"model-{i % 37:02d}", f"model-{(i + 1 + i % 5) % 37:02d}"
        if suffix == "csv":
            path.write_text(f"battle_id,model_a,model_b,winner\nb{i},{a},{b},model_a\n")
        else:
            path.write_text(f'{{"battle_id": "b{i}", "model_a": "{a}", "model_b": "{b}", "winner": "model_a"}}\n')
        paths.append(path)
    return paths


FILL_BATCH = 2_000  # files ingested per call while filling a store (each call loads and saves the manifest)


class PerFile:
    """The time spent in `Store._ingest_one`, the work of one file (reading, hashing, looking it
    up, writing its partitions), summed over the files of a call, apart from the call's fixed cost."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.files = 0
        self._original = Store._ingest_one

    def __enter__(self) -> PerFile:
        original, record = self._original, self

        def timed(store, *args, **kwargs):
            start = time.perf_counter()
            try:
                return original(store, *args, **kwargs)
            finally:
                record.seconds += time.perf_counter() - start
                record.files += 1

        Store._ingest_one = timed
        return self

    def __exit__(self, *exc) -> None:
        Store._ingest_one = self._original


def per_file_cost(work: Path, stored: int, batch: int, suffix: str) -> dict:
    """The work of one more file, new or already stored, and the whole call's time, per file."""
    store = Store(work / f"store-{stored}")
    files = one_row_files(work / f"logs-{stored}", 0, stored + batch, suffix)
    start = time.perf_counter()
    for i in range(0, stored, FILL_BATCH):
        store.ingest(files[i: min(i + FILL_BATCH, stored)], "battles")
    fill = time.perf_counter() - start
    result: dict = {"stored": stored, "fill_s": fill}
    for status, label in (("ingested", "new"), ("skipped", "skipped")):  # a second run: every file already in the store
        with PerFile() as work_of_files:
            start = time.perf_counter()
            reports = store.ingest(files[stored:], "battles")
            call = time.perf_counter() - start
        assert all(r.status == status for r in reports), {r.status for r in reports}
        assert work_of_files.files == batch
        result |= {f"{label}_per_file_ms": 1000 * work_of_files.seconds / batch, f"{label}_call_s": call,
                   f"{label}_call_fixed_s": call - work_of_files.seconds}
    assert len(store.manifest.files) == stored + batch
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--format", choices=["jsonl", "csv"], default="jsonl")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-ingest-files-"))
    try:
        load = os.getloadavg()
        small = per_file_cost(work, args.small, args.batch, args.format)
        large = per_file_cost(work, args.large, args.batch, args.format)
        ratio = {label: large[f"{label}_per_file_ms"] / small[f"{label}_per_file_ms"] for label in ("new", "skipped")}
        print(f"load {load} -> {os.getloadavg()}")
        for result in (small, large):
            print(f"{result['stored']:>7,} files stored: {result['new_per_file_ms']:7.2f} ms a new file, "
                  f"{result['skipped_per_file_ms']:6.2f} ms a file already stored; the rest of a call (manifest "
                  f"loaded and saved, once): {result['new_call_fixed_s']:.2f} s, {result['skipped_call_fixed_s']:.2f} s "
                  f"skipping; filled in {result['fill_s']:.1f} s")
        print(f"ratio {args.large:,} / {args.small:,} files stored: {ratio['new']:.2f} a new file, "
              f"{ratio['skipped']:.2f} a skipped one")
        payload = {"format": args.format, "batch": args.batch, "load": load, "small": small, "large": large, "ratio": ratio}
        print(f"saved {save('ingest_files', payload)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
