"""Incremental reductions: cached partials are reused and equal a reduction from scratch; the
cache holds data only, and a planted, truncated or tampered file is refused and recomputed."""

from __future__ import annotations

import dataclasses
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse as sp

from pipeline.paths import UnsafePath
from pipeline.stats import CORE_STATISTICS, EXTRAS, reduce_store
from pipeline.stats import reduce as reduce_module
from pipeline.stats.cache import CHECKSUM, KEY, SNAPSHOT_UNITS, checksum
from pipeline.stats.reduce import plan_units
from pipeline.store import Store
from tests.conftest import SAMPLES
from tests.stats.test_reduce import build_store, random_orders, write_ballots

# A sample of each stored kind, so that every registered extra is cached at least once.
SAMPLE_STORES = {"battles": "arena_bench/arena_hard_battles.csv", "games": "f1/races_2021_2023.csv",
                 "scores": "livebench/livebench_2024-08-31.csv", "ballots": "arena_bench/question_ballots.jsonl",
                 "reviews": "council/reviews.jsonl"}


def same(one, two) -> bool:
    return (one.agents.tolist() == two.agents.tolist()
            and one.pairwise.dense().wins.tobytes() == two.pairwise.dense().wins.tobytes()
            and one.pairwise.dense().ties.tobytes() == two.pairwise.dense().ties.tobytes()
            and all(one.positions.groups[k].tobytes() == two.positions.groups[k].tobytes() for k in two.positions.groups)
            and one.histogram.ballots == two.histogram.ballots)


def assert_identical(one, two, where: str = "statistics") -> None:
    """The same value, bit for bit, through dataclasses, containers, arrays, sparse matrices and tables."""
    assert type(one) is type(two), where
    if dataclasses.is_dataclass(one):
        for f in dataclasses.fields(one):
            assert_identical(getattr(one, f.name), getattr(two, f.name), f"{where}.{f.name}")
    elif isinstance(one, np.ndarray):
        assert (one.dtype, one.shape) == (two.dtype, two.shape), where
        assert (one.tolist() == two.tolist()) if one.dtype == object else one.tobytes() == two.tobytes(), where
    elif sp.issparse(one):
        assert one.shape == two.shape and one.dtype == two.dtype and (one != two).nnz == 0, where
    elif isinstance(one, dict):
        assert list(one) == list(two), where
        for key in one:
            assert_identical(one[key], two[key], f"{where}[{key!r}]")
    elif isinstance(one, (tuple, list)):
        assert len(one) == len(two), where
        for i, (x, y) in enumerate(zip(one, two)):
            assert_identical(x, y, f"{where}[{i}]")
    elif isinstance(one, pa.Table):
        assert one.equals(two), where
    else:
        assert one == two or (one != one and two != two), where


def split_sample(source: Path, folder: Path, parts: int = 3) -> list[Path]:
    """`source` (CSV or JSONL) as `parts` files of consecutive lines; rows of one game stay together."""
    header, *lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    if source.suffix == ".jsonl":
        header, lines = "", [header, *lines]
    cuts = [len(lines) * i // parts for i in range(parts + 1)]
    game = lambda line: line.split(",", 1)[0]  # noqa: E731  (f1: game_id comes first; harmless elsewhere)
    for i in range(1, parts):
        while source.name.startswith("races") and cuts[i] < len(lines) and game(lines[cuts[i]]) == game(lines[cuts[i] - 1]):
            cuts[i] += 1
    folder.mkdir()
    files = [folder / f"part{i}{source.suffix}" for i in range(parts)]
    for path, lo, hi in zip(files, cuts, cuts[1:]):
        path.write_text(header + "".join(lines[lo:hi]), encoding="utf-8")
    return files


def sample_store(root: Path, kind: str) -> Store:
    """A store of the kind's sample, ingested as three files: several partials to merge."""
    store = Store(root / "store")
    reports = store.ingest(split_sample(SAMPLES / SAMPLE_STORES[kind], root / "sample"), kind)
    assert all(r.status == "ingested" and r.rows_accepted > 0 for r in reports), reports
    return store


def every_statistic(kind: str) -> frozenset[str]:
    return CORE_STATISTICS | {name for name, extra in EXTRAS.items() if kind in extra.kinds}


def cache_files(store: Store) -> list[Path]:
    return sorted((store.root / "cache").rglob("*.npz"))


def test_the_samples_cover_every_registered_extra():
    assert set().union(*(every_statistic(kind) for kind in SAMPLE_STORES)) >= EXTRAS.keys()


@pytest.mark.parametrize("kind", sorted(SAMPLE_STORES))
def test_every_statistic_comes_back_from_the_cache_bit_for_bit(tmp_path, monkeypatch, kind):
    store = sample_store(tmp_path, kind)
    statistics = every_statistic(kind)
    fresh = reduce_store(store, kind, statistics, target_rows=200)
    first = reduce_store(store, kind, statistics, target_rows=200, use_cache=True)
    kept = [name for name in statistics & EXTRAS.keys() if EXTRAS[name].kept is not None]  # a snapshot each
    per_unit = [name for name in kept if EXTRAS[name].kept.unit_partials]  # and a file each per unit
    summed = 1  # the sum of the units' partials (`reduce.load_summed`)
    assert len(cache_files(store)) == len(plan_units(store, kind, 200)) * (1 + len(per_unit)) + len(kept) + summed >= 4
    monkeypatch.setattr(reduce_module, "reduce_unit", lambda *a: pytest.fail("re-read a cached unit"))
    second = reduce_store(store, kind, statistics, target_rows=200, use_cache=True)
    assert_identical(fresh, first)
    assert_identical(fresh, second)


@pytest.mark.parametrize("dense", [True, False])
def test_second_reduction_reads_only_the_cache(tmp_path, monkeypatch, dense):
    store = build_store(tmp_path, "ballots", random_orders(np.random.default_rng(0), 40), 3)
    fresh = reduce_store(store, "ballots", CORE_STATISTICS, dense=dense)
    first = reduce_store(store, "ballots", CORE_STATISTICS, dense=dense, use_cache=True)
    assert len(cache_files(store)) == 3 + 1  # one partial per source file, and their sum
    monkeypatch.setattr(reduce_module, "reduce_unit", lambda *a: pytest.fail("re-read a cached unit"))
    second = reduce_store(store, "ballots", CORE_STATISTICS, dense=dense, use_cache=True)
    [summed] = [path for path in cache_files(store) if is_summed(path)]
    for path in cache_files(store):  # the sum alone holds them: the units' own files are not opened
        if path != summed:
            path.unlink()
    third = reduce_store(store, "ballots", CORE_STATISTICS, dense=dense, use_cache=True)
    assert same(fresh, first) and same(fresh, second) and same(fresh, third)


@pytest.mark.parametrize("dense", [True, False])
def test_new_file_with_new_agents_reuses_old_partials(tmp_path, dense):
    store = build_store(tmp_path, "ballots", random_orders(np.random.default_rng(1), 30), 2)
    reduce_store(store, "ballots", CORE_STATISTICS, dense=dense, use_cache=True)
    newcomer = tmp_path / "new.jsonl"
    write_ballots(newcomer, [([["zz"], ["p1"], ["yy", "p2"]], 2.0)])  # two agents the dictionary has not seen
    store.ingest([newcomer], "ballots")
    incremental = reduce_store(store, "ballots", CORE_STATISTICS, dense=dense, use_cache=True)
    assert same(incremental, reduce_store(store, "ballots", CORE_STATISTICS, dense=dense))
    assert len(incremental.agents) == 9


class Payload:
    """Unpickling this runs a command: what the cache used to execute when a store was tampered with."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        import os

        return os.system, (f"touch {self.marker}",)


def planted(store: Store, kind: str) -> tuple[list[Path], object]:
    """The files of cached partials after a reduction of every statistic (not the snapshots), and its result."""
    result = reduce_store(store, kind, every_statistic(kind), target_rows=200, use_cache=True)
    return [path for path in cache_files(store) if not is_snapshot(path)], result


def is_snapshot(path: Path) -> bool:
    with np.load(path, allow_pickle=False) as stored:
        return SNAPSHOT_UNITS in stored.files


def is_summed(path: Path) -> bool:
    """Whether the file is the sum of the units' partials (a snapshot holding a partial's fields)."""
    with np.load(path, allow_pickle=False) as stored:
        return SNAPSHOT_UNITS in stored.files and "fields" in stored.files


def truncate(path: Path, marker: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def flip_a_bit(path: Path, marker: Path) -> None:
    """A valid .npz whose counts were changed, keeping the recorded key and checksum."""
    with np.load(path, allow_pickle=False) as stored:
        arrays = {name: stored[name] for name in stored.files}
    arrays["appearances"] = arrays["appearances"].copy()
    arrays["appearances"][0] += 1
    with path.open("wb") as handle:
        np.savez(handle, **arrays)


def pickled_object_array(path: Path, marker: Path) -> None:
    with np.load(path, allow_pickle=False) as stored:
        arrays = {name: stored[name] for name in stored.files}
    arrays["appearances"] = np.array([Payload(marker)], dtype=object)
    with path.open("wb") as handle:
        np.savez(handle, **arrays)


def plain_pickle(path: Path, marker: Path) -> None:
    path.write_bytes(pickle.dumps(Payload(marker)))


def pickle_in_a_zip(path: Path, marker: Path) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("appearances.npy", pickle.dumps(Payload(marker)))


def another_units_file(path: Path, marker: Path) -> None:
    """A valid partial of another unit, copied over this one's: its recorded key gives it away."""
    other = next(p for p in sorted(path.parent.glob("*.npz")) if p != path)
    path.write_bytes(other.read_bytes())


@pytest.mark.parametrize("victim", ["a unit's partial", "the sum"])
@pytest.mark.parametrize("tamper", [plain_pickle, pickle_in_a_zip, pickled_object_array, truncate, flip_a_bit,
                                    another_units_file])
def test_a_planted_or_damaged_cache_file_is_refused_and_recomputed(tmp_path, tamper, victim, caplog):
    kind = "battles"
    store = sample_store(tmp_path, kind)
    files, expected = planted(store, kind)
    marker = tmp_path / "executed"
    [summed] = [path for path in cache_files(store) if is_summed(path)]
    if victim == "the sum":
        victim, what = summed, "snapshot"
    else:  # read only without the sum
        summed.unlink()
        victim, what = files[0], "partial"
    tamper(victim, marker)
    again = reduce_store(store, kind, every_statistic(kind), target_rows=200, use_cache=True)
    assert not marker.exists()
    assert_identical(expected, again)
    assert f"{victim}: cached {what} refused" in caplog.text
    with np.load(victim, allow_pickle=False) as rewritten:  # recomputed and written back, valid
        arrays = {name: rewritten[name] for name in rewritten.files}
    assert bytes(arrays.pop(CHECKSUM)).decode() == checksum({k: v for k, v in arrays.items() if k != KEY})


def test_old_pickle_files_in_the_cache_are_never_opened(tmp_path):
    store = build_store(tmp_path, "ballots", random_orders(np.random.default_rng(2), 20), 2)
    marker = tmp_path / "executed"
    folder = store.root / "cache" / "ballots"
    folder.mkdir(parents=True)
    for i in range(4):
        plain_pickle(folder / f"{i:032x}.pkl", marker)
    reduce_store(store, "ballots", CORE_STATISTICS, use_cache=True)
    reduce_store(store, "ballots", CORE_STATISTICS, use_cache=True)
    assert not marker.exists() and len(cache_files(store)) == 2 + 1  # a partial per file, and their sum


def test_a_symlinked_cache_folder_is_refused_and_nothing_is_written_through_it(tmp_path):
    store = build_store(tmp_path, "ballots", random_orders(np.random.default_rng(3), 20), 2)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (store.root / "cache").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(UnsafePath, match="symbolic link"):
        reduce_store(store, "ballots", CORE_STATISTICS, use_cache=True)
    assert list(elsewhere.iterdir()) == []


def test_the_cache_code_has_no_pickle():
    """Nothing under pipeline/ reads stored data with pickle (numpy loads refuse it too)."""
    root = Path(__file__).resolve().parents[2] / "pipeline"
    offenders = [str(p) for p in root.rglob("*.py") if "import pickle" in p.read_text() or "cloudpickle" in p.read_text()
                 or "allow_pickle=True" in p.read_text()]
    assert offenders == []
