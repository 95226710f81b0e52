"""Ingest of battles from CSV and from Parquet against the physical anchor of the stage: reading
the same file with pyarrow and writing it as one Parquet file (issue target: at most 2x at 2e7
rows); the peak memory of ingest at two file sizes (bounded: it must not grow with the file, so
that a 1e8-row file ingests; both sizes should pass a few flushes of the partition buffers, 2e6
rows, for the steady state to show); and the peak memory of ingesting ranked ballots (target: 1e6
ballots under 2 GB); and the duplicate check alone, per batch of a million ids, against the number
of ids seen, with the id filter and without it (the galloping search of every run, which touched
every page of the index each batch); with `--stages`, the CPU of each stage of ingest (reading,
triage, names, duplicates, encoding, writing) run one after the other in a process of its own;
with `--repeat N`, N runs of the anchor and the ingest alternated per format, and the median run.
With `--kind games` (7 players a game of 5,000) or `--kind scores` (20 agents a task of 2,000, 8
categories), that kind alone: its ingest from CSV and Parquet against the same anchor, and its CPU
by stage.

    python -m benchmarks.bench_ingest [--rows 2000000] [--days 365] [--ballots 1000000]
                                      [--check-ids 10000000] [--only-check] [--stages]
                                      [--repeat 1] [--kind games|scores]

Battles are generated with a fixed seed (ids, two of 1,000 models, a winner, a timestamp spread
over `days` days). Every measurement runs in a child process of its own, so that its peak RSS is
its own and nothing of one run stays in memory for the next: the baseline (best of two), then the
ingest into a fresh store, per format; then ingests of half the rows and of all of them
(Parquet), whose peaks should be close; then the ballots (2 to 7 of 20 candidates each). Times are
wall-clock and CPU (all threads) of the work alone, imports excluded; on a shared machine the CPU
ratio is the steadier one.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from benchmarks.common import save


def make_battles(rows: int, days: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    names = np.array([f"model-{i:04d}" for i in range(1000)])
    a = rng.integers(0, 1000, rows)
    b = (a + rng.integers(1, 1000, rows)) % 1000
    start = np.datetime64("2024-01-01T00:00:00", "s").astype(np.int64)
    return pa.table({
        "battle_id": pa.array(np.char.add("b", np.arange(rows).astype(str))),
        "model_a": pa.array(names[a]),
        "model_b": pa.array(names[b]),
        "winner": pa.array(np.array(["model_a", "model_b", "tie"])[rng.integers(0, 3, rows)]),
        "timestamp": pa.array(start + rng.integers(0, days * 86_400, rows)),
    })


def seats(rng: np.random.Generator, units: int, per_unit: int, pool: int) -> np.ndarray:
    """`per_unit` distinct members of `pool` for each of `units` (a game's players, a task's agents),
    flattened unit by unit: steps from a random start whose sum stays below `pool`."""
    steps = rng.integers(1, pool // per_unit, (units, per_unit))
    return ((rng.integers(0, pool, (units, 1)) + np.cumsum(steps, axis=1)) % pool).ravel()


def make_games(rows: int, days: int, seed: int = 0, players: int = 5_000, per_game: int = 7) -> pa.Table:
    """Games of `per_game` distinct players of `players`, a place each, one timestamp per game."""
    rng = np.random.default_rng(seed)
    games = rows // per_game
    names = np.array([f"player-{i:05d}" for i in range(players)])
    seated = seats(rng, games, per_game, players)
    places = np.argsort(rng.random((games, per_game)), axis=1) + 1
    start = np.datetime64("2024-01-01T00:00:00", "s").astype(np.int64)
    return pa.table({
        "game_id": pa.array(np.repeat(np.char.add("g", np.arange(games).astype(str)), per_game)),
        "player": pa.array(names[seated]),
        "place": pa.array(places.ravel()),
        "timestamp": pa.array(np.repeat(start + rng.integers(0, days * 86_400, games), per_game)),
    })


def make_scores(rows: int, seed: int = 0, agents: int = 2_000, per_task: int = 20, categories: int = 8) -> pa.Table:
    """Tasks scoring `per_task` distinct agents of `agents`, each task in one of `categories`."""
    rng = np.random.default_rng(seed)
    tasks = rows // per_task
    names = np.array([f"agent-{i:04d}" for i in range(agents)])
    seated = seats(rng, tasks, per_task, agents)
    groups = np.array([f"category-{i}" for i in range(categories)])
    return pa.table({
        "task": pa.array(np.repeat(np.char.add("task-", np.arange(tasks).astype(str)), per_task)),
        "agent": pa.array(names[seated]),
        "score": pa.array(rng.normal(size=tasks * per_task).round(4)),
        "category": pa.array(np.repeat(groups[rng.integers(0, categories, tasks)], per_task)),
    })


def baseline(source: Path, target: Path) -> int:
    table = pq.read_table(source) if source.suffix == ".parquet" else pa_csv.read_csv(source)
    pq.write_table(table, target, compression="zstd")
    return table.num_rows


def ingest(source: Path, store: Path, kind: str = "battles") -> int:
    from pipeline.store import Store

    [report] = Store(store).ingest([source], kind)
    if report.status != "ingested" or report.rows_quarantined:
        raise AssertionError(report)
    return report.rows_accepted


def stage_split(source: Path, store: Path, kind_name: str = "battles") -> dict[str, float]:
    """CPU seconds (all threads) of each stage of ingesting `source` as `kind_name`, the stages run
    one after the other on each batch (ingest overlaps them on threads; their sum is the work)."""
    from pipeline.logs import formats, log_kind
    from pipeline.logs.records import RawRecords
    from pipeline.logs.identity import drop_seen, ingest_positions
    from pipeline.logs.kinds import DICTIONARIES, TIMESTAMP
    from pipeline.logs.names import check_names
    from pipeline.store.dictionary import IdMap
    from pipeline.store.index import FileIds, KindIndex
    from pipeline.store.partitions import PartitionWriter
    from pipeline.store.store import distinct_columns, encode

    kind = log_kind(kind_name)
    maps = {name: IdMap() for name in DICTIONARIES}
    ids = FileIds(KindIndex(store, kind.name), 0)
    writer = PartitionWriter(store, kind.name, "bench", kind.dated, TIMESTAMP, distinct=distinct_columns(kind))
    cpu = dict.fromkeys(("read", "triage", "names", "duplicates", "encode", "write"), 0.0)
    batches, clock = formats.batches(source), time.process_time()
    if not kind.independent_rows:  # read whole, as ingest does (a game spans rows anywhere in the file)
        batches = iter([RawRecords.concat(list(batches))])

    def done(stage: str) -> None:
        nonlocal clock
        now = time.process_time()
        cpu[stage] += now - clock
        clock = now

    while (raw := next(batches, None)) is not None:
        done("read")
        result = kind.read(raw, str(source))
        done("triage")
        result = check_names(result, dict(kind.ids), kind.record_id)
        done("names")
        result = drop_seen(result, kind.record_id, ids, 0, str, unit_rows=kind.unit_column is not None)
        done("duplicates")
        table = encode(kind, result.table, maps)
        if kind.record_id:
            table = table.append_column("ingest_position", ingest_positions(0, result.lines))
        done("encode")
        writer.add(table)
        done("write")
    done("read")
    writer.finish()
    done("write")
    ids.discard()
    return cpu


def anchored_ingest(source: Path, folder: Path, rows: int) -> dict:
    """The anchor (best of two) and then an ingest of `source` into a fresh store, each in a process
    of its own, and their ratios: one run of the comparison (`--repeat` alternates several, since
    on a shared machine one pair can land 20% either way)."""
    plain = min((measure(baseline, source, folder / "plain.parquet") for _ in range(2)), key=lambda m: m["wall_s"])
    store = folder / f"store-{source.suffix[1:]}"
    ingested = measure(ingest, source, store)
    shutil.rmtree(store)
    assert ingested["rows"] == plain["rows"] == rows, (ingested, plain)
    return {"ingest": ingested, "read_write": plain, "ratio": ingested["wall_s"] / plain["wall_s"],
            "cpu_ratio": ingested["cpu_s"] / plain["cpu_s"]}


def measure_stages(source: Path, store: Path, kind: str = "battles") -> tuple[dict[str, float], str]:
    """`stage_split` in a process of its own (its store removed after), and a line of its figures."""
    stages = measure(stage_split, source, store, kind)
    shutil.rmtree(store)
    line = "CPU by stage, one after the other: " + ", ".join(f"{stage} {seconds:.2f} s" for stage, seconds in stages["rows"].items())
    return stages["rows"], line + f" ({stages['cpu_s']:.2f} s in all)"


def _status(field: str) -> int:
    """A memory figure of this process from `/proc/self/status`, in bytes (0 where there is none)."""
    status = Path("/proc/self/status")
    for line in status.read_text().splitlines() if status.exists() else []:
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    return 0


class AnonymousPeak:
    """The peak of the process's anonymous memory (`RssAnon`), sampled every 20 ms: its own
    allocations. The peak RSS (`VmHWM`, of this process's own memory map: `ru_maxrss` would also
    count the parent's memory copied before `exec`) also counts pages of memory-mapped files (the
    id index's runs), which the kernel drops under pressure."""

    def __init__(self) -> None:
        self.peak, self._done = 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(0.02):
            self.peak = max(self.peak, _status("RssAnon"))

    def stop(self) -> int:
        self._done.set()
        self._thread.join()
        return max(self.peak, _status("RssAnon"))


def _measured(work: Callable[..., int | dict], args: tuple, results: multiprocessing.Queue) -> None:
    import pipeline.store  # noqa: F401 (imports are not the work measured)

    anonymous = AnonymousPeak()
    wall, cpu = time.perf_counter(), time.process_time()
    rows = work(*args)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    results.put((rows, wall, cpu, _status("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, anonymous.stop()))


def measure(work: Callable[..., int | dict], *args: object) -> dict:
    """`work(*args)` in a fresh process: rows (or what else it returns), wall and CPU seconds, peak
    RSS and peak anonymous RSS in bytes."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    child = context.Process(target=_measured, args=(work, args, results))
    child.start()
    rows, wall, cpu, peak, anonymous = results.get()
    child.join()
    return {"rows": rows, "wall_s": wall, "cpu_s": cpu, "peak_rss_bytes": peak, "peak_anonymous_bytes": anonymous}


def write_ballots(count: int, path: Path) -> None:
    rng = np.random.default_rng(1)
    names = np.array([f"candidate-{i:02d}" for i in range(20)])
    with path.open("w") as handle:
        handle.write("ballot_id,ranking\n")
        for i in range(count):
            handle.write(f"v{i},{'>'.join(names[rng.permutation(20)[: rng.integers(2, 8)]])}\n")


def write_battles(rows: int, days: int, folder: Path) -> list[Path]:
    table = make_battles(rows, days)
    sources = [folder / f"battles-{rows}.csv", folder / f"battles-{rows}.parquet"]
    pa_csv.write_csv(table, sources[0])
    pq.write_table(table, sources[1], row_group_size=1_000_000)
    return sources


def duplicate_check(ids: int, folder: Path, batch: int = 1_000_000, seed: int = 0) -> list[dict]:
    """CPU seconds of the duplicate check of each batch of one file being ingested into a store
    (random 128-bit hashes, 1% of them seen before; its runs spill to memory-mapped files whose
    pages are released after each lookup, as ingest does) against the ids seen before it: `find`
    (the filter, then the search of the candidates), `search` (every needle searched in the runs:
    no filter) and `add` (the new run, its merges and the filter's update or rebuild), all on the
    same runs."""
    from pipeline.logs.identity import NOT_FOUND, where
    from pipeline.store.index import FileIds, KindIndex, release_mapped

    rng = np.random.default_rng(seed)
    warm = FileIds(KindIndex(folder, "battles"), 0)  # numba's compiled code loaded outside the measure
    warm.add(*rng.integers(0, 2**64, (3, 10), np.uint64, endpoint=False))
    warm.find(*rng.integers(0, 2**64, (2, 10), np.uint64, endpoint=False))
    warm.discard()
    seen, rows = FileIds(KindIndex(folder, "battles"), 0), []
    kept_high = kept_low = np.empty(0, np.uint64)  # every id added, to draw the repeated ones from
    for start in range(0, ids, batch):
        high, low = rng.integers(0, 2**64, (2, batch), np.uint64, endpoint=False)
        if len(kept_high):  # ids of earlier batches again
            again = rng.integers(0, len(kept_high), batch // 100)
            high[: len(again)], low[: len(again)] = kept_high[again], kept_low[again]
        order = np.argsort(high, kind="stable")
        high, low = high[order], low[order]
        timed = {}
        for name in ("find", "search") if start // batch % 2 else ("search", "find"):  # each first on every other batch:
            cpu = time.process_time()  # the first faults in the pages of the newest run
            timed[name] = seen.find(high, low) if name == "find" else seen.search(high, low)
            if name == "search":
                release_mapped(seen.runs)  # as `find` does
            timed[f"{name}_s"] = time.process_time() - cpu
        found, find_s, search_s = timed["find"], timed["find_s"], timed["search_s"]
        assert np.array_equal(found, timed["search"])
        cpu = time.process_time()
        new = found == NOT_FOUND
        seen.add(high[new], low[new], where(0, np.arange(start, start + batch)[new]))
        add_s = time.process_time() - cpu
        kept_high, kept_low = np.concatenate([kept_high, high[new]]), np.concatenate([kept_low, low[new]])
        rows.append({"seen": start, "find_s": find_s, "search_s": search_s, "add_s": add_s,
                     "duplicates": int((~new).sum()), "filter_bytes": seen.id_filter.nbytes if seen.id_filter else 0})
    seen.discard()
    return rows


def report_duplicate_check(ids: int, folder: Path) -> dict:
    rows = duplicate_check(ids, folder)
    first = 1
    while first < len(rows):  # batches 1, 2-3, 4-7, ...: each window has batches of both orders
        window = rows[first: 2 * first]
        mean = {name: sum(r[name] for r in window) / len(window) for name in ("find_s", "search_s", "add_s")}
        print(f"duplicate check of a batch with {window[0]['seen']:>11,} to {window[-1]['seen']:>11,} ids seen: filter + search "
              f"{mean['find_s']:.3f} s CPU, search alone {mean['search_s']:.3f} s ({mean['search_s'] / mean['find_s']:.1f}x), "
              f"add {mean['add_s']:.3f} s; filter {window[-1]['filter_bytes'] / 2**20:.0f} MB")
        first *= 2
    total = {name: sum(r[name] for r in rows) for name in ("find_s", "search_s", "add_s")}
    print(f"duplicate check of {ids:,} ids: filter + search {total['find_s']:.2f} s CPU in all, search alone "
          f"{total['search_s']:.2f} s ({total['search_s'] / total['find_s']:.1f}x); adding {total['add_s']:.2f} s")
    return {"ids": ids, "by_batch": rows, "total": total}


def report_kind(kind: str, rows: int, days: int, folder: Path) -> dict:
    """Ingest of a games or scores log from CSV and from Parquet against the pyarrow read + Parquet
    write of the same file, and the CPU of each stage of its ingest."""
    table = make_games(rows, days) if kind == "games" else make_scores(rows)
    results: dict = {"rows": table.num_rows}
    for source in (folder / f"{kind}.csv", folder / f"{kind}.parquet"):
        fmt = source.suffix[1:]
        if fmt == "csv":
            pa_csv.write_csv(table, source)
        else:
            pq.write_table(table, source, row_group_size=1_000_000)
        plain = min((measure(baseline, source, folder / "plain.parquet") for _ in range(2)), key=lambda m: m["wall_s"])
        ingested = measure(ingest, source, folder / f"store-{kind}-{fmt}", kind)
        shutil.rmtree(folder / f"store-{kind}-{fmt}")
        stages, stage_line = measure_stages(source, folder / f"stages-{kind}-{fmt}", kind)
        assert ingested["rows"] == plain["rows"] == table.num_rows, (ingested, plain)
        results[fmt] = {"ingest": ingested, "read_write": plain, "cpu_ratio": ingested["cpu_s"] / plain["cpu_s"],
                        "stages_cpu_s": stages}
        print(f"{kind} {fmt}: ingest {ingested['wall_s']:.2f} s ({ingested['cpu_s']:.2f} s CPU), pyarrow read + Parquet "
              f"write {plain['wall_s']:.2f} s ({plain['cpu_s']:.2f} s CPU): {ingested['cpu_s'] / plain['cpu_s']:.1f}x CPU; "
              + stage_line)
        source.unlink()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--ballots", type=int, default=1_000_000)
    parser.add_argument("--check-ids", type=int, default=10_000_000, help="ids of the duplicate check alone")
    parser.add_argument("--only-check", action="store_true", help="the duplicate check alone")
    parser.add_argument("--stages", action="store_true", help="CPU per stage of ingest, after the ratios")
    parser.add_argument("--repeat", type=int, default=1, help="alternated runs of anchor and ingest per format; the median is reported")
    parser.add_argument("--kind", choices=("games", "scores"), help="that kind alone, with its CPU per stage")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    folder = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    if args.kind:
        try:
            save(f"ingest-{args.kind}", report_kind(args.kind, args.rows, args.days, folder))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    if args.only_check:
        try:
            save("ingest-check", {"duplicate_check": report_duplicate_check(args.check_ids, folder)})
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    gb = 2**30
    try:
        results: dict = {"rows": args.rows, "days": args.days}
        for source in write_battles(args.rows, args.days, folder):
            fmt = source.suffix[1:]
            runs = [anchored_ingest(source, folder, args.rows) for _ in range(args.repeat)]
            run = sorted(runs, key=lambda r: r["ratio"])[len(runs) // 2]  # the median run (of two, the slower)
            ingested, plain, ratio, cpu_ratio = run["ingest"], run["read_write"], run["ratio"], run["cpu_ratio"]
            results[fmt] = run | {"runs": runs}
            if args.stages:
                results[fmt]["stages_cpu_s"], stage_line = measure_stages(source, folder / f"stages-{fmt}")
                print(f"{fmt}: {stage_line}")
            ratios = ", ".join(f"{r['ratio']:.2f}" for r in runs)
            spread = f" (the median of {len(runs)} runs, each against its own anchor: {ratios}x wall)" if len(runs) > 1 else ""
            print(f"{fmt}: ingest {ingested['wall_s']:.2f} s ({ingested['cpu_s']:.2f} s CPU), pyarrow read + Parquet write "
                  f"{plain['wall_s']:.2f} s ({plain['cpu_s']:.2f} s CPU): {ratio:.1f}x wall, {cpu_ratio:.1f}x CPU "
                  f"(target 2x){spread}; peak RSS {ingested['peak_rss_bytes'] / gb:.2f} GB "
                  f"({ingested['peak_rss_bytes'] / args.rows:.0f} bytes per row; anonymous {ingested['peak_anonymous_bytes'] / gb:.2f} GB)")
            source.unlink()
        half = args.rows // 2
        [small_csv, small] = write_battles(half, args.days, folder)
        small_csv.unlink()
        peaks = {}
        for rows, source in ((half, small), (args.rows, None)):
            if source is None:
                [big_csv, source] = write_battles(rows, args.days, folder)
                big_csv.unlink()
            peaks[rows] = measure(ingest, source, folder / f"store-{rows}")
            shutil.rmtree(folder / f"store-{rows}")
        growth = {name: peaks[args.rows][name] / peaks[half][name] for name in ("peak_rss_bytes", "peak_anonymous_bytes")}
        results["bounded_memory"] = {"by_rows": peaks, "growth": growth}
        for name, label in (("peak_rss_bytes", "peak RSS"), ("peak_anonymous_bytes", "peak anonymous RSS")):
            print(f"bounded memory: {label} {peaks[half][name] / gb:.2f} GB at {half:,} rows, "
                  f"{peaks[args.rows][name] / gb:.2f} GB at {args.rows:,} rows ({growth[name]:.2f}x for twice the rows)")
        write_ballots(args.ballots, folder / "ballots.csv")
        ballots = measure(ingest, folder / "ballots.csv", folder / "store-ballots", "ballots")
        assert ballots["rows"] == args.ballots, ballots
        results["ballots"] = ballots
        print(f"ballots: {args.ballots:,} in {ballots['wall_s']:.2f} s, peak RSS {ballots['peak_rss_bytes'] / gb:.2f} GB "
              f"(target under 2 GB; anonymous {ballots['peak_anonymous_bytes'] / gb:.2f} GB)")
        results["duplicate_check"] = report_duplicate_check(args.check_ids, folder)
        save("ingest", results)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
