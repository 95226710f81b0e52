"""Time in a reduction: the log as it stood on a date (`--as-of`), and records weighed by their age
(`m-elo:half_life_days=D`).

As of a date: the rows with a timestamp up to the end of that UTC day. The store partitions dated
rows by their UTC date (`pipeline.store.partitions`), so those rows are exactly the files of the
partitions `date=` that day or before: the selection is made from the manifest's paths, and no
row is read or filtered (`pipeline.stats.reduce.plan_units`).

Decay: a record of age a days (from the newest record rated, as of the date if one is given) is
weighed 0.5 ** (a / D) times its own weight. The newest timestamp is read from the Parquet
footers' statistics of the newest day's partition files, before any row is read. Each row's
factor depends on its own timestamp and that newest one only, and is quantised to the weights'
units (`pipeline.weights`) like any weight, so the weighted counts still add exactly: the same
bytes whatever the partitions or workers. The factor is computed from a table and IEEE-754
basic operations (`half_powers`), not the machine's `exp2`, so the bytes do not depend on the CPU
or the maths library either. Both need every record dated; a store holding rows
without a timestamp is refused, before any work, naming the file.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.logs.kinds import TIMESTAMP
from pipeline.store.files import reading_store_file
from pipeline.store.location import parquet_file
from pipeline.store.partitions import MICROS_PER_DAY

HALF_LIFE = "half_life_days"  # the parameter of a method that reads counts weighed by age (`Statistics.half_life_days`)
NO_DECAY = math.inf  # its default: every record weighs its own weight
AGES_FROM = "ages_from"  # the instant ages are measured from, as recorded
_DAY = re.compile(r"(?:^|/)date=(\d{4}-\d{2}-\d{2})/")


def partition_day(path: str) -> dt.date | None:
    """The UTC date of a partition file's rows, from its path; None for a partition of undated rows."""
    match = _DAY.search(path)
    return None if match is None else dt.date.fromisoformat(match.group(1))


def parse_as_of(text: str) -> dt.date:
    """An `--as-of` date (YYYY-MM-DD), or ValueError saying what was given."""
    try:
        return dt.date.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"--as-of {text!r} is not a date (YYYY-MM-DD)") from None


def newest_timestamp(paths: list[str]) -> int:
    """The largest timestamp (microseconds since the epoch, UTC) in the partition files `paths`, read from
    their footers' row-group statistics (a row group without statistics is read)."""
    newest = None
    for path in paths:
        with reading_store_file(path):
            file = parquet_file(path)
            column = file.schema_arrow.get_field_index(TIMESTAMP)
            for group in range(file.metadata.num_row_groups):
                stats = file.metadata.row_group(group).column(column).statistics
                if stats is not None and stats.has_min_max:
                    value = pa.scalar(stats.max, pa.timestamp("us", tz="UTC")).cast(pa.int64()).as_py()
                else:
                    value = pc.max(file.read_row_group(group, columns=[TIMESTAMP]).column(0).cast(pa.int64())).as_py()
                if value is not None:
                    newest = value if newest is None else max(newest, value)
    if newest is None:
        raise ValueError("no dated record to measure ages from")
    return int(newest)


STEPS = 4096  # the table of 2^-(j / STEPS): a polynomial covers what is left, under 1 / STEPS


@functools.cache
def half_power_table() -> tuple[np.ndarray, float]:
    """2^-(j / STEPS) for j < STEPS, and ln 2, computed in decimal (software: the same digits on every
    machine) and each rounded once to float64; built on first use (0.1 s), not at import."""
    return np.array([float(Decimal(2) ** (Decimal(-j) / STEPS)) for j in range(STEPS)]), float(Decimal(2).ln())


def half_powers(exponents: np.ndarray) -> np.ndarray:
    """2^-x for each x >= 0, within a few ulps, from a table and IEEE-754 additions, multiplications and
    divisions only: the same bits on every machine, where `np.exp2` may differ in its last bit between
    libraries and CPUs (and a factor's last bit can move a weight across a unit of `pipeline.weights`).
    2^-x = 2^-k * 2^-(j / STEPS) * e^-(r ln 2) with k whole, j < STEPS and r < 1 / STEPS; e^-y by its
    Taylor series to y^5 (what is dropped is below 4e-26 for y < ln 2 / STEPS)."""
    table, ln2 = half_power_table()
    x = np.asarray(exponents, dtype=np.float64)
    whole = np.floor(x)
    fraction = x - whole  # exact
    steps = np.floor(fraction * STEPS)  # exact: STEPS is a power of two
    y = (fraction - steps / STEPS) * ln2
    series = 1.0 - y * (1.0 - y / 2.0 * (1.0 - y / 3.0 * (1.0 - y / 4.0 * (1.0 - y / 5.0))))
    return np.ldexp(table[steps.astype(np.int64)] * series, -np.minimum(whole, 1 << 16).astype(np.int64))


@dataclass(frozen=True)
class Decay:
    """Records weighed by age: 0.5 ** (age in days / `half_life_days`), age from `newest` (microseconds)."""

    newest: int
    half_life_days: float

    def __post_init__(self) -> None:
        if not self.half_life_days > 0:
            raise ValueError(f"{HALF_LIFE} must be positive, not {self.half_life_days}")

    def factors(self, timestamps: pa.ChunkedArray | pa.Array) -> np.ndarray:
        """Each row's weight factor (a row without a timestamp has none: ValueError)."""
        if timestamps.null_count:
            raise ValueError(f"{HALF_LIFE} needs every record dated; {timestamps.null_count} rows have no timestamp")
        micros = pc.cast(timestamps, pa.int64()).to_numpy()
        return half_powers((self.newest - micros) / (MICROS_PER_DAY * self.half_life_days))

    def key(self) -> list[object]:
        """What the weighed counts depend on, for a cache key."""
        return [HALF_LIFE, self.half_life_days, self.newest]

    def record(self) -> dict[str, object]:
        """For run.json: the half-life and the instant ages are measured from."""
        newest = dt.datetime.fromtimestamp(0, dt.UTC) + dt.timedelta(microseconds=self.newest)
        return {HALF_LIFE: self.half_life_days, AGES_FROM: newest.isoformat()}
