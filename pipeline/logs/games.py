"""Multi-player games: one row per player per game; each game is a weak order over its players.

Canonical columns: `game_id`, `player`, `score` (higher is better) or `place` (1 is best; equal
places are ties), optional `timestamp`, `weight`. A file gives either a place column (`place`,
`position`, `rank`) or a `score` column. A row with a bad value is quarantined and the rest of its
game kept (a partial order), unless fewer than two players remain, in which case the whole game
is quarantined. All rows of a game must agree on its weight and timestamp.

Stored: players as ids of the agents dictionary. Each game is a weak order over its players (by
place, or by decreasing score). A game id names one game across the store: a game whose id an
earlier file (or an earlier version of a file that grew) holds is a duplicate, quarantined whole.
A game of more than `MAX_RANKED` players is quarantined.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import column, unit_codes
from pipeline.logs.kinds import LogKind, register_kind
from pipeline.logs.orders import MAX_RANKED, WeakOrders
from pipeline.logs.records import RawRecords, UnreadableFile
from pipeline.logs.triage import Check, ReadResult, Triage, differs, number, text, weight_checks, weight_value
from pipeline.weights import quantize_expr

SCHEMA = pa.schema(
    [
        ("game_id", pa.string()),
        ("player", pa.string()),
        ("score", pa.float64()),
        ("place", pa.float64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("weight", pa.float64()),
    ]
)


def read_games(raw: RawRecords, source: str) -> ReadResult:
    t = Triage(source, raw)
    game, player = t.column("game_id", "game"), t.column("player", "agent")
    place = t.column("place", "position", "rank", required=False)
    score = None if place else t.column("score", required=False)
    if raw.frame.height and place is None and score is None:
        raise UnreadableFile(source, "a games log needs a 'score' or a 'place' column")
    stamp = t.column("timestamp", "date", required=False)
    weight = t.column("weight", required=False)
    schema = t.frame.schema
    value, field = (place, "place") if place else (score, "score")

    t.derive_labels({"game_id": game})  # a game's rows share its id: checks by game compare codes
    t.derive_labels({"player": player})
    t.derive(
        value=number(value, schema[value]) if value else pl.lit(None, pl.Float64),
        weight=weight_value(weight, schema.get(weight)),
    )
    stamp_checks = t.derive_timestamp(stamp)
    checks = [
        Check("game_id", "missing game_id", pl.col("~game_id").is_null()),
        Check("player", "missing player", pl.col("~player").is_null()),
        Check(field, f"missing {field}", pl.col("~value").is_null() & (text(value).is_null() if value else pl.lit(True))),
        Check(field, f"{field} is not a number", pl.col("~value").is_null()),
        Check(field, f"{field} is not finite", ~pl.col("~value").is_finite()),
    ]
    if place:
        checks.append(Check(field, "place must be 1 or more", pl.col("~value") < 1))
    checks += stamp_checks
    checks += weight_checks("~weight", weight)
    t.reject(checks)

    t.reject_repeats(["~game_id", "~player"], "player", "duplicate player in game")
    t.reject_units(
        "~game_id",
        [
            Check("weight", "rows of one game disagree on its weight", differs("~weight")),
            Check("timestamp", "rows of one game disagree on its timestamp", differs("~timestamp")),
            Check("game_id", "game has fewer than two players", pl.len() < 2),
            Check("game_id", f"game has more than {MAX_RANKED:,} players", pl.len() > MAX_RANKED),
        ],
    )
    canonical = {
        "game_id": pl.col("~game_id"),
        "player": pl.col("~player"),
        "score": pl.lit(None, pl.Float64) if place else pl.col("~value"),
        "place": pl.col("~value") if place else pl.lit(None, pl.Float64),
        "timestamp": pl.col("~timestamp"),
        "weight": quantize_expr(pl.col("~weight")),
    }
    return t.result("games", canonical, SCHEMA)


def game_orders(table: pa.Table) -> WeakOrders:
    """Each game as a weak order: by place where given, else by decreasing score."""
    by_score = pc.is_null(table.column("place")).to_numpy(zero_copy_only=False)
    level = np.where(by_score, -column(table, "score", 0.0), column(table, "place", 0.0))
    return WeakOrders.from_rows(unit_codes(table, "game_id"), column(table, "player"), level, column(table, "weight"))


GAMES = register_kind(LogKind(
    "games", holds="one player's result in one game per row", unit="game",
    read=read_games, schema=SCHEMA, ids={"player": "agents"},
    columns=("game_id", "player", "score", "place", "weight"), weak_orders=game_orders, unit_column="game_id",
    record_id=("game_id",),
))
