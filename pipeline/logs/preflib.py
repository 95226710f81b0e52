"""PrefLib order files (.soc, .soi, .toc, .toi) as raw ballot records [PrefLib].

The PrefLib 2022 text format: `# KEY: value` header lines, among them `# ALTERNATIVE NAME i: name`,
then one line per distinct order, `count: 1,2,{3,4},5`, where braces hold ties. A line that breaks
the file's declared type (a tie in a strict `.so?` file, a missing alternative in a complete
`.?oc` file) or names an unknown alternative is quarantined; the counts become ballot weights.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa

from pipeline.logs.encoding import bom_length, decode
from pipeline.logs.records import RawRecords, UnreadableFile, frame_of_text

PREFLIB_SUFFIXES = (".soc", ".soi", ".toc", ".toi")

_NAME = re.compile(r"#\s*ALTERNATIVE NAME\s+(\d+)\s*:\s*(.*)$")
_GROUP = re.compile(r"\{([^{}]*)\}|([^,{}]+)")


def _groups(order: str) -> list[list[str]]:
    groups = []
    for tied, single in _GROUP.findall(order):
        members = [m.strip() for m in (tied.split(",") if tied else [single]) if m.strip()]
        if members:  # the text between two groups (spaces) matches as an empty single
            groups.append(members)
    return groups


def read_preflib(path: str | Path) -> RawRecords:
    path = Path(path)
    kind = path.suffix.lower()
    if kind not in PREFLIB_SUFFIXES:
        raise UnreadableFile(path, f"not a PrefLib order file (expected {', '.join(PREFLIB_SUFFIXES)})")
    strict, complete = kind[1] == "s", kind[3] == "c"
    names: dict[str, str] = {}
    rows: list[tuple[int, str, str]] = []
    bad: list[tuple[int, str, str]] = []
    data = path.read_bytes()
    skip = bom_length(data[:4], path)
    text = decode(data[skip:], path, 1, skip)
    for line_no, line in enumerate(text.split("\n"), start=1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            if match := _NAME.match(line):
                name = match.group(2).strip()
                if re.search(r"[>=]", name):
                    raise UnreadableFile(path, f"alternative name {name!r} contains '>' or '='", line=line_no)
                names[match.group(1)] = name
            continue
        count, sep, order = line.partition(":")
        if not sep:
            bad.append((line_no, "expected 'count: order'", line))
            continue
        groups = _groups(order)
        ids = [i for g in groups for i in g]
        unknown = [i for i in ids if i not in names]
        if unknown:
            bad.append((line_no, f"unknown alternative {unknown[0]}", line))
        elif strict and any(len(g) > 1 for g in groups):
            bad.append((line_no, f"a tie in a strict {kind} file", line))
        elif complete and len(set(ids)) != len(names):
            bad.append((line_no, f"an incomplete order in a complete {kind} file", line))
        else:
            ranking = ">".join("=".join(names[i] for i in g) for g in groups)
            rows.append((line_no, ranking, count.strip()))
    if not names:
        raise UnreadableFile(path, "no '# ALTERNATIVE NAME' header lines: not a PrefLib 2022 file")
    columns = {"ranking": pa.array([r[1] for r in rows], pa.string()), "weight": pa.array([r[2] for r in rows], pa.string())}
    return RawRecords(frame_of_text(columns, np.array([r[0] for r in rows], np.int64)), bad)
