"""The nightly's reduction after new files, through the store's cache of partials, against the
reduction of the new rows alone (issue 36's target: at most 3x), for elo, m-elo, copeland,
deviation and council-borda; and the same bytes as a reduction from scratch.

    python -m benchmarks.bench_nightly_incremental [--rows 10000000] [--new 100000] [--reviews N]
                                                   [--files 10] [--repeat 3] [--method NAME ...] [--keep DIR]

Battles (`rows` of them in `files` Parquet logs, then `new` more in one file that also brings new
agents, judges and prompts) and council reviews (`reviews`, default `rows`, 5 models a query and
5 reviews a query, as Parquet in the record's own fields; then `new` more reviews with a new model)
are generated with a fixed seed and ingested (time reported apart). With `--keep DIR` the logs and
the stores of the old logs and of the new one alone, once ingested, stay in DIR for later runs of
the same sizes (ingesting 1e7 reviews takes most of an hour; each run then copies the old store and
ingests the new log into the copy). Per method, with the statistics it needs alone:
1. the reduction of the old store through the cache (it fills the cache: the previous night);
2. the new files ingested; the nightly: the reduction through the cache, reading the new units
   (best of `repeat`: the cache is put back as the previous night left it before each repetition,
   outside the time);
3. the baseline: the reduction, without cache, of a store holding only the new files (best of `repeat`);
4. the reduction from scratch of the whole store, without cache: its statistics must equal the
   nightly's bit for bit (a SHA-256 over every array, in field order) before any time is reported.
The ratio reported is nightly / baseline, both wall-clock best-of, measured in the same process
one after the other; the load (`os.getloadavg`) is saved with them.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import scipy.sparse as sp

from benchmarks.common import best_of, save
from pipeline.board import needed_statistics
from pipeline.methods.registry import Spec
from pipeline.stats import reduce_store
from pipeline.store import Store

BATTLE_METHODS = ("elo", "m-elo", "copeland", "deviation")
REVIEW_METHODS = ("council-borda",)
MODELS, JUDGES, PROMPTS = 40, 8, 6  # deviation builds a game over prompts x agents x agents: kept small
PER_QUERY = 5  # models answering a query, and reviews of it


def make_battles(path: Path, rows: int, first: int, models: int, day: int, rng: np.random.Generator) -> None:
    names = np.array([f"model-{i:03d}" for i in range(models)])
    a = rng.integers(0, models, rows)
    b = (a + rng.integers(1, models, rows)) % models
    start = (np.datetime64("2024-01-01") + day).astype("datetime64[s]").astype(np.int64)
    table = pa.table({
        "battle_id": pa.array(np.char.add("b", np.arange(first, first + rows).astype(str))),
        "model_a": pa.array(names[a]).dictionary_encode(),
        "model_b": pa.array(names[b]).dictionary_encode(),
        "winner": pa.array(np.array(["model_a", "model_b", "tie"])[rng.integers(0, 3, rows)]).dictionary_encode(),
        "judge": pa.array(np.char.add("judge-", rng.integers(0, JUDGES + day // 100, rows).astype(str))).dictionary_encode(),
        "prompt": pa.array(np.char.add("prompt-", rng.integers(0, PROMPTS + day // 100, rows).astype(str))).dictionary_encode(),
        "timestamp": pa.array(np.sort(start + rng.integers(0, 86_400, rows)).astype("datetime64[s]")),
    })
    pq.write_table(table, path, row_group_size=250_000)


def make_reviews(path: Path, reviews: int, first_query: int, models: int, rng: np.random.Generator) -> None:
    """`reviews` council reviews as Parquet, in the record's own fields (`ranking` a list of labels,
    `label_to_model` a map), which the reviews reader takes as it takes JSONL, without the JSON text
    to parse; built on whole columns, so that generating 1e7 takes seconds, not minutes."""
    queries = reviews // PER_QUERY
    labels = pa.array([f"Response {c}" for c in "ABCDE"[:PER_QUERY]])
    names = pa.array([f"model-{i:03d}" for i in range(models)])
    answering = np.argsort(rng.random((queries, models)), axis=1)[:, :PER_QUERY]  # each query's models, distinct
    mapped = np.repeat(answering, PER_QUERY, axis=0).ravel()  # every review's label_to_model, labels in order
    ranking = np.argsort(rng.random((queries * PER_QUERY, PER_QUERY)), axis=1).ravel()  # each review a permutation
    offsets = pa.array(np.arange(0, len(mapped) + 1, PER_QUERY, dtype=np.int32))
    table = pa.table({
        "query_id": pa.array(np.char.add("q", np.repeat(np.arange(first_query, first_query + queries), PER_QUERY).astype(str))),
        "reviewer": names.take(pa.array(answering.ravel())),
        "ranking": pa.ListArray.from_arrays(offsets, labels.take(pa.array(ranking))),
        "label_to_model": pa.MapArray.from_arrays(offsets, labels.take(pa.array(np.tile(np.arange(PER_QUERY), len(answering) * PER_QUERY))),
                                                  names.take(pa.array(mapped))),
        "abstained": pa.array(np.zeros(queries * PER_QUERY, bool)),
    })
    pq.write_table(table, path, row_group_size=250_000)


def digest(value, hasher=None) -> str:
    """A SHA-256 over a statistic's arrays, sparse matrices, tables and scalars, in field order."""
    hasher = hasher or hashlib.sha256()
    if dataclasses.is_dataclass(value):
        for field in dataclasses.fields(value):
            hasher.update(field.name.encode())
            digest(getattr(value, field.name), hasher)
    elif isinstance(value, np.ndarray):
        hasher.update(f"{value.dtype}{value.shape}".encode())
        hasher.update(repr(value.tolist()).encode() if value.dtype == object else np.ascontiguousarray(value).tobytes())
    elif sp.issparse(value):
        digest(value.toarray(), hasher)
    elif isinstance(value, dict):
        for key in value:
            hasher.update(repr(key).encode())
            digest(value[key], hasher)
    elif isinstance(value, (tuple, list)):
        hasher.update(f"[{len(value)}]".encode())
        for item in value:
            digest(item, hasher)
    elif isinstance(value, pa.Table):
        for column in value.columns:
            hasher.update(repr(column.to_pylist()).encode())
    elif isinstance(value, (pa.Array, pa.ChunkedArray)):
        hasher.update(f"{value.type}".encode() + repr(value.to_pylist()).encode())
    else:
        hasher.update(repr(value).encode())
    return hasher.hexdigest()


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def ingested(keep: Path, name: str, files: list[Path], kind: str) -> tuple[Path, float, bool]:
    """A store of `files` ingested once into `keep/name` (a real ingest, every row read, checked and
    partitioned by the store) and reused by later runs given the same `--keep` folder: its marker,
    written once the ingest has ended with every row accepted, holds the ingest's time; and whether it was kept."""
    root, marker = keep / name, keep / f"{name}.json"
    if marker.exists():
        return root, json.loads(marker.read_text())["ingest_s"], True
    shutil.rmtree(root, ignore_errors=True)
    seconds, reports = timed(lambda: Store(root).ingest(files, kind))
    if refused := [r.source for r in reports if r.status != "ingested" or r.rows_quarantined]:
        raise SystemExit(f"{name}: {refused} not ingested whole")
    marker.write_text(json.dumps({"ingest_s": seconds}))
    return root, seconds, False


def measure(kind: str, methods: tuple[str, ...], old: list[Path], new: list[Path], keep: Path, work: Path, repeat: int) -> dict:
    old_root, ingest_old, reused = ingested(keep, f"{kind}-old", old, kind)
    alone = Store(ingested(keep, f"{kind}-new-only", new, kind)[0])
    store = Store(work / f"{kind}-store")
    shutil.copytree(old_root, store.root)  # the kept store stays as ingested: each run adds the new files to a copy
    wanted = {method: needed_statistics([Spec.parse(method)]) for method in methods}
    for statistics in wanted.values():  # the previous night: the cache holds the old units
        reduce_store(store, kind, statistics, use_cache=True)
    ingest_new, _ = timed(lambda: store.ingest(new, kind))
    print(f"{kind}: ingest of the old logs {ingest_old:.1f} s{' (an earlier run, kept)' if reused else ''}, "
          f"of the new one {ingest_new:.1f} s", flush=True)
    previous_night = work / f"{kind}-cache-before"  # the old units' partials and the snapshots of kept statistics
    shutil.copytree(store.root / "cache", previous_night)

    def nightly(statistics: frozenset[str]) -> float:
        """The best time of the nightly's reduction, the cache put back as the previous night left it
        before each repetition (so that each reads the new units and extends the snapshots, as the
        first night after the new files does)."""
        best = float("inf")
        for _ in range(repeat):
            shutil.rmtree(store.root / "cache")
            shutil.copytree(previous_night, store.root / "cache")
            os.sync()  # the copy on disk: its writeback would otherwise slow the fsync of the nightly's own writes
            best = min(best, timed(lambda: reduce_store(store, kind, statistics, use_cache=True))[0])
        return best

    results = {}
    for method, statistics in wanted.items():
        first = nightly(statistics)
        baseline, _ = best_of(lambda s=statistics: reduce_store(alone, kind, s), repeat)
        again, reduced = best_of(lambda s=statistics: reduce_store(store, kind, s, use_cache=True), 1)
        scratch_time, scratch = timed(lambda s=statistics: reduce_store(store, kind, s))
        same = digest(reduced) == digest(scratch)
        if not same:
            raise SystemExit(f"{method}: the nightly's statistics differ from a reduction from scratch")
        results[method] = {"statistics": sorted(statistics), "nightly_s": first, "nightly_all_cached_s": again,
                           "new_rows_alone_s": baseline, "from_scratch_s": scratch_time, "ratio": first / baseline,
                           "same_bytes_as_scratch": same}
        print(f"{method:14s} nightly {first:7.3f} s (all cached {again:6.3f}) | new rows alone {baseline:6.3f} s | "
              f"ratio {first / baseline:5.2f} | from scratch {scratch_time:7.2f} s | same bytes: {same}", flush=True)
    return {"ingest_old_s": ingest_old, "ingest_new_s": ingest_new, "methods": results}


def logs(keep: Path, kind: str, files: int, make) -> tuple[list[Path], list[Path]]:
    """The old logs (`files` of them) and the new one of `kind`, written by `make(path, i)` (i = files for
    the new one) unless a kept folder holds them all already."""
    suffix = "parquet"
    old = [keep / f"{kind}-{i:02d}.{suffix}" for i in range(files)]
    new = [keep / f"{kind}-new.{suffix}"]
    if not all(path.exists() for path in old + new):
        for i, path in enumerate(old + new):
            make(path.with_suffix(".part"), i)
            path.with_suffix(".part").rename(path)
    return old, new


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--new", type=int, default=None, help="new rows (default rows / 100)")
    parser.add_argument("--reviews", type=int, default=None, help="stored reviews (default rows)")
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--method", action="append", choices=BATTLE_METHODS + REVIEW_METHODS,
                        help="measure only these methods (repeatable; default: all)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="a folder keeping the generated logs and the ingested stores for later runs of the same sizes "
                             "(an ingest of 1e7 reviews takes most of an hour; default: a temporary folder, removed)")
    args = parser.parse_args()
    chosen = args.method or BATTLE_METHODS + REVIEW_METHODS
    battle_methods = tuple(m for m in BATTLE_METHODS if m in chosen)
    review_methods = tuple(m for m in REVIEW_METHODS if m in chosen)
    new_rows = args.new or args.rows // 100
    reviews = args.reviews or args.rows
    work = Path(tempfile.mkdtemp(prefix="bench-nightly-"))
    keep = args.keep or work / "kept"
    sizes = {"rows": args.rows, "new": new_rows, "reviews": reviews, "files": args.files}
    try:
        keep.mkdir(parents=True, exist_ok=True)
        marker = keep / "sizes.json"
        if marker.exists() and json.loads(marker.read_text()) != sizes:
            raise SystemExit(f"--keep {keep}: it holds the logs and stores of {marker.read_text().strip()}, not {json.dumps(sizes)}")
        marker.write_text(json.dumps(sizes))
        payload = sizes | {"load_before": os.getloadavg()}
        print(f"load {os.getloadavg()}; " + "; ".join(
            f"{count:,} {kind} + {new_rows:,} new" for kind, count, methods in
            (("battles", args.rows, battle_methods), ("reviews", reviews, review_methods)) if methods), flush=True)
        if battle_methods:
            rng = np.random.default_rng(0)
            first = np.linspace(0, args.rows, args.files + 1).astype(np.int64)  # each day's first battle

            def battles(path: Path, day: int) -> None:  # the new file: two new models, a new judge and a new prompt (day >= 100)
                if day < args.files:
                    make_battles(path, int(first[day + 1] - first[day]), int(first[day]), MODELS, day, rng)
                else:
                    make_battles(path, new_rows, args.rows, MODELS + 2, 100, rng)

            old, new = logs(keep, "battles", args.files, battles)
            payload["battles"] = measure("battles", battle_methods, old, new, keep, work, args.repeat)
        if review_methods:
            rng = np.random.default_rng(1)
            per_file = reviews // args.files

            def council(path: Path, i: int) -> None:  # the new file: a new model, new queries among the kept ones' ids
                if i < args.files:
                    make_reviews(path, per_file, i * per_file // PER_QUERY, MODELS, rng)
                else:
                    make_reviews(path, new_rows, reviews // PER_QUERY + 1, MODELS + 2, rng)

            old, new = logs(keep, "reviews", args.files, council)
            payload["reviews"] = measure("reviews", review_methods, old, new, keep, work, args.repeat)
        payload["load_after"] = os.getloadavg()
        print(f"saved {save(f'nightly_incremental_{args.rows}', payload)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
