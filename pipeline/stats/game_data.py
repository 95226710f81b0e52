"""`game_data`: the statistic the game-theoretic methods build their games from.

For `scores` logs it is a `ScoreTable` (agents x tasks matrix of scores, with higher_is_better
and task_weight per task); for `battles` logs a `PromptCounts` (pairwise win and tie weights per
prompt, the input of model vs model vs prompt games [DevR] section 5.2, [GTLLM] section 3.1).

Merges are exact and order-independent: score rows are merged by a sort on the total key
(task, agent, score, higher_is_better, task_weight); battle weights are integer units
(`pipeline.weights`) summed by sorted key. Prompts are prompt ids: the board layer hands the
game builders their names (`PromptCounts.prompt_names`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import sum_by_key
from pipeline.stats.encoding import Arrays, arrays_table, scalar, table_arrays
from pipeline.stats.extras import Extra, register_extra
from pipeline.weights import UNIT, to_units


@dataclass(frozen=True, eq=False)
class ScoreTable:
    """scores[i, t]: local agent i on task t (NaN where not scored); `agents` are store ids."""

    agents: np.ndarray
    tasks: tuple[str, ...]
    scores: np.ndarray
    higher_is_better: np.ndarray
    task_weight: np.ndarray

    def __post_init__(self) -> None:
        k, t = len(self.agents), len(self.tasks)
        if self.scores.shape != (k, t) or self.higher_is_better.shape != (t,) or self.task_weight.shape != (t,):
            raise ValueError(f"a score table over {k} agents and {t} tasks needs scores of shape ({k}, {t})")
        if np.any(np.isinf(self.scores)):
            raise ValueError("scores must be finite or missing (NaN)")


@dataclass(frozen=True, eq=False)
class PromptCounts:
    """Per-prompt pairwise weights in coordinate form over local agents.

    Row r: on prompt `prompt[r]` (a store id in the 'prompts' dictionary, -1 for battles without
    a prompt), agent `a[r]` beat agent `b[r]` with weight `wins[r]` and tied with it with weight
    `ties[r]` (ties are stored in both directions). `prompt_names[i]`, when the board layer gave
    them, names store prompt id i (games built from these counts name their prompt strategies).
    """

    agents: np.ndarray
    prompt: np.ndarray
    a: np.ndarray
    b: np.ndarray
    wins: np.ndarray
    ties: np.ndarray
    prompt_names: tuple[str, ...] | None = None

    @cached_property
    def prompts(self) -> np.ndarray:
        """The store ids of the prompts seen (-1 excluded), sorted."""
        return np.unique(self.prompt[self.prompt >= 0])

    def tensors(self) -> tuple[np.ndarray, np.ndarray]:
        """Dense wins[P, k, k] and ties[P, k, k] over `prompts` (battles without a prompt left out)."""
        k, keep = len(self.agents), self.prompt >= 0
        index = np.searchsorted(self.prompts, self.prompt[keep])
        wins, ties = np.zeros((len(self.prompts), k, k)), np.zeros((len(self.prompts), k, k))
        wins[index, self.a[keep], self.b[keep]] = self.wins[keep]
        ties[index, self.a[keep], self.b[keep]] = self.ties[keep]
        return wins, ties

    def totals(self) -> tuple[np.ndarray, np.ndarray]:
        """Wins and ties summed over all battles, prompts or not: N and T of [VasE] section 3.1."""
        k = len(self.agents)
        wins, ties = np.zeros((k, k)), np.zeros((k, k))
        np.add.at(wins, (self.a, self.b), self.wins)
        np.add.at(ties, (self.a, self.b), self.ties)
        return wins, ties

    def prompt_name(self, prompt_id: int) -> str:
        return str(prompt_id) if self.prompt_names is None else self.prompt_names[prompt_id]


@dataclass(frozen=True)
class _ScoreRows:
    task: np.ndarray  # object (str)
    agent: np.ndarray
    score: np.ndarray
    higher_is_better: np.ndarray
    task_weight: np.ndarray

    def __add__(self, other: _ScoreRows) -> _ScoreRows:
        joined = [np.concatenate([x, y]) for x, y in zip(self._columns, other._columns)]
        order = np.lexsort(joined[::-1])  # total key: task, agent, score, higher_is_better, task_weight
        return _ScoreRows(*(c[order] for c in joined))

    @property
    def _columns(self) -> list[np.ndarray]:
        return [self.task, self.agent, self.score, self.higher_is_better, self.task_weight]

    def to_arrays(self) -> Arrays:
        return table_arrays(pa.table({"task": pa.array(self.task.tolist(), pa.string()), "agent": self.agent, "score": self.score,
                                      "higher_is_better": self.higher_is_better, "task_weight": self.task_weight}))

    @classmethod
    def from_arrays(cls, arrays: Arrays) -> _ScoreRows:
        table = arrays_table(arrays)
        return cls(np.asarray(table.column("task").to_pylist(), dtype=object), *(table.column(c).to_numpy().copy() for c in
                   ("agent", "score", "higher_is_better", "task_weight")))


@dataclass(frozen=True)
class _PromptUnits:
    n: int
    keys: np.ndarray  # (prompt + 1) * n * n + a * n + b, sorted, distinct
    units: np.ndarray  # int64 [m, 2]: wins, ties

    def __add__(self, other: _PromptUnits) -> _PromptUnits:
        return _PromptUnits(self.n, *sum_by_key(np.concatenate([self.keys, other.keys]), np.concatenate([self.units, other.units])))

    def resized(self, n: int) -> _PromptUnits:
        """The same cells keyed in an id space of size n (the key order, prompt then a then b, is kept)."""
        old = np.int64(self.n)
        prompt_slot, rest = self.keys // (old * old), self.keys % (old * old)
        return _PromptUnits(n, (prompt_slot * n + rest // old) * n + rest % old, self.units)

    def to_arrays(self) -> Arrays:
        return {"n": scalar(self.n), "keys": self.keys, "units": self.units}

    @classmethod
    def from_arrays(cls, arrays: Arrays) -> _PromptUnits:
        if arrays["units"].shape != (len(arrays["keys"]), 2):
            raise ValueError("two unit counts per prompt cell")
        return cls(int(arrays["n"]), arrays["keys"], arrays["units"])


def _score_rows(table: pa.Table, n: int) -> _ScoreRows:
    hib = pc.fill_null(table.column("higher_is_better"), True).to_numpy().astype(bool)
    weight = pc.fill_null(table.column("task_weight"), 1.0).to_numpy().astype(np.float64)
    rows = _ScoreRows(np.asarray(table.column("task").to_pylist(), dtype=object), table.column("agent").to_numpy().astype(np.int64),
                      table.column("score").to_numpy().astype(np.float64), hib, weight)
    return rows + _ScoreRows(*(c[:0] for c in rows._columns))  # sorted


def _prompt_units(table: pa.Table, n: int) -> _PromptUnits:
    a = table.column("model_a").to_numpy().astype(np.int64)
    b = table.column("model_b").to_numpy().astype(np.int64)
    winner = table.column("winner").to_numpy()
    prompt = pc.fill_null(table.column("prompt"), -1).to_numpy().astype(np.int64)
    units = to_units(pc.fill_null(table.column("weight"), 1.0).to_numpy())
    n2 = np.int64(n) * n
    decided, b_won, tie = winner < 2, winner == 1, winner >= 2
    x, y = np.where(b_won, b, a), np.where(b_won, a, b)  # x beat y (or tied with it)
    keys = np.concatenate([(prompt + 1) * n2 + x * n + y, ((prompt + 1) * n2 + y * n + x)[tie]])
    values = np.zeros((len(keys), 2), np.int64)
    values[: len(a), 0] = np.where(decided, units, 0)
    values[: len(a), 1] = np.where(tie, units, 0)
    values[len(a):, 1] = units[tie]
    return _PromptUnits(n, *sum_by_key(keys, values))


_PARTIALS = {"scores": _score_rows, "battles": _prompt_units}


def _partial(table: pa.Table, kind: str, n: int) -> _ScoreRows | _PromptUnits:
    return _PARTIALS[kind](table, n)


def _finalize(merged: _ScoreRows | _PromptUnits, present: np.ndarray, name_orders: Mapping[str, np.ndarray]) -> ScoreTable | PromptCounts:
    local = np.full(int(present.max(initial=-1)) + 1, -1, np.int64)
    local[present] = np.arange(len(present))
    if isinstance(merged, _PromptUnits):
        n, n2 = np.int64(merged.n), np.int64(merged.n) ** 2
        prompt, rest = merged.keys // n2 - 1, merged.keys % n2
        wins, ties = (merged.units[:, c].astype(np.float64) / UNIT for c in (0, 1))
        return PromptCounts(present, prompt, local[rest // n], local[rest % n], wins, ties)
    tasks, task_index = np.unique(merged.task.astype(str), return_inverse=True)
    scores = np.full((len(present), len(tasks)), np.nan)
    total, count = np.zeros_like(scores), np.zeros_like(scores)
    np.add.at(total, (local[merged.agent], task_index), merged.score)
    np.add.at(count, (local[merged.agent], task_index), 1.0)
    np.divide(total, count, out=scores, where=count > 0)  # repeated (agent, task) rows: their mean
    hib = np.ones(len(tasks), bool)
    weight = np.ones(len(tasks))
    for t in range(len(tasks)):
        rows = task_index == t
        if len(set(merged.higher_is_better[rows].tolist())) > 1:
            raise ValueError(f"task {tasks[t]!r} has rows with different higher_is_better")
        hib[t], weight[t] = merged.higher_is_better[rows][0], merged.task_weight[rows].max()
    return ScoreTable(present, tuple(tasks.tolist()), scores, hib, weight)


def _merge(x, y):
    return x + y


def _resize(partial: _ScoreRows | _PromptUnits, n: int) -> _ScoreRows | _PromptUnits:
    return partial.resized(n) if isinstance(partial, _PromptUnits) else partial  # score rows hold store ids


def _decode(arrays: Arrays) -> _ScoreRows | _PromptUnits:
    return _ScoreRows.from_arrays(arrays) if "table" in arrays else _PromptUnits.from_arrays(arrays)


GAME_DATA = register_extra(Extra(
    "game_data",
    {"scores": ("task", "agent", "score", "higher_is_better", "task_weight"),
     "battles": ("model_a", "model_b", "winner", "prompt", "weight")},
    _partial, _merge, _finalize, lambda partial: partial.to_arrays(), _decode, resize=_resize,
))
