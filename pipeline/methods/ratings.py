"""`Ratings`: the output of every method.

One tie rule for every method, in `Ratings.from_scores`: equal scores get equal ranks (standard
competition ranking, 1, 2, 2, 4), agents listed by store id, never a random tie-break. A method
whose scores come out of an iterative or LP solver passes `tie_tolerance`, the solver's accuracy:
scores closer than that to the next better one share its rank, so solver noise never orders
agents that are equal. A method returns its ratings without naming itself: the registry records
the method's name and effective parameters (`pipeline.methods.registry.apply`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
from scipy.special import expit

AGENT_COLUMN = re.compile(r"^(?P<prefix>[a-z_]+)\[#(?P<agent>[0-9]+)\]$")  # see `agent_column`


def agent_column(prefix: str, agent: int) -> str:
    """The name of an extras column about one agent of the store (a contribution against it),
    `prefix[#<store id>]`, which publishing names by the agent: `prefix[<name>]`."""
    return f"{prefix}[#{int(agent)}]"


def competition_ranks(score: np.ndarray, higher_is_better: bool = True, tolerance: float = 0.0) -> np.ndarray:
    """1 + the number of agents in better tie groups. Sorted best first, a score starts a new tie
    group when it is more than `tolerance` worse than the score before it (0: only equal scores tie).
    Scores may be floats or exact numbers (an object array of Fractions), compared exactly."""
    values = np.asarray(score)
    values = values if values.dtype == object else values.astype(np.float64)
    key = -values if higher_is_better else values
    order = np.argsort(key, kind="stable")
    starts = np.r_[True, np.diff(key[order]) > tolerance]
    ranks = np.empty(len(key), np.int64)
    ranks[order] = np.maximum.accumulate(np.where(starts, np.arange(len(key)), 0)) + 1
    return ranks


@dataclass(frozen=True, eq=False)
class Ratings:
    """Per agent (store ids): rank (1 is best), score and method-specific extras.

    `name` and `params` (the effective parameters, defaults included, so `spec` round-trips) are
    filled in by the registry when the method returns; `info`
    holds method-level diagnostics (JSON-serialisable values); `tables` are further results a
    method publishes beside its ratings (an extras column `agent_column(prefix, id)` is about agent
    `id`; a column `agent` or `*_agent` of a table holds store ids of the
    agents dictionary, a column `judge` or `*_judge` store ids of the judges dictionary, -1 for
    battles without a judge; `pipeline.report.publish` turns both into names).
    """

    agents: np.ndarray
    score: np.ndarray
    rank: np.ndarray
    extras: dict[str, np.ndarray] = field(default_factory=dict)
    info: dict[str, object] = field(default_factory=dict)
    tables: dict[str, pa.Table] = field(default_factory=dict)
    name: str = ""
    params: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        k = len(self.agents)
        if self.score.shape != (k,) or self.rank.shape != (k,):
            raise ValueError("one score and one rank per agent")
        for key, column in self.extras.items():
            if len(column) != k:
                raise ValueError(f"extra {key!r} must have one value per agent")

    @classmethod
    def from_scores(cls, agents: np.ndarray, score: np.ndarray, *, extras: dict[str, np.ndarray] | None = None,
                    info: dict[str, object] | None = None, tables: dict[str, pa.Table] | None = None,
                    higher_is_better: bool = True, tie_tolerance: float = 0.0) -> Ratings:
        # Exact scores (an object array of Fractions) are ranked exactly, then rounded once to floats.
        ranks = competition_ranks(score, higher_is_better, tie_tolerance)
        return cls(np.asarray(agents, dtype=np.int64), np.asarray(score).astype(np.float64), ranks,
                   dict(extras or {}), dict(info or {}), dict(tables or {}))

    def positions(self, ids: np.ndarray) -> np.ndarray:
        """Row of each store id in these ratings (-1 where the agent was not rated)."""
        ids = np.asarray(ids, dtype=np.int64).ravel()
        if not len(self.agents):
            return np.full(len(ids), -1, np.int64)
        order = np.argsort(self.agents, kind="stable")  # a binary search: a backtest looks up ~20k ids per method and split
        at = np.searchsorted(self.agents[order], ids, side="right") - 1
        found = (at >= 0) & (self.agents[order[np.maximum(at, 0)]] == ids)
        return np.where(found, order[np.maximum(at, 0)], -1)

    def win_probability(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """P(a beats b) for rows a, b, for methods whose scores are logistic ratings.

        Such methods set `info["logistic_scale"]` (400 for Elo points): P = 1 / (1 + 10^((s_b - s_a) / scale)).
        """
        scale = self.info.get("logistic_scale")
        if scale is None:
            raise ValueError(f"{self.spec} does not give win probabilities")
        return expit((self.score[a] - self.score[b]) * (np.log(10.0) / float(scale)))  # cannot overflow

    @property
    def spec(self) -> str:
        """The method spec that reproduces these ratings, e.g. `approval:k=2` (`Spec.canonical`)."""
        return spec_text(self.name, self.params)


def spec_text(name: str, params: dict[str, object]) -> str:
    """`name:key=value,...` with the parameters sorted by key: the one spelling of a spec. An empty text
    parameter (no list, as m-Elo's `covariates` by default) is left out: it reads back as its default."""
    params = {k: v for k, v in params.items() if v != ""}
    if not params:
        return name
    return name + ":" + ",".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in sorted(params.items()))
