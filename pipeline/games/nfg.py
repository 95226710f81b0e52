"""The `nfg` log kind: normal-form games given as payoff tensors, rated directly (not stored).

A game file is its own statistic: `game_statistics` hands the game to the methods that read
`game_data` (deviation, Nash averaging, affinity, uniform), one agent per strategy of every player,
named `player:strategy` in the order of `Game.labels`.

Formats:
- `.npz`: arrays `payoffs` of shape (N, |A_1|, ..., |A_N|), or `payoff_0`, ..., `payoff_{N-1}`
  each of shape (|A_1|, ..., |A_N|); optional `players` (N strings) and `strategies_<p>` (names
  of player p's strategies); defaults are `p0`, `p1`, ... and `0`, `1`, ...
- Gambit `.nfg` (version 1 and 2): `NFG 1 R "title" { "P1" "P2" } { { "a" "b" } { "c" "d" } }`
  (or strategy counts `{ 2 2 }`) followed either by the payoff list (for each joint strategy, the
  first player's strategy changing fastest, one payoff per player) or by outcomes and an index
  list. Quoted names may contain escaped quotes.

Validation: tensors agree in shape, payoffs are finite, every player has at least one strategy,
names are distinct. Names are read as the logs' are (`pipeline.logs.names`): in NFC without
surrounding whitespace, at most `MAX_NAME` characters, and without control or format characters
(a bidirectional override or a zero-width joiner would print like another name); an empty name
is its number, as in Gambit's count form (`Player1`, or the strategy's 1-based number). An invalid
file raises `UnreadableFile` with the reason (there are no rows to quarantine: a game is one record).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import numpy as np

from pipeline.arrays import sort_positions
from pipeline.games.game import Game
from pipeline.logs import LogKind, register_kind
from pipeline.logs.names import FORBIDDEN_CATEGORIES, MAX_NAME
from pipeline.logs.records import UnreadableFile, check_regular_file
from pipeline.stats import Statistics

NFG_SUFFIXES = (".nfg", ".npz")
_TOKEN = re.compile(r'"((?:[^"\\]|\\.)*)"|([{}])|([^\s{}"]+)')


def read_nfg(path: str | Path) -> Game:
    """The game in an `.npz` or Gambit `.nfg` file."""
    path = Path(path)
    try:
        check_regular_file(path)
        if path.suffix.lower() == ".npz":
            game = _read_npz(path)
        elif path.suffix.lower() == ".nfg":
            game = _read_gambit(path.read_text(encoding="utf-8-sig"))  # a byte order mark is fine
        else:
            raise ValueError(f"expected one of {', '.join(NFG_SUFFIXES)}")
        players = tuple(game_name(name, f"Player{p + 1}", "player") for p, name in enumerate(game.players))
        strategies = tuple(tuple(game_name(name, str(k + 1), f"a strategy of {player}") for k, name in enumerate(names))
                           for player, names in zip(players, game.strategies))
        return Game(game.payoffs, players, strategies, info={"game": "nfg", "source": path.name})
    except UnreadableFile:
        raise
    except (OSError, ValueError, KeyError) as exc:
        raise UnreadableFile(path, str(exc)) from None


def game_name(text: str, default: str, what: str) -> str:
    """A player's or strategy's name as an agent's name is read (NFC, stripped); `default` if empty."""
    name = unicodedata.normalize("NFC", text).strip() or default
    if bad := next((c for c in name if unicodedata.category(c) in FORBIDDEN_CATEGORIES), None):
        raise ValueError(f"{what} {name[:40]!r} contains a control or format character (U+{ord(bad):04X}), "
                         "which would print like another name")
    if len(name) > MAX_NAME:
        raise ValueError(f"{what} {name[:40]!r}... is longer than {MAX_NAME:,} characters")
    return name


def _read_npz(path: Path) -> Game:
    with np.load(path, allow_pickle=False) as data:
        if "payoffs" in data:
            stacked = data["payoffs"]
            payoffs = tuple(stacked[p] for p in range(stacked.shape[0]))
        else:
            payoffs = tuple(data[f"payoff_{p}"] for p in range(sum(k.startswith("payoff_") for k in data.files)))
        if not payoffs:
            raise ValueError("no payoffs: expected an array 'payoffs' or 'payoff_0', 'payoff_1', ...")
        n = len(payoffs)
        players = tuple(str(s) for s in data["players"]) if "players" in data else tuple(f"p{p}" for p in range(n))
        shape = payoffs[0].shape
        strategies = tuple(tuple(str(s) for s in data[f"strategies_{p}"]) if f"strategies_{p}" in data
                           else tuple(str(i) for i in range(shape[p] if p < len(shape) else 0)) for p in range(n))
    return Game(payoffs, players, strategies)


def _tokens(text: str) -> list[str]:
    out = []
    for quoted, brace, word in _TOKEN.findall(text):
        out.append(brace or word or "\0" + quoted.replace('\\"', '"'))
    return out


def _group(tokens: list[str], i: int) -> tuple[list, int]:
    """The brace group starting at tokens[i] == '{' as nested lists; returns it and the next index."""
    if tokens[i] != "{":
        raise ValueError(f"expected '{{' at token {i}")
    items, i = [], i + 1
    while tokens[i] != "}":
        if tokens[i] == "{":
            item, i = _group(tokens, i)
            items.append(item)
        else:
            items.append(tokens[i])
            i += 1
    return items, i + 1


def _text(token) -> str:
    if not isinstance(token, str) or not token.startswith("\0"):
        raise ValueError(f"expected a quoted name, got {token!r}")
    return token[1:]


def _read_gambit(text: str) -> Game:
    tokens = _tokens(text)
    if len(tokens) < 4 or tokens[0] != "NFG" or tokens[2] != "R":
        raise ValueError("not a Gambit NFG file (expected 'NFG 1 R' or 'NFG 2 R')")
    i = 4  # after the title
    players, i = _group(tokens, i)
    players = [_text(p) for p in players]
    strategies, i = _group(tokens, i)
    if all(isinstance(s, list) for s in strategies):
        names = [tuple(_text(x) for x in s) for s in strategies]
    else:
        names = [tuple(str(k) for k in range(1, int(s) + 1)) for s in strategies]
    if len(names) != len(players):
        raise ValueError(f"{len(players)} players but strategies for {len(names)}")
    shape = tuple(len(s) for s in names)
    n, joints = len(players), int(np.prod(shape))
    if i < len(tokens) and tokens[i].startswith("\0"):
        i += 1  # optional comment
    rest = tokens[i:]
    if rest and rest[0] == "{":  # outcome form: { { "name" p1 p2 ... } ... } then one outcome index per joint
        group, j = _group(rest, 0)
        rest = rest[j:]
        outcomes = [np.zeros(n)] + [np.array([float(v.replace(",", "")) for v in o if not v.startswith("\0")])
                                    for o in group]  # outcome 0 pays nothing
        index = [int(t) for t in rest]
        if len(index) != joints:
            raise ValueError(f"{len(index)} outcome indices for {joints} joint strategies")
        flat = np.array([outcomes[k] for k in index])
    else:
        values = np.array([float(t.replace(",", "")) for t in rest])
        if len(values) != joints * n:
            raise ValueError(f"{len(values)} payoffs for {joints} joint strategies of {n} players")
        flat = values.reshape(joints, n)
    if flat.shape[1] != n:
        raise ValueError(f"outcomes must have {n} payoffs")
    payoffs = tuple(flat[:, p].reshape(shape[::-1]).transpose() for p in range(n))  # first player fastest
    return Game(payoffs, tuple(players), tuple(names))


def game_statistics(path: str | Path) -> tuple[Statistics, list[str]]:
    """The game in a file as the `game_data` statistic over its strategies, and their names (`player:strategy`)."""
    game = read_nfg(path)
    labels = game.labels
    keys = sort_positions(np.array(labels, dtype=object))
    return Statistics("nfg", np.arange(len(labels)), np.ones(len(labels), np.int64), extra={"game_data": game},
                      agent_keys=keys), labels


NFG = register_kind(LogKind(
    "nfg", holds="one normal-form game per file: Gambit .nfg, or .npz payoff tensors", unit="game",
    suffixes=NFG_SUFFIXES, load=game_statistics, statistics=("game_data",),
))
