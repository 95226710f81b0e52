"""Time in a reduction: records weighed by age (`half_life_days`) and the log as of a date (`--as-of`)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal, getcontext

import numpy as np
import pyarrow as pa
import pytest

from pipeline.stats import reduce_store
from pipeline.stats.recency import Decay, half_powers, partition_day
from pipeline.stats.reduce import AsOfError
from pipeline.store import Store

START = np.datetime64("2024-01-01T00:00:00", "us")
HOUR = np.timedelta64(3600 * 10**6, "us")


def dated_battles(rng, battles: int = 240, agents: int = 6, days: int = 60) -> list[tuple[str, str, str, float, np.datetime64]]:
    """Battles between `agents` over `days` days, at random hours: (a, b, winner, weight, time); skills drift,
    so old and new battles tell different stories. Weights of 1 and 0.5, some ties."""
    rows = []
    for k in range(battles):
        a, b = rng.choice(agents, 2, replace=False)
        hours = int(rng.integers(days * 24))
        skill = np.arange(agents) * (1 if hours < days * 12 else -1) / 2  # the order reverses halfway
        p = 1 / (1 + np.exp(skill[b] - skill[a]))
        winner = "tie" if rng.random() < 0.15 else "model_a" if rng.random() < p else "model_b"
        rows.append((f"m{a}", f"m{b}", winner, float(rng.choice([1.0, 0.5])), START + hours * HOUR + k * 10**6))
    return rows


def write(path, rows) -> None:
    lines = ["battle_id,model_a,model_b,winner,weight,timestamp"]
    lines += [f"{path.stem}-{k},{a},{b},{w},{weight},{np.datetime_as_string(t)}Z" for k, (a, b, w, weight, t) in enumerate(rows)]
    path.write_text("\n".join(lines) + "\n")


def stored(root, rows, files: int = 3) -> Store:
    root.mkdir(parents=True, exist_ok=True)
    store = Store(root / "store")
    paths = []
    for i, chunk in enumerate(np.array_split(np.arange(len(rows)), files)):
        paths.append(root / f"part{i}.csv")
        write(paths[-1], [rows[j] for j in chunk])
    store.ingest(paths, "battles")
    return store


def weighed_counts(rows, half_life_days: float, newest: np.datetime64 | None = None) -> dict[tuple[str, str], float]:
    """N[x, y] + T[x, y] / 2 by hand: each battle weighs weight * 0.5 ** (age / half-life), age in days from the newest."""
    newest = max(t for *_, t in rows) if newest is None else newest
    counts: dict[tuple[str, str], float] = {}
    for a, b, winner, weight, t in rows:
        w = weight * 0.5 ** (((newest - t) / np.timedelta64(1, "D")) / half_life_days)
        for x, y, share in ((a, b, {"model_a": 1, "tie": 0.5}.get(winner, 0)), (b, a, {"model_b": 1, "tie": 0.5}.get(winner, 0))):
            counts[x, y] = counts.get((x, y), 0.0) + w * share
    return counts


def as_counts(stats, names) -> dict[tuple[str, str], float]:
    wins, ties = stats.pairwise.wins, stats.pairwise.ties
    wins, ties = (m.toarray() if hasattr(m, "toarray") else m for m in (wins, ties))
    label = [names[a] for a in stats.agents]
    return {(label[i], label[j]): float(wins[i, j] + ties[i, j] / 2) for i in range(len(label)) for j in range(len(label))
            if wins[i, j] + ties[i, j]}


@pytest.fixture(scope="module")
def rows():
    return dated_battles(np.random.default_rng(3))


def test_weighed_counts_are_each_battle_weighed_by_its_age_from_the_newest(tmp_path, rows):
    # Planted: the age measured from the oldest record, or the factor squared: the counts differ by far more than the units' grid.
    store = stored(tmp_path, rows)
    stats = reduce_store(store, "battles", {"pairwise"}, half_life_days=10.0)
    got, want = as_counts(stats, store.dictionary("agents").names), weighed_counts(rows, 10.0)
    assert got.keys() == want.keys()
    assert max(abs(got[k] - want[k]) for k in want) < 1e-5  # each weight on the 2^-24 grid
    assert stats.half_life_days == 10.0 and stats.decay.newest == max(t for *_, t in rows).astype(np.int64)


def test_weighed_counts_have_the_same_bytes_whatever_the_partitioning_and_the_cache(tmp_path, rows):
    # Planted: the decay left out of the cache key: the weighed reduction then reads the unweighed partials.
    one, other = stored(tmp_path / "one", rows, 1), stored(tmp_path / "four", rows, 4)
    plain = reduce_store(other, "battles", {"pairwise"}, use_cache=True, target_rows=13)
    weighed = [reduce_store(one, "battles", {"pairwise"}, half_life_days=7.5),
               reduce_store(other, "battles", {"pairwise"}, half_life_days=7.5, use_cache=True, target_rows=13),
               reduce_store(other, "battles", {"pairwise"}, half_life_days=7.5, use_cache=True, target_rows=13)]
    for stats in weighed[1:]:
        assert stats.pairwise.wins.tobytes() == weighed[0].pairwise.wins.tobytes()
        assert stats.pairwise.ties.tobytes() == weighed[0].pairwise.ties.tobytes()
    assert not np.allclose(plain.pairwise.wins, weighed[0].pairwise.wins)


def test_a_long_half_life_gives_the_unweighed_counts(tmp_path, rows):
    store = stored(tmp_path, rows)
    plain = reduce_store(store, "battles", {"pairwise"})
    long = reduce_store(store, "battles", {"pairwise"}, half_life_days=1e9)
    assert np.allclose(long.pairwise.wins, plain.pairwise.wins, rtol=1e-6, atol=1e-6)
    assert np.allclose(long.pairwise.ties, plain.pairwise.ties, rtol=1e-6, atol=1e-6)


def test_as_of_a_date_equals_the_log_truncated_by_hand(tmp_path, rows):
    # Planted: the end of the day excluded (`<` for `<=`), or undated reading of later partitions: the counts differ.
    day = dt.date(2024, 1, 20)
    store = stored(tmp_path / "all", rows)
    kept = [r for r in rows if r[-1] < np.datetime64(day + dt.timedelta(days=1), "us")]
    assert 0 < len(kept) < len(rows)
    truncated = stored(tmp_path / "kept", kept)
    for half_life in (np.inf, 5.0):
        as_of = reduce_store(store, "battles", {"pairwise"}, as_of=day, half_life_days=half_life)
        by_hand = reduce_store(truncated, "battles", {"pairwise"}, half_life_days=half_life)
        names, hand_names = store.dictionary("agents").names, truncated.dictionary("agents").names
        assert as_counts(as_of, names) == as_counts(by_hand, hand_names)
        assert as_of.appearances.sum() == 2 * len(kept)


def test_as_of_before_the_first_record_and_undated_records_are_refused_from_the_manifest(tmp_path, rows):
    store = stored(tmp_path, rows)
    with pytest.raises(AsOfError, match=r"--as-of 2023-12-31 is before the first record \(2024-01-01\)"):
        reduce_store(store, "battles", {"pairwise"}, as_of=dt.date(2023, 12, 31))
    undated = Store(tmp_path / "undated")
    (tmp_path / "undated.csv").write_text("model_a,model_b,winner\na,b,model_a\nb,a,tie\n")
    undated.ingest([tmp_path / "undated.csv"], "battles")
    with pytest.raises(AsOfError, match="needs every record dated, and .*undated.csv has battles without a timestamp"):
        reduce_store(undated, "battles", {"pairwise"}, half_life_days=3.0)


def test_partition_day_reads_the_date_of_a_partition_path():
    assert partition_day("battles/date=2024-02-29/abc.parquet") == dt.date(2024, 2, 29)
    assert partition_day("battles/source=abc/part.parquet") is None


def test_a_decay_needs_a_positive_half_life():
    with pytest.raises(ValueError, match="half_life_days must be positive, not 0"):
        Decay(0, 0)


def test_cached_reductions_as_of_a_date_and_of_the_whole_log_count_each_unit_once(tmp_path, rows):
    # Planted: the units' sum kept by the last cached reduction (`reduce.load_summed`) taken although it counts
    # units the date leaves out: the as-of counts then hold later battles.
    day = dt.date(2024, 1, 20)
    store = stored(tmp_path, rows)
    names = store.dictionary("agents").names
    whole = as_counts(reduce_store(store, "battles", {"pairwise"}), names)
    as_of = as_counts(reduce_store(store, "battles", {"pairwise"}, as_of=day), names)
    for _ in range(2):  # each order of the two, so that each finds the other's sum
        assert as_counts(reduce_store(store, "battles", {"pairwise"}, use_cache=True), names) == whole
        assert as_counts(reduce_store(store, "battles", {"pairwise"}, as_of=day, use_cache=True), names) == as_of


def test_half_powers_are_within_a_few_ulps_of_the_exact_power():
    # Planted: a Taylor series cut after y^2, or the table built with 2^(+j/STEPS): off by far more than 1e-15.
    getcontext().prec = 50
    rng = np.random.default_rng(11)
    exponents = np.r_[rng.random(300) * 60, np.arange(0.0, 5.0), np.nextafter(np.arange(1.0, 5.0), 0.0), 1e-9, 4095 / 4096]
    for x, got in zip(exponents, half_powers(exponents)):
        exact = Decimal(2) ** -Decimal(float(x))  # the float's own value, in 50 digits
        assert abs(Decimal(float(got)) - exact) <= exact * Decimal("1e-15"), x


def test_decay_factors_do_not_depend_on_the_machines_exp2(monkeypatch, rows):
    # Another CPU's or library's exp2 may differ in the last bit, and a factor's last bit can move a weighed
    # battle across a weight unit. Planted: the factors from np.exp2: a libm one ulp lower changes them.
    decay = Decay(max(t for *_, t in rows).astype(np.int64), 7.0)
    timestamps = pa.array(np.array([t for *_, t in rows], dtype="datetime64[us]"))
    here = decay.factors(timestamps)
    exp2 = np.exp2
    monkeypatch.setattr(np, "exp2", lambda x, *args, **kwargs: np.nextafter(exp2(x, *args, **kwargs), 0.0))
    assert decay.factors(timestamps).tobytes() == here.tobytes()
