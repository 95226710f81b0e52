"""Bring your own data: a `Mapping` says how a file's columns and values become a kind's.

One small, frozen value, parsed from the command line (`vase rate --columns ... --values ...`)
or from a board's `mapping:` in the nightly config, and applied to every batch of raw records
before the kind reads them (`pipeline.logs.read_batches`), as polars expressions:

1. `where`: rows whose column holds the value (`release=2024-08-31`), or does not
   (`evaluation_name!=Mean win rate`), the others not read (nor counted);
2. `seats`: a wide game table melted into one row per seat (`games`): `England,France` (the
   column's name is the player, its cell the score), or `p1=s1,p2=s2` (the player's name in p1,
   its score in s1); `place:` before them reads the cells as places (1 is best);
3. `columns`: renames, canonical name -> the file's column (`model_a=left`);
4. `constants`: a canonical column holding one value on every row (`winner=model_a`: the
   "winner column, loser column" shape of sports tables);
5. `values`: a canonical column's values mapped (`winner:left=model_a,right=model_b,draw=tie`;
   `*` stands for any other value, `@model_a` for the value of column model_a on the row, as in
   `winner:@model_a=model_a,@model_b=model_b` when the winner column names the winner); a value
   the map does not cover is quarantined, naming it;
6. `names`: agents named from a lookup table (`players.csv:player_id=name`, or
   `drivers.csv:driverId=forename+surname` to join columns with a space); an id the table does
   not hold is quarantined, naming the table;
7. `split`: the column a board is split by (`--by release`): it becomes the rows' category, and
   a unit (a score table's task) is named within it (`2024-08-31/AMPS_Hard`), so the same task
   of two releases is two voters.

`check` refuses a mapping that cannot apply to a kind (an unknown canonical column, two columns
mapped to one, a value mapped to a label the kind does not know) and `check_file` one that
cannot apply to a file (a column it does not have, all of them named; a value of its first batch
that no map covers), both before anything is written. `record()` is what run.json and the
manifest keep; `digest` names the mapping in an input's key, so the same bytes under another
mapping are another input (`pipeline.store.store.IngestReport.key`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import polars as pl

from pipeline.logs.kinds import LogKind
from pipeline.logs.records import INVALID, LINE, NESTED, TABULAR_SUFFIXES, RawRecords, UnreadableFile, internal

SAMPLE_ROWS = 10_000  # rows of each file that `check_files` reads
ANY = "*"  # in a value map: any value not mapped otherwise
SAME = "@"  # in a value map, before a column's name: the value that column holds on the row
SPLIT_SEPARATOR = "/"


class MappingError(ValueError):
    """A mapping that cannot be applied: one line, raised before any store is written."""


def _pairs(text: str, what: str, separator: str = "=") -> list[tuple[str, str]]:
    """`a=b,c=d` as [(a, b), (c, d)]; a part without the separator is refused, naming `what`."""
    pairs = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = part.partition(separator)
        if not sep or not key.strip() or not value.strip():
            raise MappingError(f"{what}: expected NAME{separator}VALUE, got {part!r}")
        pairs.append((key.strip(), value.strip()))
    return pairs


def _unique(pairs: list[tuple[str, str]], what: str) -> tuple[tuple[str, str], ...]:
    keys = [k for k, _ in pairs]
    if twice := sorted({k for k in keys if keys.count(k) > 1}):
        raise MappingError(f"{what}: {twice[0]!r} is given twice")
    return tuple(pairs)


@dataclass(frozen=True)
class NameTable:
    """Agents named from a table: the ids of the log are looked up in `id_column` of `path`, and
    the name is `name_columns` joined by spaces. `sha256` is the table's content (a changed table
    is another mapping)."""

    path: str
    id_column: str
    name_columns: tuple[str, ...]
    sha256: str = ""

    @classmethod
    def parse(cls, text: str, base: Path | None = None) -> NameTable:
        path, sep, spec = text.rpartition(":")
        key, eq, names = spec.partition("=")
        if not sep or not eq or not path or not key.strip() or not names.strip():
            raise MappingError(f"--names: expected TABLE:ID_COLUMN=NAME_COLUMN (e.g. players.csv:player_id=name), got {text!r}")
        file = Path(path) if base is None or Path(path).is_absolute() else base / path
        if not file.is_file():
            raise MappingError(f"--names: no such file {file}")
        sha = hashlib.sha256(file.read_bytes()).hexdigest()
        return cls(str(file), key.strip(), tuple(n.strip() for n in names.split("+")), sha)

    def lookup(self) -> tuple[list[str], list[str]]:
        """(ids, names) of the table; an id given twice, or a column it lacks, is refused."""
        from pipeline.logs.formats import read_records

        try:
            frame = read_records(self.path).frame
        except UnreadableFile as exc:
            raise MappingError(f"--names: {exc}") from None
        if missing := [c for c in (self.id_column, *self.name_columns) if c not in frame.columns]:
            raise MappingError(f"--names: {self.path} has no column {', '.join(map(repr, missing))} "
                               f"(it has {', '.join(c for c in frame.columns if not internal(c))})")
        table = frame.select(
            pl.col(self.id_column).cast(pl.String).str.strip_chars().alias("id"),
            pl.concat_str([pl.col(c).cast(pl.String).str.strip_chars() for c in self.name_columns], separator=" ",
                          ignore_nulls=True).replace("", None).alias("name"),
        ).filter(pl.col("id").is_not_null() & (pl.col("id") != ""))
        if (twice := table.filter(pl.col("id").is_duplicated())).height:
            raise MappingError(f"--names: {self.path}: id {twice.get_column('id')[0]!r} appears twice in {self.id_column}")
        return table.get_column("id").to_list(), table.get_column("name").to_list()

    def text(self) -> str:
        return f"{self.path}:{self.id_column}={'+'.join(self.name_columns)}"


@dataclass(frozen=True)
class Seats:
    """A wide game table's seats: (player column, value column); a value column of None means
    the column's name is the player and its cell the value. `value` is `score` or `place`."""

    seats: tuple[tuple[str, str | None], ...]
    value: str = "score"

    @classmethod
    def parse(cls, text: str) -> Seats:
        value, sep, rest = text.partition(":")
        if not sep or value not in ("score", "place"):
            value, rest = "score", text
        seats = []
        for part in (p.strip() for p in rest.split(",")):
            if part:
                player, eq, cell = part.partition("=")
                seats.append((player.strip(), cell.strip() if eq else None))
        if len(seats) < 2:
            raise MappingError(f"--seats: a game needs at least two seats, got {text!r}")
        return cls(_unique(seats, "--seats"), value)

    def text(self) -> str:
        return f"{self.value}:" + ",".join(p if c is None else f"{p}={c}" for p, c in self.seats)

    @property
    def file_columns(self) -> list[str]:
        return [c for seat in self.seats for c in seat if c is not None]


@dataclass(frozen=True)
class Mapping:
    """How a file's columns and values become a kind's canonical ones (see the module's docstring)."""

    columns: tuple[tuple[str, str], ...] = ()  # canonical -> the file's column
    values: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()  # canonical column -> (file value -> value)
    constants: tuple[tuple[str, str], ...] = ()  # canonical column -> its value on every row
    names: NameTable | None = None
    where: tuple[tuple[str, str], ...] = ()  # the file's column -> the value of the rows kept
    seats: Seats | None = None
    split: str | None = None  # the file's column a board is split by (`--by COLUMN`)
    nested: tuple[tuple[str, str, tuple[str, ...]], ...] = ()  # canonical <- the sum of JSON paths in a file's column
    preset: str = field(default="", compare=False)  # the preset it came from, for messages
    preset_kind: str = field(default="", compare=False)  # the kind that preset reads

    @classmethod
    def parse(cls, *, columns: str = "", values: list[str] | tuple[str, ...] = (), constants: str = "",
              names: str = "", where: list[str] | tuple[str, ...] = (), seats: str = "", preset: str = "",
              preset_kind: str = "", start: Mapping | None = None, base: Path | None = None) -> Mapping:
        """The mapping of the command line's texts (or a config's, `base` its folder), added to `start`
        (a preset's mapping, named `preset`: `pipeline.logs.presets.with_preset`): its parts come first
        and the texts given add to them (or replace a column's entry)."""
        start = cls() if start is None else start
        value_maps = dict(start.values)
        for text in values:
            column, sep, pairs = text.partition(":")
            if not sep or not column.strip():
                raise MappingError(f"--values: expected COLUMN:VALUE=MAPPED,..., got {text!r}")
            if column.strip() in value_maps and column.strip() not in dict(start.values):
                raise MappingError(f"--values: column {column.strip()!r} is given twice")
            value_maps[column.strip()] = _unique(_pairs(pairs, f"--values {column.strip()}"), f"--values {column.strip()}")
        where_pairs = [pair for text in where for pair in _pairs(text, "--where")]
        mapping = cls(
            columns=tuple({**dict(start.columns), **dict(_unique(_pairs(columns, "--columns"), "--columns"))}.items()),
            values=tuple(value_maps.items()),
            constants=tuple({**dict(start.constants), **dict(_unique(_pairs(constants, "--set"), "--set"))}.items()),
            names=NameTable.parse(names, base) if names else start.names,
            nested=start.nested,
            where=_unique(list(start.where) + where_pairs, "--where"),
            seats=Seats.parse(seats) if seats else start.seats,
            preset=preset,
            preset_kind=preset_kind,
        )
        mapping._check_shape()
        return mapping

    def _check_shape(self) -> None:
        if len(self.columns) != len({name for _, name in self.columns}):
            file_columns = [name for _, name in self.columns]
            twice = next(n for n in file_columns if file_columns.count(n) > 1)
            raise MappingError(f"--columns: {', '.join(c for c, n in self.columns if n == twice)} are all mapped to "
                               f"{twice!r}: two columns cannot be one")
        if both := sorted(set(dict(self.columns)) & set(dict(self.constants))):
            raise MappingError(f"{both[0]!r} is both mapped to a column (--columns) and set to a constant (--set)")

    def __bool__(self) -> bool:
        return bool(self.columns or self.values or self.constants or self.names or self.where or self.seats or self.split
                    or self.nested)

    def with_split(self, column: str) -> Mapping:
        return replace(self, split=column)

    # What it is, for run.json, the manifest and an input's key.

    def record(self) -> dict[str, object]:
        """The mapping as run.json and the manifest keep it: only the parts given."""
        parts: dict[str, object] = {}
        if self.preset:
            parts["preset"] = self.preset
        if self.columns:
            parts["columns"] = ",".join(f"{c}={n}" for c, n in self.columns)
        if self.values:
            parts["values"] = [f"{c}:" + ",".join(f"{k}={v}" for k, v in pairs) for c, pairs in self.values]
        if self.constants:
            parts["set"] = ",".join(f"{c}={v}" for c, v in self.constants)
        if self.names:
            parts["names"] = self.names.text()
            parts["names_sha256"] = self.names.sha256
        if self.where:
            parts["where"] = [f"{c}={v}" for c, v in self.where]
        if self.seats:
            parts["seats"] = self.seats.text()
        if self.split:
            parts["by"] = self.split
        if self.nested:
            parts["nested"] = [f"{c}={'+'.join(f'{column}.{p}' for p in paths)}" for c, column, paths in self.nested]
        return parts

    @property
    def digest(self) -> str:
        """A hash of what the mapping does (the preset's name aside): part of an input's key."""
        record = {k: v for k, v in self.record().items() if k != "preset"}
        return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest() if record else ""

    # Checks before any work.

    def check(self, kind: LogKind) -> None:
        """Refuse (`MappingError`) what cannot apply to `kind`, whatever the file."""
        known = self.canonical_columns(kind)
        if self.preset_kind and self.preset_kind != kind.name:
            raise MappingError(f"preset {self.preset} reads {self.preset_kind}, not {kind.name} (--kind {self.preset_kind})")
        named = [c for c, _ in self.columns] + [c for c, _ in self.constants] + [c for c, _ in self.values]
        named += [c for c, _, _ in self.nested]
        if unknown := [c for c in dict.fromkeys(named) if not _known(c, known)]:
            raise MappingError(f"{', '.join(map(repr, unknown))}: not a column of {kind.name} (its columns: {', '.join(known)})")
        for column, pairs in list(self.values) + [(c, ((v, v),)) for c, v in self.constants]:
            labels = kind.codes.get(column)
            if labels and (wrong := [v for _, v in pairs if v.lower() not in labels]):
                raise MappingError(f"{column} value {wrong[0]!r} is not one {kind.name} knows (expected one of {', '.join(labels)})")
        if self.seats and kind.name != "games":
            raise MappingError(f"--seats melts a wide table into games, not into {kind.name}")
        if self.split and kind.category is None:
            raise MappingError(f"{kind.name} logs have no category column, so they cannot be split by {self.split!r}")

    @staticmethod
    def canonical_columns(kind: LogKind) -> list[str]:
        """The column names a mapping may produce for `kind`."""
        names = list(kind.schema.names) if kind.schema is not None else []
        if "features" in names:
            names = [n for n in names if n != "features"] + ["features_a.NAME", "features_b.NAME"]
        return names

    def file_columns(self) -> list[str]:
        """The file's columns the mapping names (before the seats are melted, then after)."""
        before = [c.removesuffix("!") for c, _ in self.where] + (self.seats.file_columns if self.seats else [])
        return before + ([self.split] if self.split else [])

    def check_file(self, raw: RawRecords, kind: LogKind, source: str) -> None:
        """Refuse (`MappingError`) what cannot apply to this file's first batch `raw`: a column it
        does not have (all of them named), a value no map covers."""
        present = set(raw.columns)
        made = ("player", self.seats.value) if self.seats else ()  # by the melt, not the file
        wanted = self.file_columns() + [n for _, n in self.columns if n not in made]
        if missing := [c for c in dict.fromkeys(wanted) if c not in present]:
            raise MappingError(f"{source}: no column {', '.join(map(repr, missing))} (the file has "
                               f"{', '.join(sorted(present))})")
        try:
            mapped = self.apply(raw, kind, source)
        except UnreadableFile as exc:
            raise MappingError(str(exc)) from None
        for column, pairs in self.values:
            if column not in mapped.frame.columns:
                continue
            marker = mapped.frame.get_column(INVALID + column) if INVALID + column in mapped.frame.columns else None
            if marker is not None and (bad := marker.drop_nulls()).len():
                raise MappingError(f"{source}: {column} holds {bad[0]}: --values {column} maps only {', '.join(k for k, _ in pairs)}")

    def check_files(self, files: list[Path], kind: LogKind) -> None:
        """`check_file` on the first `SAMPLE_ROWS` rows of each tabular file (the others, and
        files that cannot be read, are left to the ingest, which says why)."""
        from pipeline.logs.formats import batches

        if not self:
            return
        for path in files:
            if path.suffix.lower() not in TABULAR_SUFFIXES:
                continue
            try:
                first = next(batches(path), None)
            except UnreadableFile:
                continue
            if first is not None:
                self.check_file(RawRecords(first.frame.head(SAMPLE_ROWS)), kind, str(path))

    # Applying it to a batch.

    def apply(self, raw: RawRecords, kind: LogKind, source: str) -> RawRecords:
        """`raw` as `kind` reads it: filtered, melted, renamed, completed and mapped."""
        if not self or not raw.frame.width:
            return raw
        frame = raw.frame
        for condition, value in self.where:
            column, unequal = condition.removesuffix("!"), condition.endswith("!")  # COLUMN!=VALUE
            _require(frame, column, source, "--where")
            held = pl.col(column).cast(pl.String).str.strip_chars()
            frame = frame.filter(held.ne_missing(value) if unequal else held == value)
        raw = RawRecords(frame, raw.unparsable)
        if self.seats:
            raw = melt_seats(raw, self.seats, source)
        if present := [(c, column, paths) for c, column, paths in self.nested if column in raw.frame.columns]:
            raw = RawRecords(raw.frame.with_columns(json_sum(column, paths).alias(c) for c, column, paths in present),
                             raw.unparsable)
        renames = dict(self.columns)
        if self.split:
            _require(raw.frame, self.split, source, "--by")
            renames.setdefault(kind.category, self.split)
        raw = rename_columns(raw, renames, source)
        frame = raw.frame.with_columns(pl.lit(v).alias(c) for c, v in self.constants)
        if self.split and kind.unit_column and kind.unit_column in frame.columns:
            unit = kind.unit_column  # a unit is named within its split: the same task of two releases is two
            frame = frame.with_columns(pl.concat_str([pl.col(kind.category).cast(pl.String), pl.lit(SPLIT_SEPARATOR),
                                                      pl.col(unit).cast(pl.String)]).alias(unit))
        for column, pairs in self.values:
            if column in frame.columns:
                frame = map_values(frame, column, dict(pairs))
        if self.names:
            ids, names = self.names.lookup()
            for column in [c for c, d in kind.ids.items() if d == "agents" and c in frame.columns]:
                frame = name_ids(frame, column, ids, names, Path(self.names.path).name)
        return RawRecords(frame, raw.unparsable)


def _known(column: str, known: list[str]) -> bool:
    return column in known or any(k.endswith(".NAME") and column.startswith(k[:-4]) for k in known)


def _require(frame: pl.DataFrame, column: str, source: str, option: str) -> None:
    if column not in frame.columns:
        present = [c for c in frame.columns if not internal(c)]
        raise UnreadableFile(source, f"no column {column!r} for {option} (the file has {', '.join(present)})", line=1, field=column)


def _mark(frame: pl.DataFrame, column: str, problem: pl.Expr) -> pl.DataFrame:
    """`frame` with `problem` (null where fine) as the reason `column`'s value is unusable; the
    triage quarantines such a row when its kind reads the column."""
    marker = INVALID + column
    if marker in frame.columns:
        problem = pl.coalesce(pl.col(marker), problem)
    return frame.with_columns(problem.alias(marker))


def map_values(frame: pl.DataFrame, column: str, pairs: dict[str, str]) -> pl.DataFrame:
    """`column`'s values mapped by `pairs` (`*`: any other; `@model_a`: the value of column
    model_a on the row, as when a winner column holds the winner's name); a present value not
    covered is marked."""
    other = pairs.pop(ANY, None)
    same = {key[1:]: pairs.pop(key) for key in list(pairs) if key.startswith(SAME)}
    if missing := [c for c in same if c not in frame.columns]:
        raise MappingError(f"--values {column}: no column {missing[0]!r} to compare with ({SAME}{missing[0]})")
    value = pl.col(column).cast(pl.String).str.strip_chars()
    mapped = value.replace_strict(list(pairs), list(pairs.values()), default=pl.lit(other, pl.String), return_dtype=pl.String)
    for other_column, meant in same.items():
        mapped = pl.when(value == pl.col(other_column).cast(pl.String).str.strip_chars()).then(pl.lit(meant)).otherwise(mapped)
    frame = frame.with_columns(mapped.alias(column), value.alias("\x00before"))
    if other is not None:
        return frame.drop("\x00before")
    uncovered = pl.when(pl.col("\x00before").is_not_null() & (pl.col("\x00before") != "") & pl.col(column).is_null())
    frame = _mark(frame, column, uncovered.then(pl.format("a value with no mapping ({})", pl.col("\x00before"))))
    return frame.drop("\x00before")


def name_ids(frame: pl.DataFrame, column: str, ids: list[str], names: list[str], table: str) -> pl.DataFrame:
    """`column`'s ids replaced by their names in the lookup table; an id it lacks is marked."""
    value = pl.col(column).cast(pl.String).str.strip_chars().str.strip_suffix(".0")  # a Parquet float id, 201419.0
    named = value.replace_strict(ids, names, default=None, return_dtype=pl.String)
    frame = frame.with_columns(named.alias(column), value.alias("\x00before"))
    missing = pl.when(pl.col("\x00before").is_not_null() & pl.col(column).is_null())
    frame = _mark(frame, column, missing.then(pl.format("the id {}, which {} does not name", pl.col("\x00before"), pl.lit(table))))
    return frame.drop("\x00before")


def json_sum(column: str, paths: tuple[str, ...]) -> pl.Expr:
    """The sum of the numbers at `paths` (dotted keys) in `column`'s JSON objects, as text; null
    where none is there."""
    values = [pl.col(column).str.json_path_match("$" + "".join(f"['{key}']" for key in path.split("."))).cast(pl.Float64, strict=False)
              for path in paths]
    return pl.when(pl.any_horizontal(v.is_not_null() for v in values)).then(pl.sum_horizontal(values)).cast(pl.String)


def melt_seats(raw: RawRecords, seats: Seats, source: str) -> RawRecords:
    """A wide game table (one row per game, a column per seat) as one row per seat: `player`
    and `score` (or `place`); a seat whose cell is empty is not in the game."""
    frame = raw.frame
    if missing := [c for c in seats.file_columns if c not in frame.columns]:
        raise UnreadableFile(source, f"no seat column {', '.join(map(repr, missing))} (the file has "
                             f"{', '.join(c for c in frame.columns if not internal(c))})", line=1, field=missing[0])
    if taken := [c for c in ("player", seats.value) if c in frame.columns and c not in seats.file_columns]:
        raise UnreadableFile(source, f"--seats makes the columns player and {seats.value}, and the file has {taken[0]!r} too",
                             line=1, field=taken[0])
    keep = [c for c in frame.columns if c not in seats.file_columns and not c.startswith((NESTED, INVALID))]
    parts = []
    for player, cell in seats.seats:
        who = pl.lit(player) if cell is None else pl.col(player).cast(pl.String)
        what = pl.col(player if cell is None else cell).cast(pl.String)
        parts.append(frame.select(*keep, who.alias("player"), what.alias(seats.value), pl.lit(len(parts)).alias("\x00seat")))
    long = pl.concat(parts).filter(pl.col(seats.value).str.strip_chars().replace("", None).is_not_null()
                                   | pl.col("player").is_null())
    long = long.sort(LINE, "\x00seat").drop("\x00seat")
    return RawRecords(long, raw.unparsable)


def rename_columns(raw: RawRecords, columns: dict[str, str], source: str) -> RawRecords:
    """The file's columns renamed to canonical names as `columns` maps them (canonical -> file's
    name); a column of the file already bearing a mapped canonical name steps aside. Columns the
    file lacks are refused all at once."""
    if not columns or not raw.frame.width:
        return raw
    present = set(raw.columns)
    if missing := [f"{canonical}={name}" for canonical, name in columns.items() if name not in present]:
        raise UnreadableFile(source, f"no column named as mapped: {', '.join(missing)} (the file has {', '.join(sorted(present))})")
    lowered = {c.lower() for c in columns}
    aside = {c: f"{c} (unmapped)" for c in raw.columns if c.lower() in lowered and c not in columns.values()}
    renames = aside | {name: canonical for canonical, name in columns.items()}
    markers = {m: m[: -len(old)] + new for m in raw.frame.columns if internal(m)
               for old, new in renames.items() if m.endswith(":" + old)}
    return RawRecords(raw.frame.rename(renames | markers), raw.unparsable)
