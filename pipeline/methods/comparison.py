"""Rank comparison: the same statistics rated by other methods, next to a base rating.

Used where a method's known risks call for a second opinion ([Council] names Borda's: favouring
safe answers, gaming). Each spec is run on the same statistics, exactly as given (no hidden
defaults: a bootstrap runs only if the spec asks for one); a spec that is not registered, or that
refuses these statistics (a `RatingError`, or a `ValueError` for its parameters or the log kind),
is reported with the reason, never skipped silently. Any other exception is a bug and propagates.
An agent is flagged for a method when both rate it and its ranks differ by more than `MISMATCH_PLACES`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from pipeline.methods.convergence import RatingError
from pipeline.methods.ratings import Ratings
from pipeline.methods.registry import REGISTRY, Spec, run
from pipeline.stats.counts import Statistics
from pipeline.stats.extras import kind_statistics

MISMATCH_PLACES = 2


def rank_mismatch(base: np.ndarray, other: np.ndarray, places: int = MISMATCH_PLACES) -> np.ndarray:
    """True where both ranks are known (0 marks an agent the method did not rate) and differ by more than `places`."""
    base, other = np.asarray(base), np.asarray(other)
    return (base > 0) & (other > 0) & (np.abs(base - other) > places)


@dataclass(frozen=True)
class Comparison:
    table: pa.Table  # agent, the base rank, one rank column per compared spec, max_rank_difference, flagged_by
    flagged_by: list[list[str]]  # per agent of the base ratings: the specs whose rank differs too much
    unavailable: dict[str, str]  # spec -> why it could not be compared


def _name(spec: str | Spec) -> str:
    return spec.name if isinstance(spec, Spec) else spec.partition(":")[0].strip()


def comparable_needs(specs: Sequence[str | Spec], kind: str) -> frozenset[str]:
    """The statistics that the registered specs read and that `kind` logs can give."""
    wanted = {n for spec in specs if (name := _name(spec)) in REGISTRY for n in REGISTRY[name].statistics}
    return frozenset(wanted & kind_statistics(kind))


def compare_ranks(base: Ratings, label: str, specs: Sequence[str | Spec], stats: Statistics,
                  places: int = MISMATCH_PLACES) -> Comparison:
    """Rate `stats` with each spec and line its ranks up with `base` (agents of `base`, in its row order),
    whose rank column is named `label`."""
    columns: dict[str, list] = {"agent": base.agents.tolist(), label: base.rank.tolist()}
    unavailable: dict[str, str] = {}
    flagged: list[list[str]] = [[] for _ in base.agents]
    gap = np.zeros(len(base.agents), np.int64)
    for spec in specs:
        name, spec = _name(spec), str(spec)
        if name not in REGISTRY:
            unavailable[spec] = "not registered (method not available in this build)"
            continue
        try:
            other = run(Spec.parse(spec), stats)
        except (RatingError, ValueError) as exc:  # a refusal (data or parameters): report it, keep the base
            unavailable[spec] = f"{type(exc).__name__}: {exc}"
            continue
        rows = other.positions(base.agents)
        rank = np.zeros(len(rows), np.int64)  # 0: not rated by `spec` (which may rate no agent at all)
        rank[rows >= 0] = other.rank[rows[rows >= 0]]
        columns[spec] = [int(r) if r > 0 else None for r in rank]
        known = rank > 0
        gap = np.maximum(gap, np.where(known, np.abs(base.rank - rank), 0))
        for i in np.flatnonzero(rank_mismatch(base.rank, rank, places)):
            flagged[i].append(spec)
    columns["max_rank_difference"] = gap.tolist()
    columns["flagged_by"] = [", ".join(f) for f in flagged]
    types = {"agent": pa.int64(), "max_rank_difference": pa.int64(), "flagged_by": pa.string()}
    table = pa.table({k: pa.array(v, types.get(k, pa.int64())) for k, v in columns.items()})
    return Comparison(table, flagged, unavailable)
