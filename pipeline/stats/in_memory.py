"""Statistics of in-memory records, without a store: for tests, notebooks and small jobs.

`statistics_of_records(records, kind)` reads dicts the way the kind's reader reads a JSON file,
gives names ids as ingest would (fresh dictionaries, so ids follow the sorted names), and reduces
the rows as one unit of work, exactly as the store path would. `profile(["A>B=C", "C>A"],
weights=[2, 1])` does that for ranked ballots.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pipeline.logs import log_kind
from pipeline.logs.identity import INGEST_POSITION, ingest_positions
from pipeline.logs.kinds import DICTIONARIES
from pipeline.logs.formats import records_of_objects
from pipeline.stats.counts import CORE_STATISTICS, Statistics
from pipeline.stats.partials import DENSE_MAX_AGENTS, finalize
from pipeline.stats.reduce import check_statistics, reduce_table
from pipeline.store import IdMap, encode


def statistics_of_records(records: Sequence[Mapping], kind: str, statistics: Iterable[str] = CORE_STATISTICS, *,
                          dense: bool | None = None) -> tuple[Statistics, list[str]]:
    """Statistics of records of one log kind, and the agent names in id order; a record the reader
    would quarantine raises, naming its position (from 1), field and reason."""
    chosen = log_kind(kind)
    statistics = check_statistics(kind, statistics)
    result = chosen.read(records_of_objects(records), "<memory>")
    if result.rows_quarantined:
        bad = result.quarantined.to_pylist()[0]
        raise ValueError(f"record {bad['line']}: {bad['field']}: {bad['reason']}")
    maps = {name: IdMap() for name in DICTIONARIES}
    table = encode(chosen, result.table, maps)
    if chosen.record_id:  # as the store writes them: the records' order is their ingest order
        table = table.append_column(INGEST_POSITION, ingest_positions(0, result.lines))
    agents = maps["agents"]
    dense = len(agents) <= DENSE_MAX_AGENTS if dense is None else dense
    partial = reduce_table(table, kind, len(agents), statistics, dense)
    return finalize(kind, partial, statistics, {space: ids.name_order() for space, ids in maps.items()}), agents.names


BALLOT_STATISTICS = CORE_STATISTICS | {"ballot_order"}  # what the voting methods read from ballots


def profile(rankings: Sequence[str], weights: Sequence[float] | None = None, *,
            statistics: Iterable[str] = BALLOT_STATISTICS, dense: bool | None = None) -> tuple[Statistics, list[str]]:
    """Statistics of weak-order rankings (`a>b=c`), as ballots in the order given (their ids are
    `<memory>:1`, `<memory>:2`, ...), and the agent names in id order."""
    records = [{"ranking": r} for r in rankings] if weights is None else [
        {"ranking": r, "weight": float(w)} for r, w in zip(rankings, weights, strict=True)]
    return statistics_of_records(records, "ballots", statistics, dense=dense)
