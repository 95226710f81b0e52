"""Tables as the report shows them: cells with display text and a sort key, numbers rounded for reading.

Leaderboard columns are found generically, so columns methods add later appear without a change
here: any `<x>_low` / `<x>_high` pair becomes one interval column (`ci` is the score interval,
`rank` the rank interval), `rank_ci` is the rank upper bound of [Arena], and every other column a
method fills is shown under its own name. A leaderboard stays narrow enough to be read whole on a
laptop (1366 px): a family of more than `FAMILY_COLUMNS` columns (`c[<task>]`, one per task) and
the method's columns beyond `OWN_COLUMNS` go to a long table under it, a row per agent and column.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import polars as pl

from pipeline.report.diagnostics import number

TABLE_ROWS = 100  # rows of a leaderboard shown; the rest are in ratings.parquet
DASH = "\u2013"
INTERVAL_TITLES = {"ci": ("95% interval", "95% confidence interval of the score"),
                   "rank": ("rank interval", "95% interval of the rank")}
NAMED = {
    "rank_ci": ("rank (UB)", "1 + the number of agents whose whole interval lies above this one's: the best rank it can claim [Arena]"),
    "tier": ("tier", "agents whose rank intervals overlap the tier's leader share its tier"),
    "win_share": ("win share", "how often the agent wins or lands in the winning set over bootstrap rounds"),
    "records": ("records", "battles, games, tasks, ballots or reviews the agent appears in"),
}
HIDDEN = {"method", "agent", "rank", "score", "category", "agent_id", "provisional"}  # provisional agents are shown apart
OWN_COLUMNS = 6     # a method's own columns a leaderboard shows at most
FAMILY_COLUMNS = 3  # columns `name[...]` of one name shown in the leaderboard at most; more are a long table


@dataclass(frozen=True)
class Cell:
    text: str
    sort: str | float | None = None  # None sorts last; numbers sort as numbers
    css: str = ""
    title: str = ""


@dataclass(frozen=True)
class Column:
    name: str
    title: str = ""
    numeric: bool = False


@dataclass
class Table:
    columns: list[Column]
    rows: list[list[Cell]]
    css: str = ""
    caption: str = ""
    note: str = ""
    attrs: dict[str, str] = field(default_factory=dict)


def decimals(values: list) -> int:
    """Digits after the point that show differences in a column: about three significant digits of its spread."""
    finite = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    if not finite or all(v == int(v) for v in finite):
        return 0
    spread = max(finite) - min(finite) or max(abs(v) for v in finite)
    return 0 if spread == 0 else min(6, max(0, 2 - math.floor(math.log10(spread))))


def number_cell(value: object, digits: int) -> Cell:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return Cell("", None)
    if isinstance(value, bool):
        return Cell("yes" if value else "no", float(value))
    text = f"{value:.{digits}f}"
    if text.lstrip("-").strip("0.") == "":
        text = text.lstrip("-")  # -0.00 is 0.00
    return Cell(text, float(value))


def value_cell(value: object, digits: int) -> Cell:
    if isinstance(value, (int, float)) or value is None:
        return number_cell(value, digits)
    if isinstance(value, (list, dict)):
        return Cell(str(value), str(value))
    return Cell(str(value), str(value))


def interval_columns(columns: list[str]) -> list[tuple[str, str, str]]:
    """(name, low column, high column) for every `<x>_low` with a matching `<x>_high`, in column order."""
    present = set(columns)
    return [(c.removesuffix("_low"), c, c.removesuffix("_low") + "_high") for c in columns
            if c.endswith("_low") and c.removesuffix("_low") + "_high" in present]


def filled(rows: pl.DataFrame) -> list[str]:
    """Columns with at least one value in these rows."""
    return [c for c in rows.columns if rows.get_column(c).null_count() < rows.height]


def own_columns(rows: pl.DataFrame) -> tuple[list[str], list[str]]:
    """A method's own columns in its filled `rows` (not rank, score or an interval): those its
    leaderboard shows, and those it leaves to `long_table` (large families first, then the last)."""
    columns = filled(rows)
    used = HIDDEN | {c for _, low, high in interval_columns(columns) for c in (low, high)}
    own = [c for c in columns if c not in used]
    family = lambda c: c.partition("[")[0] if c.endswith("]") else None  # noqa: E731
    sizes = {name: sum(family(c) == name for c in own) for name in {family(c) for c in own} - {None}}
    shown = [c for c in own if sizes.get(family(c), 0) <= FAMILY_COLUMNS][:OWN_COLUMNS]
    return shown, [c for c in own if c not in shown]


def long_table(rows: pl.DataFrame, columns: list[str], limit: int = TABLE_ROWS) -> Table:
    """`columns` of a leaderboard's `rows` as one row per agent and column (as narrow as any table,
    however many columns a method fills), agents in rank order, numbers rounded per column."""
    digits = {c: decimals(rows.get_column(c).to_list()) for c in columns}
    body = [[Cell(str(row["agent"]), str(row["agent"]), "agent"), Cell(c, c), value_cell(row[c], digits[c])]
            for row in rows.head(limit).iter_rows(named=True) for c in columns]
    note = f"Top {limit} of {rows.height} agents; all are in ratings.parquet." if rows.height > limit else ""
    return Table([Column("agent"), Column("column"), Column("value", "", True)], body, "sortable long",
                 f"further columns, a row per agent and column ({len(columns)}: {', '.join(columns[:3])}{', ...' if len(columns) > 3 else ''})",
                 note)


def leaderboard_table(rows: pl.DataFrame, *, changes: dict[str, int] | None = None, previous: str | None = None,
                      records: dict[str, int] | None = None, limit: int = TABLE_ROWS) -> Table:
    """One method's leaderboard: rank, change, agent, score, intervals, records and the method's own
    columns (`own_columns`: those it shows; `long_table` gives the others)."""
    rows = rows.select(filled(rows))
    columns = rows.columns
    pairs = interval_columns(columns)
    score_digits = decimals(rows.get_column("score").to_list()) if "score" in columns else 0
    extra, _ = own_columns(rows)
    digits = {c: decimals(rows.get_column(c).to_list()) for c in extra}
    head = [Column("rank", "1 is best; equal scores share a rank", True)]
    if changes is not None:
        head.append(Column("change", f"places gained since run {previous}" if previous else "no earlier run", True))
    head += [Column("agent"), Column("score", "", True)]
    head += [Column(*INTERVAL_TITLES.get(name, (f"{name} interval", "")), True) for name, _, _ in pairs]
    head += [Column(*NAMED.get(c, (c, "")), True) for c in extra]
    if records is not None:
        head.append(Column(*NAMED["records"], True))
    body = []
    for row in rows.head(limit).iter_rows(named=True):
        cells = [Cell(str(row["rank"]), float(row["rank"]))]
        if changes is not None:
            cells.append(change_cell(changes.get(row["agent"]), row["rank"], previous))
        cells += [Cell(str(row["agent"]), str(row["agent"]), "agent"), number_cell(row.get("score"), score_digits)]
        for name, low, high in pairs:
            cells.append(interval_cell(row[low], row[high], 0 if name == "rank" else score_digits))
        cells += [value_cell(row[c], digits[c]) for c in extra]
        if records is not None:
            count = records.get(row["agent"])
            cells.append(Cell(number(count) if count is not None else "", count))
        body.append(cells)
    note = f"Top {limit} of {rows.height} agents; all are in ratings.parquet." if rows.height > limit else ""
    return Table(head, body, "sortable leaderboard", note=note)


def interval_cell(low: object, high: object, digits: int) -> Cell:
    if low is None or high is None:
        return Cell("", None)
    a, b = number_cell(low, digits), number_cell(high, digits)
    return Cell(f"{a.text} {DASH} {b.text}", float(low), title=f"width {number(float(high) - float(low))}")


def change_cell(before: int | None, now: int, previous: str | None) -> Cell:
    """Places gained since the previous run: an arrow and a number, `new` for an agent not ranked then."""
    if previous is None:
        return Cell("", None)
    if before is None:
        return Cell("new", None, "new", f"not ranked in run {previous}")
    gained = before - now
    if gained > 0:
        return Cell(f"\u25b2 {gained}", float(gained), "up", f"rank {before} in run {previous}")
    if gained < 0:
        return Cell(f"\u25bc {-gained}", float(gained), "down", f"rank {before} in run {previous}")
    return Cell("=", 0.0, "same", f"rank {before} in run {previous}")


def frame_table(frame: pl.DataFrame, *, limit: int = TABLE_ROWS, caption: str = "", css: str = "sortable") -> Table:
    """Any table (a method's further tables, a backtest summary) with numbers rounded per column."""
    digits = {c: decimals(frame.get_column(c).to_list()) for c in frame.columns}
    numeric = {c: frame.schema[c].is_numeric() for c in frame.columns}
    head = [Column(c, "", numeric[c]) for c in frame.columns]
    body = [[value_cell(row[c], digits[c]) for c in frame.columns] for row in frame.head(limit).iter_rows(named=True)]
    note = f"First {limit} of {frame.height} rows." if frame.height > limit else ""
    return Table(head, body, css, caption, note)


def pairs_table(pairs: list[tuple[str, object]]) -> Table:
    """Key and value rows (parameters, timings, other run metadata)."""
    return Table([Column("name"), Column("value")],
                 [[Cell(str(k)), Cell(number(v) if isinstance(v, (int, float)) else str(v))] for k, v in pairs], "keyvalue")
