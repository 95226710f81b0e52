"""Games built from data in the store, for the game-theoretic methods.

- `agent-task`: 2-player zero-sum, agent vs task, the agent paid its normalised score T(a, t)
  and the task -T(a, t) ([Bal18]; [DevR] section 5.2 figure 4, "2P").
- `agent-agent-task`: 3-player, G_A(a, b, t) = T(a, t) - T(b, t), G_B = -G_A, G_T = |G_A|
  ([DevR] section 5.2).
- `agent-agent`: 2-player symmetric zero-sum from battles, G(a, b) = (N[a, b] - N[b, a]) / n(a, b),
  the mean margin of a over b (0 for pairs that never met); [Bal18].
- `model-model-prompt`: 3-player, the same mean margin per prompt u(a, b, p), G_A = u, G_B = -u,
  G_P = |u| ([DevR] section 5.2, the Chatbot Arena formulation).
- `king-of-the-hill`: 3-player (king, rebel, prompt), king paid u(k, r, p), prompt player |u|,
  rebel -u except -1 when it picks the king's model ([GTLLM] section 3.1).

Normalisation of scores (`norm`), per task after turning lower-is-better scores around:
`minmax` maps the task's scores to [0, 1] (a task where all agents score the same maps to 0),
`zscore` subtracts the mean and divides by the standard deviation, `none` keeps raw scores.
Missing cells (an agent not scored on a task) get the task's mean normalised score; their number
is reported in the game's info.

Task weights (`task_weight` of score tables) are multiplicities, as in the voting path where a task
of weight w is w identical voters: the task player gets w copies of the task (`name`, `name#2`,
...), a weight of 0 drops the task, and a weight that is not a whole number is refused. Scaling a
task's payoffs instead would make it a different task, not a more important one. So methods that
are clone invariant (Nash averaging, deviation ratings, affinity; [Bal18], [DevR] property 4,
[GTLLM] section 4.2) give the same agent ratings whatever the weights, by design: a repeated task
is the redundancy they are built to ignore; methods that are not (uniform, alpha-rank) count a
weight-2 task twice. `info["task_copies"]` reports the copies added.
"""

from __future__ import annotations

import numpy as np

from pipeline.games.game import Game
from pipeline.stats.game_data import PromptCounts, ScoreTable

NORMALISATIONS = ("minmax", "zscore", "none")
RAW_SCORE_BOUND = float(np.finfo(np.float64).max) / 8  # raw payoffs whose differences, and gains of those, stay finite


def normalise(table: ScoreTable, norm: str) -> tuple[np.ndarray, int]:
    """T[a, t]: normalised scores (higher is better), and the number of missing cells filled."""
    if norm not in NORMALISATIONS:
        raise ValueError(f"unknown normalisation {norm!r}; expected one of {', '.join(NORMALISATIONS)}")
    t = np.where(table.higher_is_better[None, :], table.scores, -table.scores)
    missing = np.isnan(t)
    if missing.all(axis=0).any():
        raise ValueError("a task without any score cannot be normalised")
    if norm == "none" and (largest := float(np.nanmax(np.abs(t)))) > RAW_SCORE_BOUND:
        raise ValueError(f"scores up to {largest:.3g} overflow the payoff differences of a game (norm=none keeps raw "
                         f"scores, at most {RAW_SCORE_BOUND:.3g}); use norm=minmax or norm=zscore")
    if norm != "none":
        # Both are the same for a task's scores times any positive constant: a power of two brings its largest |score|
        # into [0.5, 1) exactly, so spans, sums and squares neither overflow (scores near 1e308, whose zscore
        # variance was inf, every agent then tied) nor underflow (near 1e-300, whose variance was 0).
        _, exponent = np.frexp(np.nanmax(np.abs(t), axis=0))
        t = np.ldexp(t, -exponent[None, :])
    if norm == "minmax":
        low, high = np.nanmin(t, axis=0), np.nanmax(t, axis=0)
        span = np.where(high > low, high - low, 1.0)
        t = (t - low) / span
    elif norm == "zscore":
        mean, std = np.nanmean(t, axis=0), np.nanstd(t, axis=0)
        t = (t - mean) / np.where(std > 0, std, 1.0)
    t = np.where(missing, np.nanmean(t, axis=0)[None, :], t)
    return t, int(missing.sum())


MAX_TASK_COPIES = 4_096  # task strategies after weighting


def task_copies(table: ScoreTable) -> tuple[np.ndarray, tuple[str, ...]]:
    """Columns of the weighted game (each task repeated task_weight times) and their names."""
    weight = np.asarray(table.task_weight, dtype=np.float64)
    bad = np.flatnonzero((weight < 0) | (weight != np.round(weight)))
    if len(bad):
        raise ValueError(f"task {table.tasks[bad[0]]!r}: task_weight {weight[bad[0]]:g} is not a whole number; in games a "
                         "task weight is a number of copies of the task")
    if weight.sum() > MAX_TASK_COPIES:
        raise ValueError(f"task weights add up to {weight.sum():g} task copies, more than {MAX_TASK_COPIES}")
    columns = np.repeat(np.arange(len(weight)), weight.astype(np.int64))
    copy = np.arange(len(columns)) - np.searchsorted(columns, columns)
    names = tuple(table.tasks[t] if k == 0 else f"{table.tasks[t]}#{k + 1}" for t, k in zip(columns.tolist(), copy.tolist()))
    if not len(columns):
        raise ValueError("every task has task_weight 0: no task to build a game from")
    return columns, names


def _weighted(table: ScoreTable, norm: str) -> tuple[np.ndarray, tuple[str, ...], dict[str, object]]:
    """Normalised scores with each task repeated by its weight, its task names, and the game's info."""
    t, missing = normalise(table, norm)
    columns, names = task_copies(table)
    return t[:, columns], names, {"norm": norm, "missing_cells": missing, "task_copies": len(columns) - len(table.tasks)}


def _agent_names(ids: np.ndarray) -> tuple[str, ...]:
    return tuple(str(i) for i in ids)


def agent_task(table: ScoreTable, *, norm: str = "minmax") -> Game:
    t, tasks, info = _weighted(table, norm)
    return Game((t, -t), ("agent", "task"), (_agent_names(table.agents), tasks), (table.agents, None),
                {"game": "agent-task"} | info)


def agent_agent_task(table: ScoreTable, *, norm: str = "minmax") -> Game:
    t, tasks, info = _weighted(table, norm)
    g = t[:, None, :] - t[None, :, :]
    names = _agent_names(table.agents)
    return Game((g, -g, np.abs(g)), ("agent_a", "agent_b", "task"), (names, names, tasks),
                (table.agents, table.agents, None), {"game": "agent-agent-task"} | info)


def _margin(wins: np.ndarray, ties: np.ndarray) -> np.ndarray:
    """Mean margin (wins - losses) / comparisons over the last two axes; 0 where there were none."""
    total = wins + np.swapaxes(wins, -1, -2) + ties
    return np.divide(wins - np.swapaxes(wins, -1, -2), total, out=np.zeros_like(total), where=total > 0)


def agent_agent(counts: PromptCounts) -> Game:
    g = _margin(*counts.totals())
    names = _agent_names(counts.agents)
    return Game((g, g.T.copy()), ("agent_a", "agent_b"), (names, names), (counts.agents, counts.agents),
                {"game": "agent-agent"})


def _per_prompt(counts: PromptCounts) -> tuple[np.ndarray, tuple[str, ...]]:
    """u[a, b, p]: mean margin of a over b on each prompt."""
    if not len(counts.prompts):
        raise ValueError("no battle has a prompt: a model vs model vs prompt game needs prompts")
    u = np.moveaxis(_margin(*counts.tensors()), 0, -1)
    return u, tuple(counts.prompt_name(int(p)) for p in counts.prompts)


def model_model_prompt(counts: PromptCounts) -> Game:
    u, prompts = _per_prompt(counts)
    names = _agent_names(counts.agents)
    return Game((u, -u, np.abs(u)), ("model_a", "model_b", "prompt"), (names, names, prompts),
                (counts.agents, counts.agents, None), {"game": "model-model-prompt"})


def king_of_the_hill(counts: PromptCounts) -> Game:
    u, prompts = _per_prompt(counts)
    rebel = -u
    k = len(counts.agents)
    rebel[np.arange(k), np.arange(k), :] = -1.0
    names = _agent_names(counts.agents)
    return Game((u, rebel, np.abs(u)), ("king", "rebel", "prompt"), (names, names, prompts),
                (counts.agents, counts.agents, None), {"game": "king-of-the-hill"})


SCORE_GAMES = {"agent-task": agent_task, "agent-agent-task": agent_agent_task}
BATTLE_GAMES = {"agent-agent": agent_agent, "model-model-prompt": model_model_prompt, "king-of-the-hill": king_of_the_hill}
GAMES = tuple(SCORE_GAMES) + tuple(BATTLE_GAMES)


def build(data: ScoreTable | PromptCounts | Game, game: str, *, norm: str = "minmax") -> Game:
    """The game named `game` built from a statistic (a `Game`, from an nfg file, passes through)."""
    if isinstance(data, Game):
        if game not in ("auto", "nfg"):
            raise ValueError(f"an nfg game is rated as given; game={game!r} applies to scores or battles")
        return data
    if game not in GAMES:
        raise ValueError(f"unknown game {game!r}; expected one of {', '.join(GAMES)}")
    if isinstance(data, ScoreTable):
        if game not in SCORE_GAMES:
            raise ValueError(f"game {game!r} is built from battles, not scores; from scores: {', '.join(SCORE_GAMES)}")
        return SCORE_GAMES[game](data, norm=norm)
    if game not in BATTLE_GAMES:
        raise ValueError(f"game {game!r} is built from scores, not battles; from battles: {', '.join(BATTLE_GAMES)}")
    return BATTLE_GAMES[game](data)
