"""The order of ballots, for the one count that depends on it: whole-ballot STV ([VasE] via OpenSpiel).

OpenSpiel's STV, which made the STV tables of [VasE], uses up an elected agent's ballots in the
order the profile lists them. vase lists ballots by their id, the unit's own name: `ballot_id` of a
ballot, the task of a score table, `game_id` of a game, compared naturally (runs of digits as
numbers: `b2` before `b10`, so the default ids `<file stem>:<line>` of ballots without one follow
the file). Identical ballots are one ballot at the place of the first, as OpenSpiel's
`PreferenceProfile.group()` makes them; ballots with equal ids are ordered by the count itself,
in the agents' name order.

The statistic is the first id of each distinct ballot: as large as the ballot histogram, merged
exactly (a minimum), so it depends neither on the partitioning nor on the ids a store assigned.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from pipeline.arrays import unit_codes
from pipeline.logs import log_kind
from pipeline.stats.encoding import Arrays, under_prefix, with_prefix
from pipeline.stats.extras import Extra, register_extra, same_ids
from pipeline.stats.partials import ballot_blocks, ballot_tuples

ID_COLUMNS = {"ballots": "ballot_id", "games": "game_id", "scores": "task", "battles": "battle_id"}  # a ballot's id, per kind
Ballot = tuple[tuple[int, ...], ...]


def natural_key(text: str) -> tuple[tuple[str | int, ...], str]:
    """Sort key comparing runs of digits as numbers ("b2" < "b10"), then the text itself."""
    parts = re.split(r"(\d+)", text)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), text


@dataclass(frozen=True)
class BallotOrder:
    """`first[ballot]`: the first id (in natural order) of the ballots equal to `ballot`, a ballot
    in the form of `BallotHistogram.ballots` (tie groups of local agent indices)."""

    first: dict[Ballot, str]

    def key(self, ballot: Ballot) -> tuple[tuple[str | int, ...], str]:
        return natural_key(self.first[ballot])


def _ids(table: pa.Table, kind: str) -> list[str]:
    """The id of each ballot of `kind.weak_orders(table)`, in that order (units in code order)."""
    chosen = log_kind(kind)
    ids = table.column(ID_COLUMNS[kind]).combine_chunks()
    if chosen.unit_column is not None:
        _, first_row = np.unique(unit_codes(table, chosen.unit_column), return_index=True)
        ids = ids.take(pa.array(first_row))
    return ids.to_pylist()


def _first(rows: np.ndarray, ids: list[str]) -> tuple[np.ndarray, list[str]]:
    """Distinct rows and, for each, the smallest of its ids in natural order."""
    order = sorted(range(len(ids)), key=lambda i: natural_key(ids[i]))
    distinct, first = np.unique(rows[order], axis=0, return_index=True)
    return distinct, [ids[order[i]] for i in first]


def _partial(table: pa.Table, kind: str, n: int) -> dict[int, tuple[np.ndarray, list[str]]]:
    """Per ballot length L: distinct rows [L store ids, L group starts] (as the histogram) and first ids."""
    chosen = log_kind(kind)
    orders = chosen.weak_orders(table) if chosen.weak_orders is not None else chosen.comparisons(table).weak_orders()
    ids = _ids(table, kind)
    if len(ids) != len(orders):
        raise ValueError(f"{kind}: {len(orders)} ballots but {len(ids)} ids")
    blocks: dict[int, tuple[np.ndarray, list[str]]] = {}
    for length, ballots, agents, start, _, _ in ballot_blocks(orders):
        rows = np.concatenate([agents, start], axis=1)
        blocks = _merge(blocks, {length: _first(rows, [ids[b] for b in ballots.tolist()])})
    return blocks


def _merge(a: dict[int, tuple[np.ndarray, list[str]]], b: dict[int, tuple[np.ndarray, list[str]]]) -> dict:
    merged = dict(a)
    for length, (rows, ids) in b.items():
        if length in merged:
            rows, ids = _first(np.concatenate([merged[length][0], rows]), merged[length][1] + ids)
        merged[length] = (rows, ids)
    return dict(sorted(merged.items()))  # by length whatever the merge order, as `_decode` gives them


def _finalize(merged: dict[int, tuple[np.ndarray, list[str]]], present: np.ndarray,
              name_orders: Mapping[str, np.ndarray]) -> BallotOrder:
    local = np.full(len(name_orders["agents"]), -1, np.int64)
    local[present] = np.arange(len(present))
    return BallotOrder({ballot: first for length, (rows, ids) in merged.items()
                        for ballot, first in zip(ballot_tuples(rows, length, local), ids)})


def _encode(merged: dict[int, tuple[np.ndarray, list[str]]]) -> Arrays:
    """Per ballot length, its rows and first ids (fixed-width text: read back without pickle)."""
    arrays: Arrays = {}
    for length, (rows, ids) in merged.items():
        arrays |= with_prefix(str(length), {"rows": rows, "ids": np.array(ids, dtype=np.str_)})
    return arrays


def _decode(arrays: Arrays) -> dict[int, tuple[np.ndarray, list[str]]]:
    lengths = sorted({int(name.partition(".")[0]) for name in arrays})
    return {length: (block["rows"], block["ids"].tolist()) for length in lengths
            for block in [under_prefix(str(length), arrays)]}


BALLOT_ORDER = register_extra(Extra("ballot_order", {kind: (column,) for kind, column in ID_COLUMNS.items()},
                                    _partial, _merge, _finalize, _encode, _decode, resize=same_ids))
