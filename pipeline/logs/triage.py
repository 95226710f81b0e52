"""Row triage: vectorised checks that move bad rows to quarantine with file, line, field and reason.

A reader builds derived columns (named with a leading `~` so they never clash with the raw ones),
runs `Triage.reject` with the checks for its kind (the first failing check names the reason), and
finishes with `Triage.result`, which enforces `rows_in = rows_accepted + rows_quarantined`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl
import pyarrow as pa

from pipeline.logs.records import LINE, RawRecords, UnreadableFile

QUARANTINE_SCHEMA = pa.schema(
    [
        ("file", pa.string()),
        ("line", pa.int64()),
        ("field", pa.string()),
        ("reason", pa.string()),
        ("record", pa.string()),
    ]
)

_REASON = "~reason"
_FIELD = "~field"


@dataclass(frozen=True)
class Check:
    """Rows where `bad` is true are quarantined, blaming `field` with `reason`."""

    field: str
    reason: str
    bad: pl.Expr


@dataclass(frozen=True)
class ReadResult:
    """One file read as one log kind: accepted rows in canonical columns, and the quarantine."""

    kind: str
    source: str
    table: pa.Table
    quarantined: pa.Table
    rows_in: int

    def __post_init__(self) -> None:
        if self.rows_in != self.table.num_rows + self.quarantined.num_rows:
            raise AssertionError(
                f"{self.source}: row accounting broken: {self.rows_in} in, "
                f"{self.table.num_rows} accepted, {self.quarantined.num_rows} quarantined"
            )

    @property
    def rows_accepted(self) -> int:
        return self.table.num_rows

    @property
    def rows_quarantined(self) -> int:
        return self.quarantined.num_rows


def empty_quarantine() -> pa.Table:
    return QUARANTINE_SCHEMA.empty_table()


@dataclass
class Triage:
    source: str
    raw: RawRecords
    frame: pl.DataFrame = field(init=False)
    _raw_columns: list[str] = field(init=False)
    _rejected: list[pl.DataFrame] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self.frame = self.raw.frame
        self._raw_columns = [c for c in self.frame.columns if c != LINE]
        if self.raw.unparsable:
            lines, reasons, texts = zip(*self.raw.unparsable)
            self._rejected.append(
                pl.DataFrame(
                    {"line": list(lines), "field": [""] * len(lines), "reason": list(reasons), "record": list(texts)},
                    schema={"line": pl.Int64, "field": pl.String, "reason": pl.String, "record": pl.String},
                )
            )

    def column(self, *aliases: str, required: bool = True) -> str | None:
        """The first raw column present among `aliases` (case-insensitive)."""
        lowered = {c.lower(): c for c in self._raw_columns}
        for alias in aliases:
            if alias.lower() in lowered:
                return lowered[alias.lower()]
        if required and self.frame.height:
            raise UnreadableFile(self.source, f"missing column {aliases[0]!r} (accepted names: {', '.join(aliases)})")
        return None

    def derive(self, **exprs: pl.Expr) -> None:
        self.frame = self.frame.with_columns(**{f"~{k}": v for k, v in exprs.items()})

    def reject(self, checks: list[Check]) -> None:
        if not checks or not self.frame.height:
            return
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
        if not self.frame.height:
            return
        flagged = self.frame.with_columns(
            pl.when(bad).then(reason).otherwise(None).alias(_REASON), pl.lit(field_name).alias(_FIELD)
        )
        rejected = flagged.filter(pl.col(_REASON).is_not_null())
        if rejected.height:
            self._rejected.append(self._describe(rejected))
        self.frame = flagged.filter(pl.col(_REASON).is_null()).drop(_REASON, _FIELD)

    def _describe(self, bad: pl.DataFrame) -> pl.DataFrame:
        raw = [pl.col(c).cast(pl.String) for c in self._raw_columns]
        return bad.select(
            pl.col(LINE).alias("line"),
            pl.col(_FIELD).alias("field"),
            pl.col(_REASON).alias("reason"),
            pl.struct(raw).struct.json_encode().alias("record") if raw else pl.lit("{}").alias("record"),
        )

    def result(self, kind: str, canonical: dict[str, pl.Expr], schema: pa.Schema) -> ReadResult:
        """Select the canonical columns of the accepted rows and assemble the quarantine."""
        table = self.frame.sort(LINE).select(**canonical).to_arrow().cast(schema) if self.frame.height else schema.empty_table()
        if self._rejected:
            rejected = pl.concat(self._rejected).sort("line")
            quarantined = rejected.with_columns(pl.lit(self.source).alias("file")).select(
                QUARANTINE_SCHEMA.names
            ).to_arrow().cast(QUARANTINE_SCHEMA)
        else:
            quarantined = empty_quarantine()
        return ReadResult(kind, self.source, table, quarantined, self.raw.rows_in)


def text(name: str) -> pl.Expr:
    """A raw column as stripped text, empty strings as null."""
    col = pl.col(name).cast(pl.String).str.strip_chars()
    return pl.when(col == "").then(None).otherwise(col)


def number(name: str, dtype: pl.DataType) -> pl.Expr:
    """A raw column as Float64; unparsable text becomes null (compare with `text` to detect it)."""
    if dtype.is_numeric():
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


def timestamp(name: str, dtype: pl.DataType) -> pl.Expr:
    """Epoch seconds (numbers) or ISO-8601 text, as a UTC microsecond timestamp."""
    if dtype.is_temporal():
        col = pl.col(name).cast(pl.Datetime("us"))
        return col.dt.replace_time_zone("UTC") if getattr(dtype, "time_zone", None) is None else col.dt.convert_time_zone("UTC")
    raw = text(name)
    epoch = raw.cast(pl.Float64, strict=False)
    from_epoch = (epoch * 1_000_000).round().cast(pl.Int64).cast(pl.Datetime("us", "UTC"))
    iso = raw.str.to_datetime(time_unit="us", time_zone="UTC", strict=False)
    date_only = raw.str.to_date(strict=False).cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
    return pl.when(epoch.is_not_null()).then(from_epoch).otherwise(pl.coalesce(iso, date_only))


def weight_checks(parsed: str, raw_name: str | None, what: str = "weight") -> list[Check]:
    col = pl.col(parsed)
    checks = [Check(what, f"{what} is not finite", col.is_not_null() & ~col.is_finite()),
              Check(what, f"{what} is negative", col < 0)]
    if raw_name is not None:
        checks.insert(0, Check(what, f"{what} is not a number", unparsable(raw_name, parsed)))
    return checks
