"""Ingest of many one-row files: the cost per file must not grow with the number of files the store
holds (issue 36: 37.7 ms a file at 9,000 entries, the manifest scanned per file).

    python -m benchmarks.bench_ingest_files [--small 1000] [--large 10000] [--batch 200] [--format jsonl]

Two stores are filled with `small` and `large` one-row battle files (ingested `batch` at a time,
committed after each call). Then, in each: a call ingesting one new file (the fixed cost of a call:
loading and saving the manifest, which are O(files) once per call), and a call ingesting `batch`
new files; the cost of a file is their difference over `batch - 1` files, and the ratio of that
cost, large / small, should stay near 1 (it was about large / small when the manifest was scanned
per file). The same for a second run over files already stored (skipped). Times are wall-clock,
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


def per_file_cost(work: Path, stored: int, batch: int, suffix: str) -> dict:
    """The cost of one more file (a call of `batch` new files less a call of one, per file), the
    fixed cost of a call (the call of one file), and the same for files already in the store."""
    store = Store(work / f"store-{stored}")
    files = one_row_files(work / f"logs-{stored}", 0, stored + batch + 1, suffix)
    start = time.perf_counter()
    for i in range(0, stored, batch):
        store.ingest(files[i: i + batch], "battles")
    fill = time.perf_counter() - start

    def timed(paths: list[Path], status: str) -> float:
        start = time.perf_counter()
        reports = store.ingest(paths, "battles")
        elapsed = time.perf_counter() - start
        assert all(r.status == status for r in reports), {r.status for r in reports}
        return elapsed

    one = timed(files[stored: stored + 1], "ingested")
    many = timed(files[stored + 1:], "ingested")
    skip_one = min(timed(files[stored: stored + 1], "skipped") for _ in range(3))
    skip_many = timed(files[stored + 1:], "skipped")  # a second run: every file already in the store
    assert len(store.manifest.files) == stored + batch + 1
    return {"stored": stored, "fill_s": fill, "call_of_one_file_s": one,
            "per_file_ms": 1000 * (many - one) / (batch - 1), "per_skipped_file_ms": 1000 * (skip_many - skip_one) / (batch - 1),
            "call_of_one_skipped_file_s": skip_one}


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
        ratio = large["per_file_ms"] / small["per_file_ms"]
        skipped_ratio = large["per_skipped_file_ms"] / small["per_skipped_file_ms"]
        print(f"load {load}")
        for result in (small, large):
            print(f"{result['stored']:>7,} files stored: {result['per_file_ms']:7.2f} ms a new file, "
                  f"{result['per_skipped_file_ms']:6.2f} ms a file already stored; a call of one file "
                  f"{result['call_of_one_file_s']:.2f} s (one skipped: {result['call_of_one_skipped_file_s']:.2f} s); "
                  f"filled in {result['fill_s']:.1f} s")
        print(f"ratio {args.large:,} / {args.small:,} files: {ratio:.2f} a new file, {skipped_ratio:.2f} a skipped one")
        payload = {"format": args.format, "batch": args.batch, "load": load, "small": small, "large": large,
                   "ratio": ratio, "skipped_ratio": skipped_ratio}
        print(f"saved {save('ingest_files', payload)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
