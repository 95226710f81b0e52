"""Shared helpers for the benchmarks: best-of-n timing, result files, and comparisons that count
only where the contender's answer agrees with vase's."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"

# What a ratio compares; every printed comparison names one.
SOLVER_ONLY = "solver only"      # each side's solver on its own summary of the data, built before the clock starts
WHOLE_COMMAND = "whole command"  # a fresh process from the log file to written ratings (start-up, reading, writing)
PER_ROUND = "per round"          # bootstrap: seconds per resample round, the same number of rounds on each side


def best_of(fn: Callable[[], object], repeat: int = 3) -> tuple[float, object]:
    """The fastest of `repeat` runs (the least disturbed by other load), and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def save(topic: str, payload: dict) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{topic}.json"
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return path


def machine() -> dict:
    """What the figures were measured on: the load says how far a shared machine's timings can be trusted."""
    return {"cpus": os.cpu_count(), "load_average": [round(x, 2) for x in os.getloadavg()],
            "at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


@dataclass(frozen=True)
class Verdict:
    """Whether a contender's answer is vase's within a stated tolerance; `detail` says how far it is."""

    agrees: bool
    detail: str


def non_result(detail: str) -> Verdict:
    return Verdict(False, f"non-result: {detail}")


def scores_agree(ours: np.ndarray, theirs: np.ndarray | None, tolerance: float, unit: str = "",
                 centre: bool = True) -> Verdict:
    """Largest |difference| of two score vectors in the same agent order (each centred on its mean when the
    scale has no fixed origin, as Elo's has not). One score for every agent where vase's differ is a non-result,
    reported as such rather than as a distance."""
    if theirs is None:
        return non_result("no answer")
    ours, theirs = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    if ours.shape != theirs.shape:
        return non_result(f"{theirs.size} scores for {ours.size} agents")
    if not np.all(np.isfinite(theirs)):
        return non_result(f"{int((~np.isfinite(theirs)).sum())} of {theirs.size} scores not finite")
    if len(theirs) > 1 and np.ptp(theirs) <= 1e-9 * max(1.0, float(np.abs(theirs).max())) < np.ptp(ours):
        return non_result(f"the same score ({theirs[0]:.6g}) for all {theirs.size} agents")
    if centre:
        ours, theirs = ours - ours.mean(), theirs - theirs.mean()
    gap = float(np.abs(ours - theirs).max(initial=0.0))
    return Verdict(gap <= tolerance, f"max |difference| {gap:.3g}{unit} (tolerance {tolerance:g}{unit})")


@dataclass(frozen=True)
class Comparison:
    """One timed comparison: vase's time, the contender's, and the ratio only when the answers agree."""

    case: str
    level: str        # SOLVER_ONLY, WHOLE_COMMAND, PER_ROUND (or a phrase saying what else is compared)
    contender: str    # who, and where the code comes from ("FastChat compute_bt (verbatim copy)", "vase's rewrite ...")
    vase_s: float
    contender_s: float | None
    verdict: Verdict

    @property
    def ratio(self) -> float | None:
        """contender / vase: above 1 vase is faster. None where the answers disagree: a ratio against a
        non-result, or against another question's answer, means nothing."""
        if not self.verdict.agrees or self.contender_s is None or self.vase_s <= 0:
            return None
        return self.contender_s / self.vase_s

    def line(self) -> str:
        theirs = "-" if self.contender_s is None else f"{self.contender_s:.4g} s"
        ratio = self.ratio
        said = (f"{ratio:.3g}x {'faster' if ratio >= 1 else 'SLOWER'}" if ratio is not None
                else "NO RATIO (answers disagree)")
        return (f"[{self.level}] {self.case}: vase {self.vase_s:.4g} s, {self.contender} {theirs} -> {said}; "
                f"{self.verdict.detail}")

    def record(self) -> dict:
        return asdict(self) | {"ratio": self.ratio}


def report(topic: str, comparisons: list[Comparison], extra: dict | None = None) -> Path:
    """Print one line per comparison and write them, with the machine and its load, to results/TOPIC.json."""
    for comparison in comparisons:
        print(comparison.line(), flush=True)
    return save(topic, {"machine": machine(), "comparisons": [c.record() for c in comparisons]} | (extra or {}))
