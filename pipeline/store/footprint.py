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
import polars as pl
import pyarrow as pa

from pipeline.logs.kinds import LogKind
from pipeline.logs.orders import WeakOrders

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
            found.append(np.unique(np.minimum(a, b) << 32 | np.maximum(a, b)))
    return np.unique(np.concatenate(found))


def ballot_keys(orders: WeakOrders) -> pl.Series:
    """One key per ballot, equal for equal weak orders: its members' (agent, rank of its level) in order."""
    lengths = np.diff(orders.offsets)
    ballot = np.repeat(np.arange(len(lengths)), lengths)
    level_rank = pl.DataFrame({"ballot": ballot, "level": orders.levels}).select(
        pl.col("level").rank("dense").over("ballot").cast(pl.Int64) - 1).to_series().to_numpy()
    members = pl.DataFrame({"ballot": ballot, "key": orders.agents << 32 | level_rank})
    return members.group_by("ballot", maintain_order=True).agg("key").get_column("key")


class FootprintCounter:
    """The footprint of one file, from its encoded batches (`add`) and the dictionary's growth."""

    def __init__(self, kind: LogKind):
        self.kind = kind
        self.agents = np.zeros(0, np.int64)
        self.pairs = np.zeros(0, np.int64)
        self.tasks: set[object] = set()
        self.ballots = pl.Series("key", [], pl.List(pl.Int64))

    def add(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        orders = self.kind.comparisons(table).weak_orders() if self.kind.comparisons else self.kind.weak_orders(table)
        self.agents = np.union1d(self.agents, orders.agents)
        self.pairs = np.union1d(self.pairs, pair_keys(orders))
        self.ballots = pl.concat([self.ballots, ballot_keys(orders)]).unique()
        if (task := TASKS.get(self.kind.name)) in table.column_names:
            self.tasks |= set(table.column(task).drop_null().unique().to_pylist())

    def footprint(self, new_agents: int) -> Footprint:
        return Footprint(len(self.agents), len(self.pairs), len(self.tasks), len(self.ballots),
                         int(self.ballots.list.len().sum() or 0), new_agents)
