"""Log kinds: readers per format, validation and quarantine (DESIGN.md, "Log kinds").

`read_log(path, kind)` is the one entry point: it picks the format from the file suffix and the
normaliser from the kind, and returns a `ReadResult` whose row accounting always balances.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pipeline.logs.ballots import read_ballots
from pipeline.logs.battles import read_battles
from pipeline.logs.games import read_games
from pipeline.logs.preflib import PREFLIB_SUFFIXES, read_preflib
from pipeline.logs.records import TABULAR_SUFFIXES, RawRecords, UnreadableFile, read_records
from pipeline.logs.reviews import read_reviews
from pipeline.logs.scores import read_scores
from pipeline.logs.triage import QUARANTINE_SCHEMA, ReadResult

READERS: dict[str, Callable[[RawRecords, str], ReadResult]] = {
    "battles": read_battles,
    "games": read_games,
    "scores": read_scores,
    "ballots": read_ballots,
    "reviews": read_reviews,
}
KINDS = tuple(READERS)


def read_log(path: str | Path, kind: str) -> ReadResult:
    if kind not in READERS:
        raise ValueError(f"unknown log kind {kind!r}; expected one of {', '.join(KINDS)}")
    path = Path(path)
    if path.suffix.lower() in PREFLIB_SUFFIXES:
        if kind != "ballots":
            raise UnreadableFile(path, f"PrefLib files hold ballots, not {kind}")
        raw = read_preflib(path)
    else:
        raw = read_records(path)
    return READERS[kind](raw, str(path))


def is_log_file(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() in TABULAR_SUFFIXES + PREFLIB_SUFFIXES


__all__ = ["KINDS", "QUARANTINE_SCHEMA", "ReadResult", "UnreadableFile", "is_log_file", "read_log"]
