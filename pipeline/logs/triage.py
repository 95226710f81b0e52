"""Row triage: vectorised checks that move bad rows to quarantine with file, line, field and reason.

A reader resolves the columns it reads (`Triage.column`: case-insensitive, a column named twice
refuses the file), builds derived columns (named with a leading `~` so they never clash with the
raw ones), runs `Triage.reject` with the checks for its kind (the first failing check names the
reason), and finishes with `Triage.result`, which enforces `rows_in = rows_accepted +
rows_quarantined`. Values the format readers marked unusable in a column the kind reads (a list
where a name is expected, bytes that are not text, a date beyond the year 9999) are quarantined
before any check of the kind.

Columns of labels and names, which hold few distinct values over many rows (models, winners,
judges, players, agents, tasks, categories; a game's id, shared by its rows), are derived with
`Triage.derive_labels`: each distinct raw value is cleaned once (as `text` cleans it) and rows
carry codes into the cleaned values, so that checks compare integers and `result` hands the column
on as a dictionary array, which the store encodes without hashing its names again. Checks over the
rows of a unit (a game's players agree on its time) run with `Triage.reject_units`, one grouping
by the unit's codes for all of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.logs.records import INVALID, LINE, NESTED, RawRecords, UnreadableFile, internal
from pipeline.weights import MAX_WEIGHT, quantize_expr

QUARANTINE_SCHEMA = pa.schema(
    [
        ("file", pa.string()),
        ("line", pa.int64()),
        ("field", pa.string()),
        ("reason", pa.string()),
        ("record", pa.string()),
    ]
)
UNPARSABLE_FIELD = "(record)"  # the field of a record that could not be parsed at all

_REASON = "~reason"
_FIELD = "~field"
# Timestamps: epoch seconds between the years 1 and 9999, or ISO-8601 text.
MIN_EPOCH, MAX_EPOCH = -62_135_596_800.0, 253_402_300_799.0
_TIME_FORMATS = ("%Y-%m-%dT%H:%M:%S%.f%#z", "%Y-%m-%d %H:%M:%S%.f%#z", "%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f",
                 "%Y-%m-%dT%H:%M%#z", "%Y-%m-%dT%H:%M", "%Y-%m-%d")
UTC_MICROS = pl.Datetime("us", "UTC")
MAX_SPLIT_VALUES = 1_000  # a column of more values is not taken for a split of a mixed file (`Triage.refuse_mixed`)


@dataclass(frozen=True)
class Check:
    """Rows where `bad` is true are quarantined, blaming `field` with `reason`."""

    field: str
    reason: str
    bad: pl.Expr


@dataclass(frozen=True)
class ReadResult:
    """One file (or one batch of a big one) read as one log kind: accepted rows in canonical
    columns, and the quarantine."""

    kind: str
    source: str
    table: pa.Table
    quarantined: pa.Table
    rows_in: int
    lines: np.ndarray | None = None  # the line of each accepted row
    keyed: bool = True  # whether the rows' ids identify them beyond the file (given by it, or of their content)

    def __post_init__(self) -> None:
        if self.lines is None:
            object.__setattr__(self, "lines", np.zeros(self.table.num_rows, np.int64))
        if self.rows_in != self.table.num_rows + self.quarantined.num_rows:
            raise AssertionError(
                f"{self.source}: row accounting broken: {self.rows_in} in, "
                f"{self.table.num_rows} accepted, {self.quarantined.num_rows} quarantined"
            )

    @property
    def rows_accepted(self) -> int:
        return self.table.num_rows

    def after(self, line: int) -> ReadResult:
        """The rows (accepted and quarantined) read from lines after `line`."""
        kept = np.flatnonzero(self.lines > line)
        quarantined = self.quarantined.filter(pc.greater(self.quarantined.column("line"), line))
        return ReadResult(self.kind, self.source, self.table.take(kept), quarantined, len(kept) + quarantined.num_rows,
                          self.lines[kept], self.keyed)

    @property
    def rows_quarantined(self) -> int:
        return self.quarantined.num_rows

    @classmethod
    def concat(cls, results: list[ReadResult], kind: str, source: str, schema: pa.Schema) -> ReadResult:
        if not results:
            return cls(kind, source, schema.empty_table(), empty_quarantine(), 0)
        return cls(kind, source, pa.concat_tables([r.table.cast(schema) for r in results]),  # (dictionaries decoded)
                   pa.concat_tables([r.quarantined for r in results]), sum(r.rows_in for r in results), np.concatenate([r.lines for r in results]), all(r.keyed for r in results))


def empty_quarantine() -> pa.Table:
    return QUARANTINE_SCHEMA.empty_table()


def quarantine_rows(source: str, lines: list[int], fields: list[str], reasons: list[str], records: list[str]) -> pa.Table:
    return pa.table({"file": [source] * len(lines), "line": lines, "field": fields, "reason": reasons, "record": records},
                    schema=QUARANTINE_SCHEMA)


def alias_key(name: str) -> str:
    """A column name as aliases match it: case-insensitive, without the `#2` of a repeated name."""
    base, sep, count = name.rpartition("#")
    return (base if sep and count.isdigit() else name).lower()


@dataclass
class Triage:
    source: str
    raw: RawRecords
    frame: pl.DataFrame = field(init=False)
    _raw_columns: list[str] = field(init=False)
    _rejected: list[pl.DataFrame] = field(init=False, default_factory=list)
    _markers: list[Check] = field(init=False, default_factory=list)
    _labels: dict[str, pa.Array] = field(init=False, default_factory=dict)  # derived column -> its dictionary
    _missing: list[tuple[str, ...]] = field(init=False, default_factory=list)  # required columns absent: their aliases
    _read: set[str] = field(init=False, default_factory=set)  # the raw columns the kind reads

    def __post_init__(self) -> None:
        self.frame = self.raw.frame
        self._raw_columns = [c for c in self.frame.columns if not internal(c)]
        if self.raw.unparsable:
            lines, reasons, texts = zip(*self.raw.unparsable)
            self._rejected.append(
                pl.DataFrame(
                    {"line": list(lines), "field": [UNPARSABLE_FIELD] * len(lines), "reason": list(reasons), "record": list(texts)},
                    schema={"line": pl.Int64, "field": pl.String, "reason": pl.String, "record": pl.String},
                )
            )

    def column(self, *aliases: str, required: bool = True, nested: bool = False) -> str | None:
        """The raw column named by the first alias present (case-insensitive). A file naming it
        twice (`model_a` and `Model_A`) is refused; a missing required column refuses a file that
        has rows (in a file without rows it reads as empty). Values marked unusable, or nested
        unless `nested`, quarantine their rows, blaming `aliases[0]`."""
        for alias in aliases:
            named = [c for c in self._raw_columns if alias_key(c) == alias.lower()]
            if len(named) > 1:
                raise UnreadableFile(self.source, f"columns {' and '.join(map(repr, named))} both name {alias!r}: rename or "
                                     "drop one", line=1, field=alias)
            if named:
                self._mark(named[0], aliases[0], nested)
                self._read.add(named[0])
                return named[0]
        if required and self.frame.height:  # refused once every column is asked for, naming them all
            self._missing.append(aliases)
        if required:  # no rows (or refused later): an empty column keeps the reader's expressions valid
            self.frame = self.frame.with_columns(pl.lit(None, pl.String).alias(aliases[0]))
            self._raw_columns.append(aliases[0])
            return aliases[0]
        return None

    def check_columns(self) -> None:
        """Refuse the file if required columns are missing, naming all of them (and what it has)."""
        if not self._missing:
            return
        named = ", ".join(repr(a[0]) + (f" (or {', '.join(map(repr, a[1:]))})" if len(a) > 1 else "") for a in self._missing)
        has = ", ".join(c for c in self._raw_columns if c not in {a[0] for a in self._missing})
        raise UnreadableFile(self.source, f"missing column{'s' * (len(self._missing) > 1)} {named}; the file has {has} "
                             f"(map them with --columns, e.g. --columns {self._missing[0][0]}=COLUMN)",
                             line=1, field=self._missing[0][0])

    def _mark(self, raw: str, name: str, nested: bool) -> None:
        if INVALID + raw in self.frame.columns:
            reason = pl.col(INVALID + raw)
            self._markers.append(Check(name, "", reason.is_not_null()))
            self.frame = self.frame.with_columns(pl.format("{} is {}", pl.lit(name), reason).alias(f"~invalid:{name}"))
        if not nested and NESTED + raw in self.frame.columns:
            self._markers.append(Check(name, f"{name} is a list or an object, not a single value", pl.col(NESTED + raw).fill_null(False)))

    def _reject_marked(self) -> None:
        self.check_columns()
        markers, self._markers = self._markers, []
        for check in markers:
            if check.reason:
                self.reject([check])
            else:
                self.reject_rows(check.bad, check.field, pl.col(f"~invalid:{check.field}"))

    def derive(self, **exprs: pl.Expr | pl.Series) -> None:
        self.check_columns()
        self.frame = self.frame.with_columns(**{f"~{k}": v for k, v in exprs.items()})

    def derive_timestamp(self, raw: str | None) -> list[Check]:
        """Derive `~timestamp` from the raw column `raw` (`timestamps`; all null without one) and return
        the checks that name why a present value did not become a timestamp (`timestamp_checks`)."""
        self.check_columns()
        if raw is None:
            self.derive(timestamp=pl.lit(None, UTC_MICROS))
            return []
        parsed, numeric = timestamps(self.frame, raw)
        self.derive(timestamp=parsed, **({} if numeric is None else {"timestamp:number": numeric}))
        return timestamp_checks(raw, "~timestamp", self.frame.schema[raw])

    def derive_labels(self, columns: Mapping[str, str | None], lowercase: bool = False) -> pa.Array:
        """Derive `~<name>` for each `name: raw column` (None: absent, all null) as the codes of
        `text(raw column)` (lower-cased if asked) in one dictionary shared by these columns, which
        is returned: equal codes are equal text, a null code is a null text. Each distinct raw
        value is cleaned once; `result` turns the codes back into a dictionary array."""
        self.check_columns()
        present = {name: distinct_values(self.frame.get_column(raw)) for name, raw in columns.items() if raw is not None}
        cleaned = [clean_text(encoded.dictionary, lowercase) for encoded in present.values()]
        shared = pc.dictionary_encode(pa.concat_arrays(cleaned) if cleaned else pa.array([], pa.string()))
        codes, start = {}, 0
        for name, encoded in present.items():
            remap = shared.indices.slice(start, len(encoded.dictionary))
            codes[f"~{name}"] = pl.from_arrow(pc.take(remap, encoded.indices).cast(pa.int32()))
            start += len(encoded.dictionary)
        codes |= {f"~{name}": pl.lit(None, pl.Int32) for name, raw in columns.items() if raw is None}
        self.frame = self.frame.with_columns(**codes)
        self._labels |= dict.fromkeys(codes, shared.dictionary)
        return shared.dictionary

    def reject(self, checks: list[Check]) -> None:
        self._reject_marked()
        if not checks or not self.frame.height:
            return
        if not self.frame.select(pl.any_horizontal([check.bad for check in checks]).fill_null(False).any()).item():
            return  # the common case: nothing to reject, and no copy of the frame
        reason = pl.when(checks[0].bad).then(pl.lit(checks[0].reason))
        blamed = pl.when(checks[0].bad).then(pl.lit(checks[0].field))
        for check in checks[1:]:
            reason = reason.when(check.bad).then(pl.lit(check.reason))
            blamed = blamed.when(check.bad).then(pl.lit(check.field))
        flagged = self.frame.with_columns(
            reason.otherwise(None).alias(_REASON), blamed.otherwise(None).alias(_FIELD)
        )
        bad = flagged.filter(pl.col(_REASON).is_not_null())
        if bad.height:
            self._rejected.append(self._describe(bad))
        self.frame = flagged.filter(pl.col(_REASON).is_null()).drop(_REASON, _FIELD)

    def reject_rows(self, bad: pl.Expr, field_name: str, reason: pl.Expr) -> None:
        """Like `reject`, for a reason that is computed per row (e.g. naming another line)."""
        self._reject_marked()
        if not self.frame.height or not self.frame.select(bad.fill_null(False).any()).item():
            return
        flagged = self.frame.with_columns(
            pl.when(bad).then(reason).otherwise(None).alias(_REASON), pl.lit(field_name).alias(_FIELD)
        )
        rejected = flagged.filter(pl.col(_REASON).is_not_null())
        if rejected.height:
            self._rejected.append(self._describe(rejected))
        self.frame = flagged.filter(pl.col(_REASON).is_null()).drop(_REASON, _FIELD)

    def reject_repeats(self, columns: list[str], field_name: str, reason: str) -> None:
        """Reject the rows whose `columns` repeat those of an earlier line, as `<reason> (first at
        line <n>)`. Rows whose values hash apart are distinct, so the exact check by group (costly
        for a column of a million distinct ids) runs only when two hashes are equal."""
        self._reject_marked()
        if not self.frame.height:
            return
        key = pl.col(columns[0]) if len(columns) == 1 else pl.struct(columns)
        if self.frame.select(key.hash().n_unique()).item() == self.frame.height:
            return
        first = pl.col(LINE).min().over(columns)
        self.reject_rows(pl.col(LINE) != first, field_name, pl.lit(f"{reason} (first at line ") + first.cast(pl.String) + pl.lit(")"))

    def refuse_mixed(self, columns: list[str], what: str) -> None:
        """Refuse the file if `columns` (derived) repeat across the values of a raw column the kind
        does not read, with few values (a release, an edition): such a file mixes several logs of
        one shape, which `--where` or `--by` take apart, and would otherwise lose its repeats to
        quarantine as duplicates."""
        self.check_columns()
        if self.frame.height < 2 or self.frame.select(pl.struct(columns).n_unique()).item() == self.frame.height:
            return
        bound = min(MAX_SPLIT_VALUES, self.frame.height // 2)
        for raw in (c for c in self._raw_columns if c not in self._read):
            values = self.frame.select(pl.col(raw).n_unique()).item()
            if 2 <= values <= bound and self.frame.select(pl.struct([*columns, raw]).n_unique()).item() == self.frame.height:
                example = self.frame.get_column(raw).drop_nulls()[0]
                raise UnreadableFile(self.source, f"rows repeat ({what}) across the {values} values of column {raw!r}: rate one "
                                     f"with --where {raw}={example}, or each with --by {raw}", line=1, field=raw)

    def reject_units(self, unit: str, checks: list[Check]) -> None:
        """Reject every row of each unit (the rows sharing a value of `unit`, e.g. a game) for which
        a check holds, the checks' `bad` being aggregations over a unit's rows (`pl.len() < 2`,
        `differs`). The units are grouped once, where a window (`over`) per check groups them again
        for each; the first check that holds names the reason, as in `reject`."""
        self._reject_marked()
        if not self.frame.height:
            return
        names = [f"~unit:{i}" for i in range(len(checks))]
        flagged = self.frame.group_by(unit).agg(*(check.bad.alias(name) for check, name in zip(checks, names)))
        flagged = flagged.filter(pl.any_horizontal(names).fill_null(False))
        if flagged.height:
            self.reject([Check(check.field, check.reason, pl.col(unit).is_in(flagged.filter(pl.col(name)).get_column(unit).implode()))
                         for check, name in zip(checks, names)])

    def _describe(self, bad: pl.DataFrame) -> pl.DataFrame:
        raw = [pl.col(c).cast(pl.String) for c in self._raw_columns]
        return bad.select(
            pl.col(LINE).alias("line"),
            pl.col(_FIELD).alias("field"),
            pl.col(_REASON).alias("reason"),
            pl.struct(raw).struct.json_encode().alias("record") if raw else pl.lit("{}").alias("record"),
        )

    def result(self, kind: str, canonical: dict[str, pl.Expr], schema: pa.Schema, keyed: bool = True) -> ReadResult:
        """Select the canonical columns of the accepted rows and assemble the quarantine; `keyed`:
        whether the file gave the rows' ids."""
        self._reject_marked()
        lines = self.frame.get_column(LINE).to_numpy()
        accepted = self.frame if bool(np.all(lines[1:] > lines[:-1])) else self.frame.sort(LINE)
        if accepted.height:
            table = accepted.select(**canonical).to_arrow()
            labels = {name: self._labels[expr.meta.output_name()] for name, expr in canonical.items()
                      if expr.meta.is_column() and expr.meta.output_name() in self._labels}
            for name, dictionary in labels.items():  # codes -> the dictionary array of their text
                text = pa.DictionaryArray.from_arrays(table.column(name).combine_chunks(), dictionary)
                table = table.set_column(table.schema.get_field_index(name), name, text)
            table = table.cast(pa.schema([pa.field(f.name, pa.dictionary(pa.int32(), f.type)) if f.name in labels else f
                                          for f in schema]))
        else:
            table = schema.empty_table()
        if self._rejected:
            rejected = pl.concat(self._rejected).sort("line")
            quarantined = rejected.with_columns(pl.lit(self.source).alias("file")).select(
                QUARANTINE_SCHEMA.names
            ).to_arrow().cast(QUARANTINE_SCHEMA)
        else:
            quarantined = empty_quarantine()
        return ReadResult(kind, self.source, table, quarantined, self.raw.rows_in, accepted.get_column(LINE).to_numpy(), keyed)


def text(name: str) -> pl.Expr:
    """A raw column as stripped text, empty strings as null."""
    return pl.col(name).cast(pl.String).str.strip_chars().replace("", None)  # strips once (a when/then strips twice)


def distinct_values(values: pl.Series) -> pa.DictionaryArray:
    """A raw column dictionary-encoded, as text (the way `text` casts it): a categorical (a
    Parquet reader's dictionary) as it is, any other column hashed row by row."""
    if values.dtype == pl.Categorical:
        return values.to_arrow()
    arrow = values.to_arrow() if values.dtype == pl.String else values.cast(pl.String).to_arrow()
    return pc.dictionary_encode(arrow.cast(pa.large_string()) if pa.types.is_string_view(arrow.type) else arrow)


def clean_text(values: pa.Array, lowercase: bool = False) -> pa.Array:
    """`text` of an array of distinct values (stripped, empty as null), lower-cased if asked."""
    cleaned = text("value").str.to_lowercase() if lowercase else text("value")
    return pl.DataFrame({"value": pl.from_arrow(values)}).select(cleaned).to_series().to_arrow().cast(pa.string())


def differs(name: str) -> pl.Expr:
    """An aggregation over a group's rows: whether they hold more than one value of `name` (a null
    counts as a value), as `n_unique() > 1` says, at the cost of a minimum and a maximum."""
    nulls = pl.col(name).null_count()
    return (pl.col(name).max() != pl.col(name).min()) | ((nulls > 0) & (nulls < pl.len()))


def number(name: str, dtype: pl.DataType) -> pl.Expr:
    """A raw column as Float64; unparsable text becomes null (compare with `text` to detect it)."""
    if dtype.is_numeric():
        return pl.col(name).cast(pl.Float64)
    if dtype == pl.Boolean:
        return pl.col(name).cast(pl.Float64)
    return text(name).cast(pl.Float64, strict=False)


def weight_value(name: str | None, dtype: pl.DataType | None) -> pl.Expr:
    """An optional weight column: absent column or empty value means weight 1."""
    if name is None:
        return pl.lit(1.0)
    return pl.when(text(name).is_null()).then(pl.lit(1.0)).otherwise(number(name, dtype))


def unparsable(name: str, parsed: str) -> pl.Expr:
    """True where the raw value is present but did not parse."""
    return text(name).is_not_null() & pl.col(parsed).is_null()


def _epoch(seconds: pl.Series) -> pl.Series:
    """Epoch seconds as UTC timestamps; not finite or outside the years 1-9999: null."""
    inside = seconds.is_finite() & (seconds >= MIN_EPOCH) & (seconds <= MAX_EPOCH)
    micros = (seconds * 1_000_000).round().cast(pl.Int64, strict=False)
    return pl.select(pl.when(inside).then(micros).otherwise(None).cast(UTC_MICROS)).to_series()


def _compact_dates(values: pl.Series) -> tuple[pl.Series, pl.Series]:
    """Where text `values` are eight digits (a compact ISO date, YYYYMMDD), and those dates (null
    where the digits are no date)."""
    compact = values.str.contains(r"^[0-9]{8}$").fill_null(False)
    dates = values.str.to_datetime("%Y%m%d", time_unit="us", time_zone="UTC", strict=False).cast(UTC_MICROS)
    return compact, dates


def timestamps(frame: pl.DataFrame, name: str) -> tuple[pl.Series, pl.Series | None]:
    """A raw column as UTC microsecond timestamps: typed dates and timestamps as they are (the
    Parquet reader made them UTC and marked those out of range), numbers as epoch seconds, text as
    epoch seconds or ISO-8601 (the formats of a column may vary row by row). Null where a value
    does not parse or is out of range (`timestamp_checks` says which). Eight digits, as text or
    an integer, are a compact ISO date (`20240101`), never epoch seconds (which would put them in
    1970-1973). For a text column, also whether each value reads as a number (null where there is
    no text), so that the checks name the reason without stripping the text again."""
    column = frame.get_column(name)
    if column.dtype.is_temporal():
        return column.cast(UTC_MICROS) if column.dtype == UTC_MICROS else column.dt.replace_time_zone("UTC").cast(UTC_MICROS), None
    if column.dtype.is_integer():
        compact, dates = _compact_dates(column.cast(pl.String))
        return pl.select(pl.when(compact).then(dates).otherwise(_epoch(column.cast(pl.Float64)))).to_series(), None
    if column.dtype.is_numeric():
        return _epoch(column.cast(pl.Float64)), None
    raw = frame.select(text(name)).to_series()
    compact, dates = _compact_dates(raw)
    seconds = pl.select(pl.when(~compact).then(raw.cast(pl.Float64, strict=False))).to_series()
    numeric = pl.select(pl.when(raw.is_not_null()).then(seconds.is_not_null())).to_series()
    result = pl.select(pl.when(compact).then(dates).otherwise(_epoch(seconds))).to_series()
    rest = raw.is_not_null() & seconds.is_null() & ~compact
    if not rest.any():
        return result, numeric
    try:  # polars infers the format of the first value that parses and applies it to all
        parsed = raw.str.to_datetime(time_unit="us", time_zone="UTC", strict=False).cast(UTC_MICROS)
        result = pl.select(pl.when(rest).then(parsed).otherwise(result)).to_series()
    except pl.exceptions.PolarsError:
        pass
    for time_format in _TIME_FORMATS:
        missing = rest & result.is_null()
        if not missing.any():
            break
        parsed = raw.filter(missing).str.to_datetime(time_format, time_unit="us", time_zone="UTC", strict=False)
        result = result.scatter(missing.arg_true(), parsed.cast(UTC_MICROS))
    return result, numeric


def timestamp_checks(raw_name: str, parsed: str, dtype: pl.DataType) -> list[Check]:
    """The reasons a present timestamp (raw column of type `dtype`) did not become one: a number out
    of range, or not a date. A typed column is checked as it is, never formatted as text; a text
    column by the flags `Triage.derive_timestamp` derived beside `parsed` (`<parsed>:number`)."""
    if dtype.is_temporal():  # the format reader already marked values beyond the year 9999
        return [Check("timestamp", "timestamp outside the years 1 to 9999",
                      pl.col(raw_name).is_not_null() & pl.col(parsed).is_null())]
    out_of_range = Check("timestamp", "timestamp is not a finite number of seconds within the years 1 to 9999",
                         pl.col(raw_name).is_not_null() & pl.col(parsed).is_null())
    if dtype.is_numeric():
        return [out_of_range]
    number = pl.col(f"{parsed}:number")
    missing = number.is_not_null() & pl.col(parsed).is_null()
    return [Check(out_of_range.field, out_of_range.reason, missing & number),
            Check("timestamp", "unparsable timestamp", missing)]


def weight_checks(parsed: str, raw_name: str | None, what: str = "weight") -> list[Check]:
    col = pl.col(parsed)
    checks = [Check(what, f"{what} is not finite", col.is_not_null() & ~col.is_finite()),
              Check(what, f"{what} is negative", col < 0),
              Check(what, f"{what} is below 2^-24, the grid of exact sums, where it would count as 0", (col > 0) & (quantize_expr(col) == 0)),
              Check(what, f"{what} is above {MAX_WEIGHT:,.0f} (2^38), the largest weight summed exactly", col > MAX_WEIGHT)]
    if raw_name is not None:
        checks.insert(0, Check(what, f"{what} is not a number", unparsable(raw_name, parsed)))
    return checks
