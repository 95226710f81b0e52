"""A seeded generator of Diplomacy-scale game logs, for backtests at the scale of [VasE] section 4.3.

The paper's webDiplomacy data has 31,049 seven-player games over 52,958 players (4.104 games per
player on average). This generator writes a games log of that shape, which is ingested into a
store like any other log:

- Players: skill s_i ~ N(0, `skill_sd`^2), and a style angle theta_i ~ U(0, 2 pi) for the
  non-transitive part.
- Seats: every player plays at least once; the other games * seats - players seats go to players
  in proportion to an activity ~ LogNormal(0, 1) (a few regulars, many one-off players). Each
  player has a career start c_i ~ U(0, 1) and each of its seats a time c_i + N(0, `career`^2);
  seats sorted by time are dealt seven per game, so games mix players active at the same time,
  and a game's timestamp follows that order from `start` over `years` years, truncated to
  `resolution_days` (a week by default: the store partitions by date, so about 600 files). A player dealt twice into one game swaps seats with a nearby game.
- Outcome: performance = s_i + `cycle` * mean over opponents j of sin(theta_i - theta_j) (a disc
  game: rock-paper-scissors-like cycles among styles, as in Balduzzi et al.'s spinning tops
  [Bal18]) + `noise` * Gumbel noise (so, without the cycle, the order is Plackett-Luce in
  exp(s / noise)). The 34 supply centres are split among the 7 players as
  Multinomial(34, Dirichlet(0.6)), sorted and handed out in order of performance: the `score` is
  the number of centres, so eliminated players (0 centres) tie, as in real games.

Everything is drawn from one `np.random.default_rng(seed)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from pipeline.store.files import atomic_write, write_parquet

CENTRES = 34


@dataclass(frozen=True, eq=False)
class SyntheticGames:
    table: pa.Table  # game_id, player, score, timestamp: one row per player per game
    names: list[str]  # player names, index = generator's player index
    skill: np.ndarray  # true transitive skill per player
    style: np.ndarray  # style angle per player (the non-transitive part)

    def skill_of(self, names: list[str]) -> np.ndarray:
        index = {name: i for i, name in enumerate(self.names)}
        return self.skill[[index[n] for n in names]]


def _deal(rng: np.random.Generator, slots: np.ndarray, seats: int, max_rounds: int = 50) -> np.ndarray:
    """Swap seats until no player sits twice in one game (seats dealt in order, `seats` per game)."""
    slots = slots.copy()
    games = len(slots) // seats
    for _ in range(max_rounds):
        grid = slots.reshape(games, seats)
        order = np.argsort(grid, axis=1, kind="stable")
        ranked = np.take_along_axis(grid, order, axis=1)
        twice = np.zeros(grid.shape, bool)
        twice[:, 1:] = ranked[:, 1:] == ranked[:, :-1]
        rows, cols = np.nonzero(twice)
        if not len(rows):
            return slots
        flat = rows * seats + order[rows, cols]
        shift = rng.integers(1, 30, size=len(flat)) * seats * rng.choice([-1, 1], size=len(flat))
        other = (flat + shift + rng.integers(0, seats, size=len(flat))) % len(slots)
        for p, q in zip(flat.tolist(), other.tolist()):
            slots[p], slots[q] = slots[q], slots[p]
    raise RuntimeError("could not deal players into distinct seats; use fewer seats per game or more players")


def diplomacy_games(*, games: int = 31_049, players: int = 52_958, seats: int = 7, seed: int = 0, skill_sd: float = 1.0,
                    noise: float = 1.0, cycle: float = 0.5, career: float = 0.03, start: str = "2008-01-01",
                    years: float = 11.5, resolution_days: int = 7) -> SyntheticGames:
    """A Diplomacy-like games log (defaults: the size of the paper's webDiplomacy data)."""
    total = games * seats
    if players > total or players < seats:
        raise ValueError(f"{players} players cannot fill {games} games of {seats} with every player playing")
    rng = np.random.default_rng(seed)
    skill = rng.normal(0.0, skill_sd, players)
    style = rng.uniform(0.0, 2 * np.pi, players)
    activity = rng.lognormal(0.0, 1.0, players)
    counts = 1 + rng.multinomial(total - players, activity / activity.sum())
    owner = np.repeat(np.arange(players), counts)
    when = rng.uniform(0.0, 1.0, players)[owner] + rng.normal(0.0, career, total)
    slots = _deal(rng, owner[np.argsort(when, kind="stable")], seats)
    grid = slots.reshape(games, seats)

    opponents = np.sin(style[grid][:, :, None] - style[grid][:, None, :]).sum(axis=2) / (seats - 1)
    performance = skill[grid] + cycle * opponents + noise * rng.gumbel(size=grid.shape)
    centres = -np.sort(-rng.multinomial(CENTRES, rng.dirichlet(np.full(seats, 0.6), size=games)), axis=1)
    place = np.argsort(np.argsort(-performance, axis=1, kind="stable"), axis=1, kind="stable")
    score = np.take_along_axis(centres, place, axis=1)

    day0 = np.datetime64(start, "D").astype(np.int64)
    days = day0 + resolution_days * np.floor(np.arange(games) / games * years * 365.25 / resolution_days).astype(np.int64)
    names = [f"p{i:05d}" for i in range(players)]
    table = pa.table({
        "game_id": pa.array(np.repeat([f"g{g:05d}" for g in range(games)], seats)),
        "player": pa.array(np.array(names, dtype=object)[grid.ravel()]),
        "score": pa.array(score.ravel().astype(np.float64)),
        "timestamp": pa.array(np.repeat(days, seats).astype("datetime64[D]").astype("datetime64[us]"), pa.timestamp("us", tz="UTC")),
    })
    return SyntheticGames(table, names, skill, style)


def write_games(path: str | Path, games: SyntheticGames) -> Path:
    """Write the log as Parquet or CSV (by suffix), atomically."""
    path = Path(path)
    if path.suffix == ".parquet":
        write_parquet(path, games.table)
    elif path.suffix == ".csv":
        atomic_write(path, lambda tmp: pacsv.write_csv(games.table, tmp))
    else:
        raise ValueError(f"write a .parquet or .csv games log, not {path.name}")
    return path
