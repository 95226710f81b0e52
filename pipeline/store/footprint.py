"""What a stored file holds, counted at ingest, so that a rating's cost can be judged without reading rows.

The methods' cost models (`pipeline.methods.registry.Size`) read the number of agents, of pairs of agents
compared, of tasks (or prompts), of distinct ballots and of their members. A reduction knows them exactly, but only after it has
read every row; a spec expected far past the budget should be refused before that (issue 33). So each
ingested file's report carries its `Footprint`: the distinct agents, pairs, tasks and ballots (and their members) of its accepted
rows, counted from the same weak orders (or comparisons) the reduction reads, and the agents it added to the
store's dictionary. Footprints merge by what is certain of a union (`Footprint.merged`): at least the largest
file's count, and at least all the agents the kind's files added. The store's footprint of a kind is then
exact for a store of one file of one kind (`vase rate` on a file), and a lower bound otherwise, so a spec
it prices past the budget is past it on the whole store too. It is O(files) to compute from the manifest.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa

from pipeline.logs.kinds import LogKind
from pipeline.logs.orders import A_WINS, TIE, WeakOrders

PAIRS_PER_STEP = 4_000_000  # pairs generated at once from long ballots (32 MB of keys)
TASKS = {"scores": "task", "battles": "prompt"}  # the column whose values are the game data's tasks (prompts)


@dataclass(frozen=True)
class Footprint:
    """Distinct agents, pairs of agents compared, tasks (or prompts) and ballots, the members of those ballots
    (their lengths summed); `new_agents`: the agents the file added to the store (none of an earlier file)."""

    agents: int = 0
    pairs: int = 0
    tasks: int = 0
    ballots: int = 0
    members: int = 0
    new_agents: int = 0

    def record(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def merged(cls, footprints: Iterable[Footprint]) -> Footprint:
        """What is certain of the union of several files: each count at least the largest file's, and
        the agents at least those the files added (their sum: a name is added once)."""
        footprints = list(footprints)
        largest = {name: max((getattr(f, name) for f in footprints), default=0) for name in ("pairs", "tasks", "ballots", "members")}
        added = sum(f.new_agents for f in footprints)
        return cls(max(added, max((f.agents for f in footprints), default=0)), new_agents=added, **largest)


def pair_keys(orders: WeakOrders) -> np.ndarray:
    """The distinct unordered pairs of agents that share a ballot, as `low << 32 | high` (ids below 2^31)."""
    lengths = np.diff(orders.offsets)
    found = [np.zeros(0, np.int64)]
    for length in np.unique(lengths[lengths > 1]):
        starts = orders.offsets[:-1][lengths == length]
        low, high = np.triu_indices(int(length), 1)
        step = max(1, PAIRS_PER_STEP // len(low))
        for first in range(0, len(starts), step):
            members = orders.agents[starts[first:first + step, None] + np.arange(length)]
            a, b = members[:, low].ravel(), members[:, high].ravel()
            found.append(distinct(np.minimum(a, b) << 32 | np.maximum(a, b)))
    return distinct(*found)


def distinct(*arrays: np.ndarray) -> np.ndarray:
    """The sorted distinct values of integer `arrays` together, by a sort: numpy 2.3's `unique` and
    `union1d` hash instead, 10x slower on a million pair keys (2.5 s of a 1e6-battle ingest)."""
    values = np.sort(np.concatenate(arrays))
    return values[np.r_[True, values[1:] != values[:-1]]] if len(values) else values


FINGERPRINT = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F], np.uint64)  # odd multipliers of two polynomial hashes


def ballot_fingerprints(orders: WeakOrders) -> np.ndarray:
    """One row per ballot, equal for equal weak orders: two polynomial hashes (mod 2^64) of its members' (agent, rank
    of its level) in order, and its length. Hashing keeps it linear in the members (a list per ballot in polars
    cost 3x the rest of an ingest of battles); two 64-bit hashes make a collision, which would only undercount
    distinct ballots, negligible."""
    lengths = np.diff(orders.offsets)
    if not len(lengths):
        return np.zeros((0, 3), np.uint64)
    ballot = np.repeat(np.arange(len(lengths)), lengths)
    starts = orders.offsets[:-1][lengths > 0]
    new_level = np.r_[True, (orders.levels[1:] != orders.levels[:-1]) | (ballot[1:] != ballot[:-1])]
    level_rank = np.cumsum(new_level) - 1
    level_rank -= np.repeat(level_rank[starts], lengths[lengths > 0])  # an empty last ballot starts past the end
    position = np.arange(len(ballot)) - np.repeat(orders.offsets[:-1], lengths)
    keys = (orders.agents.astype(np.uint64) << np.uint64(32)) | level_rank.astype(np.uint64)
    with np.errstate(over="ignore"):
        hashes = [np.add.reduceat(keys * pow_mod(m, position), starts) for m in FINGERPRINT]
    rows = np.zeros((len(lengths), 3), np.uint64)
    rows[lengths > 0, 0], rows[lengths > 0, 1] = hashes
    rows[:, 2] = lengths
    return rows


def pow_mod(base: np.uint64, exponents: np.ndarray) -> np.ndarray:
    """base ** exponents mod 2^64, elementwise (by squaring: exponents are positions in a ballot)."""
    result = np.ones(len(exponents), np.uint64)
    square, left = np.full(len(exponents), base, np.uint64), exponents.astype(np.int64)
    with np.errstate(over="ignore"):
        while left.any():
            odd = (left & 1).astype(bool)
            result[odd] *= square[odd]
            square *= square
            left >>= 1
    return result


class FootprintCounter:
    """The footprint of one file, from its encoded batches (`add`) and the dictionary's growth."""

    def __init__(self, kind: LogKind):
        self.kind = kind
        self.agents = np.zeros(0, np.int64)
        self.pairs = np.zeros(0, np.int64)
        self.tasks: set[object] = set()
        self.ballots = np.zeros((0, 3), np.uint64)  # distinct `ballot_fingerprints`
        self.battles = [np.zeros(0, np.int64) for _ in range(3)]  # of a kind of comparisons: the pairs of each outcome

    def add(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        if self.kind.comparisons is not None:  # a ballot of two per row: the pair and who won (the lower id, the higher, a tie)
            battles = self.kind.comparisons(table)
            low, high = np.minimum(battles.a, battles.b), np.maximum(battles.a, battles.b)
            pairs = low << 32 | high
            outcome = np.where(battles.outcome == TIE, 2, (battles.outcome == A_WINS) != (battles.a == low))
            self.agents = distinct(self.agents, low, high)
            self.battles = [distinct(seen, pairs[outcome == code]) for code, seen in enumerate(self.battles)]
        else:
            orders = self.kind.weak_orders(table)
            self.agents = distinct(self.agents, orders.agents)
            pairs = pair_keys(orders)
            self.ballots = np.unique(np.concatenate([self.ballots, ballot_fingerprints(orders)]), axis=0)
        self.pairs = distinct(self.pairs, pairs)
        if (task := TASKS.get(self.kind.name)) in table.column_names:
            self.tasks |= set(table.column(task).drop_null().unique().to_pylist())

    def footprint(self, new_agents: int) -> Footprint:
        battles = sum(map(len, self.battles))
        return Footprint(len(self.agents), len(self.pairs), len(self.tasks), len(self.ballots) + battles,
                         int(self.ballots[:, 2].sum()) + 2 * battles, new_agents)
