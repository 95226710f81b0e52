"""Shared helpers for the benchmarks: best-of-n timing and result files."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


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
