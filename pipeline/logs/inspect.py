"""`vase inspect`: a bounded sample of a file, what a kind needs of it, and a mapping that reads it.

`inspect(path, kind)` reads the first `SAMPLE_ROWS` rows (never a store), lists the columns found
with a few values each, names the canonical columns the kind needs, and suggests a `Mapping` from
the columns' names and values: the two sides of a battle (`left`/`right`, `home_team`/`away_team`,
`winner_id`/`loser_id`), the outcome (a winner column's values mapped, a result column, or the
"winner column, loser column" shape), ids named from a lookup table beside the file (a table in
the same folder holding the ids in one column and a name in another), a wide game table's seats,
a score table's task column, and a `--where` for a file that mixes releases. The suggestion is
tried on the sample; the command to run is printed on a line of its own (`Inspection.command`).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipeline.logs.formats import batches
from pipeline.logs.kinds import KINDS
from pipeline.logs.mapping import Mapping, MappingError
from pipeline.logs.presets import with_preset
from pipeline.logs.records import TABULAR_SUFFIXES, RawRecords, UnreadableFile, internal

SAMPLE_ROWS = 2_000
SHOWN_VALUES = 3
NEEDS = {"battles": ("model_a", "model_b", "winner"), "games": ("game_id", "player", "score or place"),
         "scores": ("task", "agent", "score"), "ballots": ("ranking",), "reviews": ("see docs/guide.md, Council scoring",)}
METHODS = {"battles": ("elo", "m-elo:prior=0.01"), "games": ("borda", "elo"), "scores": ("borda", "copeland"),
           "ballots": ("borda", "copeland"), "reviews": ("council-borda",)}
# Names of the columns that hold a side of a battle, best first (names before ids).
SIDES = (("model_a", "model_b"), ("left", "right"), ("winner_name", "loser_name"), ("winner", "loser"),
         ("home_team", "away_team"), ("home", "away"), ("team_a", "team_b"), ("player_a", "player_b"),
         ("player1", "player2"), ("model_x", "model_y"), ("winner_id", "loser_id"))
OUTCOMES = {"left": "model_a", "right": "model_b", "home": "model_a", "away": "model_b", "a": "model_a", "b": "model_b",
            "model_a": "model_a", "model_b": "model_b", "tie": "tie", "draw": "tie", "tie (bothbad)": "tie (bothbad)",
            "1": "model_a", "2": "model_b", "0": "tie", "x": "tie"}
GAME_IDS = ("game_id", "game", "raceid", "race_id", "match_id", "match", "race", "event_id")
PLAYERS = ("player", "agent", "driverid", "driver_id", "player_id", "team", "name")
PLACES = ("place", "position", "rank", "position_order", "positionorder", "finish", "finishing_position")
TASKS = ("task", "question_id", "evaluation_name", "benchmark", "scenario", "prompt", "question")
AGENTS = ("agent", "model", "model_id", "model_name", "system")
TIMES = ("timestamp", "tstamp", "date", "time", "tourney_date", "datetime", "created_at")


@dataclass
class Inspection:
    path: Path
    kind: str
    rows: int  # rows sampled
    columns: dict[str, list[str]]  # column -> a few of its values
    needs: tuple[str, ...]
    mapping: Mapping
    notes: list[str] = field(default_factory=list)
    accepted: int = 0  # records of the sample the suggestion reads
    records: int = 0  # records of the sample (a wide game table's row is a record per seat)

    @property
    def options(self) -> list[str]:
        """The mapping as command-line options."""
        record, out = self.mapping.record(), []
        for key, option in (("preset", "--preset"), ("columns", "--columns"), ("set", "--set"), ("names", "--names"),
                            ("seats", "--seats")):
            if key in record:
                out += [option, str(record[key])]
        for key, option in (("values", "--values"), ("where", "--where")):
            for text in record.get(key, []):
                out += [option, text]
        return out

    @property
    def command(self) -> str:
        methods = [arg for m in METHODS.get(self.kind, ("borda",)) for arg in ("-m", m)]
        out = f"runs/{re.sub(r'[^A-Za-z0-9_.-]+', '-', self.path.stem)}"
        return shlex.join(["vase", "rate", str(self.path), "--kind", self.kind, *self.options, *methods, "--out", out])


def sample(path: Path) -> RawRecords:
    if path.suffix.lower() not in TABULAR_SUFFIXES:
        raise UnreadableFile(path, f"vase inspect reads tabular files ({', '.join(TABULAR_SUFFIXES)})")
    first = next(batches(path), None)
    if first is None or not first.frame.height:
        raise UnreadableFile(path, "holds no rows")
    return RawRecords(first.frame.head(SAMPLE_ROWS))


def inspect(path: str | Path, kind: str | None = None) -> Inspection:
    path = Path(path)
    raw = sample(path)
    frame = raw.frame.select(raw.columns)
    chosen = kind or guess_kind(frame)
    columns = {c: [str(v) for v in frame.get_column(c).drop_nulls().unique(maintain_order=True).head(SHOWN_VALUES).to_list()]
               for c in frame.columns}
    suggest = {"battles": suggest_battles, "games": suggest_games, "scores": suggest_scores}.get(chosen, lambda f, p: (Mapping(), []))
    mapping, notes = suggest(frame, path)
    found = Inspection(path, chosen, frame.height, columns, NEEDS.get(chosen, ()), mapping, notes)
    try_on_sample(found, raw)
    return found


def try_on_sample(found: Inspection, raw: RawRecords) -> None:
    """Read the sample through the suggestion; a file mixing releases gets a `--where`."""
    kind = KINDS[found.kind]
    for _ in range(2):
        try:
            found.mapping.check(kind)
            result = kind.read(found.mapping.apply(raw, kind, str(found.path)), str(found.path))
        except (MappingError, UnreadableFile) as exc:
            mixed = re.search(r"across the \d+ values of column '([^']+)': rate one with --where (\S+)", str(exc))
            if mixed and not found.mapping.where:
                found.mapping = with_preset(**_texts(found.mapping), where=[mixed.group(2)])
                found.notes.append(f"the file mixes the values of {mixed.group(1)}: rate one with --where (as below), "
                                   f"or each with --by {mixed.group(1)}")
                continue
            found.notes.append(f"the suggestion does not read the sample yet: {exc}")
            return
        found.accepted, found.records = result.rows_accepted, result.rows_in
        if result.rows_quarantined:
            reasons = pl.from_arrow(result.quarantined).get_column("reason").value_counts(sort=True)
            found.notes.append(f"{result.rows_quarantined} of {result.rows_in} sampled rows would be quarantined, e.g. "
                               f"{reasons.row(0)[0]!r}")
        return


def _texts(mapping: Mapping) -> dict:
    record = mapping.record()
    return {"columns": record.get("columns", ""), "values": record.get("values", []), "constants": record.get("set", ""),
            "names": str(record.get("names", "")), "seats": str(record.get("seats", "")), "name": str(record.get("preset", ""))}


def _named(frame: pl.DataFrame, names: tuple[str, ...]) -> str | None:
    lowered = {c.lower(): c for c in frame.columns}
    return next((lowered[n] for n in names if n in lowered), None)


def _numeric(values: pl.Series) -> bool:
    text = values.drop_nulls().cast(pl.String).str.strip_chars()
    return text.len() > 0 and bool(text.str.contains(r"^-?[0-9]+(\.0+)?$").all())


def guess_kind(frame: pl.DataFrame) -> str:
    lowered = {c.lower() for c in frame.columns}
    if any(a in lowered and b in lowered for a, b in SIDES):
        return "battles"
    if "ranking" in lowered:
        return "ballots"
    if _named(frame, PLACES) or (_named(frame, GAME_IDS) and _seats(frame)):
        return "games"
    return "scores"


def name_table(path: Path, ids: pl.Series, column_name: str) -> str | None:
    """`TABLE:ID=NAME` for a table beside `path` that names the sampled `ids` (of the log's column
    `column_name`), or None; a table whose id column bears the log column's name comes first."""
    wanted = set(ids.drop_nulls().cast(pl.String).str.strip_chars().str.strip_suffix(".0").to_list())
    found: list[tuple[bool, str]] = []
    for table in sorted(path.parent.iterdir()):
        if table == path or table.suffix.lower() not in TABULAR_SUFFIXES or not table.is_file():
            continue
        try:
            frame = sample_whole(table)
        except UnreadableFile:
            continue
        lowered = {c.lower(): c for c in frame.columns}
        name = lowered.get("name") or ("forename+surname" if {"forename", "surname"} <= set(lowered) else None)
        if name is None:
            continue
        for column in frame.columns:
            known = set(frame.get_column(column).cast(pl.String).str.strip_chars().to_list())
            if column.lower() != "name" and wanted and len(wanted & known) >= 0.9 * len(wanted):
                spec = "+".join(lowered[n] for n in name.split("+"))
                found.append((column.lower() != column_name.lower(), f"{table}:{column}={spec}"))
    return min(found)[1] if found else None


def sample_whole(table: Path) -> pl.DataFrame:
    raw = RawRecords.concat(list(batches(table)))
    return raw.frame.select([c for c in raw.frame.columns if not internal(c)])


def suggest_battles(frame: pl.DataFrame, path: Path) -> tuple[Mapping, list[str]]:
    notes: list[str] = []
    lowered = {c.lower(): c for c in frame.columns}
    pairs = [(lowered[a], lowered[b]) for a, b in SIDES if a in lowered and b in lowered]
    named = [p for p in pairs if not _numeric(frame.get_column(p[0]))]
    side_a, side_b = (named or pairs or [(None, None)])[0]
    columns, values, constants, names = {}, [], {}, ""
    if side_a is None:
        notes.append("no two columns look like the sides of a battle: map them with --columns model_a=...,model_b=...")
        return Mapping(), notes
    if (side_a, side_b) != ("model_a", "model_b"):
        columns |= {"model_a": side_a, "model_b": side_b}
    if _numeric(frame.get_column(side_a)):
        names = name_table(path, pl.concat([frame.get_column(side_a), frame.get_column(side_b)]).cast(pl.String), side_a) or ""
        notes.append(f"agents named from {names}" if names else "the sides hold ids and no table beside the file names them")
    outcome = next((lowered[c] for c in ("winner", "result", "outcome") if c in lowered and lowered[c] not in (side_a, side_b)), None)
    if outcome is None and side_a.lower().startswith("winner"):
        constants["winner"] = "model_a"
        notes.append(f"{side_a} always won: --set winner=model_a")
    elif outcome is not None:
        if outcome != "winner":
            columns["winner"] = outcome
        seen = frame.get_column(outcome).drop_nulls().cast(pl.String).str.strip_chars().unique().to_list()
        sides = set(frame.get_column(side_a).cast(pl.String).to_list()) | set(frame.get_column(side_b).cast(pl.String).to_list())
        if seen and set(seen) <= sides | {"tie", "draw"}:
            values.append("winner:@model_a=model_a,@model_b=model_b" + (",draw=tie" if "draw" in seen else ""))
        elif not set(seen) <= {"model_a", "model_b", "tie", "tie (bothbad)"}:
            mapped = {v: OUTCOMES[v.lower()] for v in sorted(seen) if v.lower() in OUTCOMES}
            if unknown := sorted(set(seen) - set(mapped)):
                notes.append(f"winner values with no guess: {', '.join(unknown[:5])}: add them to --values")
            values.append("winner:" + ",".join(f"{k}={v}" for k, v in mapped.items()))
    judge = _named(frame, ("judge", "annotator", "worker"))
    if judge is None and (rater := _named(frame, ("user", "rater", "voter"))):
        columns["judge"] = rater
    stamp = _named(frame, TIMES)
    if stamp is not None and stamp.lower() not in ("timestamp", "tstamp"):
        columns["timestamp"] = stamp
    preset = "arena" if "conv_metadata" in lowered else ""  # an Arena dump: its style features too
    mapping = with_preset(preset, columns=",".join(f"{k}={v}" for k, v in columns.items()), values=values,
                          constants=",".join(f"{k}={v}" for k, v in constants.items()), names=names)
    return mapping, notes


def _seats(frame: pl.DataFrame) -> list[str]:
    """Columns that look like a wide table's seats: three or more numeric columns, not ids."""
    skip = set(GAME_IDS) | {"outcome", "year", "round", "season", "date", "timestamp", "weight"}
    numeric = [c for c in frame.columns if c.lower() not in skip and _numeric(frame.get_column(c))
               and frame.get_column(c).cast(pl.String).n_unique() <= 50]
    return numeric if len(numeric) >= 3 else []


def suggest_games(frame: pl.DataFrame, path: Path) -> tuple[Mapping, list[str]]:
    notes: list[str] = []
    columns: dict[str, str] = {}
    game = _named(frame, GAME_IDS)
    player = _named(frame, PLAYERS)
    if game is not None and game != "game_id" and game.lower() != "game":
        columns["game_id"] = game
    if player is None:
        seats = _seats(frame)
        if not seats:
            notes.append("no player column and no seat columns: map them with --columns player=... or --seats")
            return Mapping.parse(columns=",".join(f"{k}={v}" for k, v in columns.items())), notes
        cells = pl.concat([frame.get_column(c).cast(pl.String) for c in seats])
        values = []
        if cells.cast(pl.Float64, strict=False).min() == 0 and cells.mode().to_list() == ["0"]:
            values = ["score:0=0,*=1"]
            notes.append("cells are mostly 0: read as a win (any other value) or a loss (0), winners tied")
        return Mapping.parse(columns=",".join(f"{k}={v}" for k, v in columns.items()), seats=",".join(seats),
                             values=values), notes
    if player.lower() not in ("player", "agent"):
        columns["player"] = player
    place = _named(frame, PLACES)
    if place is not None and place.lower() not in ("place", "position", "rank"):
        columns["place"] = place
    names = ""
    if _numeric(frame.get_column(player)):
        names = name_table(path, frame.get_column(player), player) or ""
        notes.append(f"players named from {names}" if names else "players are ids and no table beside the file names them")
    return Mapping.parse(columns=",".join(f"{k}={v}" for k, v in columns.items()), names=names), notes


def suggest_scores(frame: pl.DataFrame, path: Path) -> tuple[Mapping, list[str]]:
    notes: list[str] = []
    columns: dict[str, str] = {}
    lowered = {c.lower() for c in frame.columns}
    if "score" not in lowered:
        notes.append("no score column: read as a wide table (the first column the task, one column per agent)")
        return Mapping(), notes
    task = _named(frame, TASKS)
    if task is not None and task.lower() != "task":
        columns["task"] = task
    agent = _named(frame, AGENTS)
    if agent is not None and agent.lower() not in ("agent", "model"):
        columns["agent"] = agent
    if task is None:
        notes.append("no task column: map one with --columns task=..., or --set task=NAME for one ranking")
        return Mapping.parse(columns=",".join(f"{k}={v}" for k, v in columns.items()), constants="task=" + path.stem), notes
    return Mapping.parse(columns=",".join(f"{k}={v}" for k, v in columns.items())), notes
