"""Numeric features of the two sides of a battle, for style control [ArenaStyle].

A battles file may carry, for any feature `<name>`, the columns `features_a.<name>` (the value
for model_a's answer) and `features_b.<name>` (for model_b's), e.g. `features_a.len` and
`features_b.len` for the answers' lengths in tokens, `features_a.md` and `features_b.md` for
their counts of markdown elements. Column names match case-insensitively; a feature name is
lower-case letters, digits and `_`, starting with a letter, so that a method spec can list it
(`m-elo:covariates=len,md`).

Values are lengths or counts: finite and non-negative (the style-control normalisation divides a
difference by the sum of the two sides). A row whose value is not a number, not finite, or
negative, or that gives a feature for one side only, is quarantined naming the column; a row
with both sides empty simply has no value for that feature. A file naming a feature for one
side only is refused (a header problem, not a row problem).

Stored as one column `features`: per battle, the list of (name, a, b) of the features it gives,
sorted by name (null in files without features, and absent in stores written before features
existed: readers treat both as "no features").
"""

from __future__ import annotations

import re

import polars as pl
import pyarrow as pa

from pipeline.logs.records import UnreadableFile
from pipeline.logs.triage import Check, Triage, alias_key, number, unparsable

SIDES = ("features_a.", "features_b.")
FEATURE_NAME = re.compile(r"[a-z][a-z0-9_]*")
FEATURE = pa.struct([("name", pa.string()), ("a", pa.float64()), ("b", pa.float64())])
FEATURES_TYPE = pa.list_(FEATURE)
_POLARS_TYPE = pl.List(pl.Struct({"name": pl.String, "a": pl.Float64, "b": pl.Float64}))


def feature_columns(t: Triage) -> dict[str, tuple[str, str]]:
    """The features a file gives, by name: (raw column of side a, raw column of side b), sorted by name."""
    found: dict[str, list[str | None]] = {}
    for raw in t.raw.columns:
        key = alias_key(raw)
        for side, prefix in enumerate(SIDES):
            if key.startswith(prefix):
                name = key[len(prefix):]
                if not FEATURE_NAME.fullmatch(name):
                    raise UnreadableFile(t.source, f"feature name {name!r} in column {raw!r}: use lower-case letters, digits "
                                         "and _, starting with a letter", line=1, field=raw)
                found.setdefault(name, [None, None])[side] = raw
    columns = {}
    for name, sides in sorted(found.items()):
        if None in sides:
            given, missing = (SIDES[0], SIDES[1]) if sides[0] else (SIDES[1], SIDES[0])
            raise UnreadableFile(t.source, f"column {given}{name} has no {missing}{name}: a feature needs both sides",
                                 line=1, field=given + name)
        columns[name] = tuple(t.column(prefix + name) for prefix in SIDES)
    return columns


def read_features(t: Triage) -> tuple[pl.Expr, list[Check]]:
    """Derive the parsed feature values of a battles file; the stored `features` expression and the checks
    that quarantine bad values (to run with the reader's other checks)."""
    columns = feature_columns(t)
    if not columns:
        return pl.lit(None, _POLARS_TYPE), []
    schema = t.frame.schema
    t.derive(**{f"{prefix}{name}": number(raw, schema[raw])
                for name, pair in columns.items() for prefix, raw in zip(SIDES, pair)})
    checks, entries = [], []
    for name, pair in columns.items():
        values = [pl.col(f"~{prefix}{name}") for prefix in SIDES]
        for prefix, raw, value in zip(SIDES, pair, values):
            field = prefix + name
            checks += [Check(field, f"{field} is not a number", unparsable(raw, f"~{field}")),
                       Check(field, f"{field} is not finite", value.is_not_null() & ~value.is_finite()),
                       Check(field, f"{field} is negative (features are lengths or counts)", value < 0)]
        checks += [Check(f"{SIDES[1]}{name}", f"{SIDES[1]}{name} is missing while {SIDES[0]}{name} is given",
                         values[0].is_not_null() & values[1].is_null()),
                   Check(f"{SIDES[0]}{name}", f"{SIDES[0]}{name} is missing while {SIDES[1]}{name} is given",
                         values[0].is_null() & values[1].is_not_null())]
        entries.append(pl.when(values[0].is_not_null() & values[1].is_not_null())
                       .then(pl.struct(name=pl.lit(name), a=values[0], b=values[1])))
    return pl.concat_list(entries).list.drop_nulls(), checks
