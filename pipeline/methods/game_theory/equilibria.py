"""Shared plumbing of the game-theoretic methods: choosing the game, publishing per-player ratings.

Rows of the resulting `Ratings`:
- for a game built from the store, the strategies of the first player (agents, by store id:
  agent A, model A, or the king); other players whose strategies are the same agents add extra
  columns `<player>_rating` and `<player>_marginal`; players whose strategies are tasks or prompts
  are reported in `info` as `<player>_ratings` and `<player>_marginal` (name -> value);
- for an nfg game (no store), every strategy of every player, with `agents` numbered 0..S-1 in
  the order of `Game.labels` (`player:strategy`), which is the name list to publish them with;
  extras `player` and `marginal`.
Co-player contributions c(a'_p, a_j) ([DevR] section 5.2, [GTLLM] section 4.3) become extra
columns `c[<strategy>]` of the rated player, one per strategy of the last player: a task or a
prompt, or an agent (`ratings.agent_column`, published as `c[<agent name>]`).
"""

from __future__ import annotations

import numpy as np

from pipeline.games import GAMES, NORMALISATIONS, Game, build
from pipeline.methods.convergence import NoEstimate
from pipeline.methods.ratings import Ratings, agent_column
from pipeline.methods.registry import Size, one_of
from pipeline.stats.game_data import PromptCounts, ScoreTable

GameData = ScoreTable | PromptCounts | Game
PROMPT_GAMES = ("model-model-prompt", "king-of-the-hill")


def payoff_range(game: Game) -> float:
    """The largest payoff range of a player: the unit of the game solvers' tolerances and tie tolerances
    (1 when every payoff is constant, where any unit will do)."""
    return max(float(np.ptp(g)) for g in game.payoffs) or 1.0


CONSTANT_SUM_RTOL = 1e-9  # a game built from counts is zero-sum up to rounding of a few payoff ranges' 1e-16


def opposed(game: Game) -> bool:
    """Players 0 and 1 are paid amounts summing to one constant in every cell, up to `CONSTANT_SUM_RTOL` of the
    game's `payoff_range` (a third player, if any, is paid what it may)."""
    return bool(np.ptp(game.payoffs[0] + game.payoffs[1]) <= CONSTANT_SUM_RTOL * payoff_range(game))


def constant_sum(game: Game) -> bool:
    """A 2-player game whose payoffs sum to one constant in every cell (`opposed`): what Nash averaging needs and
    what lets the CCE search keep to the essential cells."""
    return game.n_players == 2 and opposed(game)


# The rules of the parameters every method on games takes (`choose_game`'s), checked where a spec is parsed.
GAME_RULES = {"game": one_of("auto", *GAMES), "norm": one_of(*NORMALISATIONS)}


def choose_game(data: GameData, game: str, norm: str, defaults: dict[str, str]) -> Game:
    """Build the game: `auto` picks `defaults['scores']` or `defaults['battles']`, and `agent-agent`
    for battles of which none has a prompt (the per-prompt games need prompts)."""
    if game == "auto" and not isinstance(data, Game):
        game = defaults["scores" if isinstance(data, ScoreTable) else "battles"]
        if isinstance(data, PromptCounts) and not len(data.prompts) and game in PROMPT_GAMES:
            game = "agent-agent"
    try:
        return build(data, game, norm=norm)
    except ValueError as exc:  # the data make no game (task weights that are not copies, too few agents): a refusal
        raise NoEstimate(str(exc)) from None


def game_ratings(game: Game, ratings: list[np.ndarray],
                 marginals: list[np.ndarray], *, contributions: np.ndarray | None = None,
                 info: dict[str, object] | None = None, tie_tolerance: float = 0.0) -> Ratings:
    """`Ratings` from one rating vector and one equilibrium marginal per player (see module doc);
    ratings closer than `tie_tolerance` (the solver's accuracy) share a rank."""
    info = dict(game.info) | dict(info or {})
    if game.ids[0] is None:
        extras = {"player": np.array([p for p, k in zip(game.players, game.shape) for _ in range(k)], dtype=object),
                  "marginal": np.concatenate(marginals)}
        if contributions is not None:
            info["contributions"] = contributions.tolist()
        return Ratings.from_scores(np.arange(sum(game.shape)), np.concatenate(ratings) + 0.0, extras=extras, info=info,
                                   tie_tolerance=tie_tolerance)
    extras = {"marginal": marginals[0]}
    for p in range(1, game.n_players):
        if game.ids[p] is not None and np.array_equal(game.ids[p], game.ids[0]):
            extras[f"{game.players[p]}_rating"], extras[f"{game.players[p]}_marginal"] = ratings[p], marginals[p]
        else:
            info[f"{game.players[p]}_ratings"] = dict(zip(game.strategies[p], ratings[p].tolist()))
            info[f"{game.players[p]}_marginal"] = dict(zip(game.strategies[p], marginals[p].tolist()))
    if contributions is not None:
        columns = [f"c[{s}]" for s in game.strategies[-1]] if game.ids[-1] is None else [agent_column("c", a) for a in game.ids[-1]]
        extras |= {name: contributions[:, j] for j, name in enumerate(columns)}
    return Ratings.from_scores(game.ids[0], ratings[0] + 0.0, extras=extras, info=info, tie_tolerance=tie_tolerance)


def resolved_game(size: Size, game: str, defaults: dict[str, str]) -> str:
    """The game a spec's `game` names, `auto` resolved from the input's size as `choose_game` resolves it from
    the data (by the log kind; agent-agent for battles without prompts)."""
    if game != "auto":
        return game
    game = defaults["scores" if size.kind == "scores" else "battles"]
    return "agent-agent" if game in PROMPT_GAMES and not size.tasks else game


def game_shape(size: Size, game: str, defaults: dict[str, str]) -> tuple[int, ...]:
    """The strategies per player of the game a spec asks for (`resolved_game`), from the input's size."""
    k, t = size.agents, max(size.tasks, 1)
    return {"agent-agent": (k, k), "agent-task": (k, t)}.get(resolved_game(size, game, defaults), (k, k, t))


def shape_text(shape: tuple[int, ...]) -> str:
    """A game's strategies per player as a refusal names them ("127 x 127 x 23")."""
    return " x ".join(f"{n:,}" for n in shape)
