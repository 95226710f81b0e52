"""Publishing: ratings.parquet, ratings.json, leaderboard.md and run.json.

Names come back here, from the store's dictionaries (agents, and judges for method tables):
statistics and ratings carry ids only. Every
file is written atomically. Store ids are never published: they depend on the order in which files
were ingested, and the same battles must give the same bytes under any numbering. Rows are ordered
by method (in the order given), then rank, then agent name. A method's further tables
(`Ratings.tables`) are written beside them as `<method>.<table>.parquet` and `.md`; with the
board's statistics, `agents.parquet` (records per agent) and `pairwise.parquet` (head-to-head
counts and win rates) too. All are listed in run.json's outputs.
"""

from __future__ import annotations

import json
import math
import platform
import re
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import scipy.sparse as sp

import pipeline
from pipeline.methods.ratings import AGENT_COLUMN, Ratings
from pipeline.methods.standing import PROVISIONAL
from pipeline.stats import PairwiseCounts, Statistics
from pipeline.stats.annotators import NO_JUDGE
from pipeline.store import IngestReport
from pipeline.store.files import write_json, write_parquet, write_text


def _plain(value: object) -> object:
    """JSON-safe scalars: numpy types to Python, non-finite floats to None."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def judge_name(judge: int, names: list[str] | tuple[str, ...] | None) -> str:
    """The name of a judge store id: "(none)" for battles without one, the id as text without a dictionary."""
    if judge == NO_JUDGE:
        return "(none)"
    return names[judge] if names is not None else str(judge)


def ratings_records(ratings: list[Ratings], names: list[str]) -> list[dict[str, object]]:
    records = []
    for r in ratings:
        extras = published_extras(r.extras, names)
        order = sorted(range(len(r.agents)), key=lambda i: (r.rank[i], names[r.agents[i]]))
        for i in order:
            record = {"method": r.spec, "agent": names[r.agents[i]], "rank": int(r.rank[i]), "score": _plain(r.score[i])}
            record.update({k: _plain(v[i]) for k, v in extras})
            records.append(record)
    return records


def published_extras(extras: dict[str, np.ndarray], names: list[str]) -> list[tuple[str, np.ndarray]]:
    """The extras columns as published: those about an agent (`ratings.agent_column`) named by the
    agent and placed last in the order of the names, not of the store ids."""
    about = {key: AGENT_COLUMN.match(key) for key in extras}
    named = sorted((m["prefix"], names[int(m["agent"])], key) for key, m in about.items() if m)
    return [(key, column) for key, column in extras.items() if not about[key]] + [(f"{prefix}[{name}]", extras[key])
                                                                                  for prefix, name, key in named]


def ratings_table(records: list[dict[str, object]]) -> pa.Table:
    columns = list(dict.fromkeys(k for rec in records for k in rec))
    return pa.Table.from_pylist([{c: rec.get(c) for c in columns} for rec in records])


# What a Markdown renderer would read as markup; `_` only at a word's edge (`tie_credit` is plain text).
MARKDOWN_ACTIVE = re.compile(r"[\\`*\[\]<>|&~]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def markdown_text(text: str) -> str:
    """User text (a name, a title) as Markdown that shows it as it is: every character a renderer
    would read as markup backslash-escaped, so a name is never an HTML tag, a link, emphasis or a
    table's column break, and lines joined."""
    return MARKDOWN_ACTIVE.sub(lambda m: "\\" + m.group(), " ".join(str(text).splitlines()))


def code_span(text: str) -> str:
    """Text as an inline code span (shown as it is): fenced by more backticks than it holds in a row."""
    text = " ".join(text.splitlines())
    fence = "`" * (1 + max((len(run) for run in re.findall("`+", text)), default=0))
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def info_markdown(value: object) -> str:
    """A diagnostic's value in Markdown: text escaped, lists and mappings as JSON in a code span."""
    if isinstance(value, str):
        return markdown_text(value)
    return code_span(json.dumps(value, ensure_ascii=False)) if isinstance(value, (list, dict)) else json.dumps(value)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return "" if value is None else markdown_text(value)


def leaderboard_markdown(ratings: list[Ratings], names: list[str], title: str, top: int | None = None) -> str:
    """Each method's table, best first; provisional agents (`pipeline.methods.standing`) in a table of their own after it."""
    lines = [f"# {markdown_text(title)}", ""]
    for r in ratings:
        records = ratings_records([r], names)
        extras = [name for name, _ in published_extras(r.extras, names) if name != PROVISIONAL]  # as `records` name them
        lines += [f"## {markdown_text(r.spec)}", ""]
        if r.info:
            lines += [f"- {markdown_text(k)}: {info_markdown(v)}" for k, v in published_info(r, names).items()] + [""]
        if "ordered_by" in r.info:
            lines += [standing_sentence(r.info), ""]
        header = ["rank", "agent", "score", *extras]
        established = [rec for rec in records if not rec.get(PROVISIONAL)]
        provisional = [rec for rec in records if rec.get(PROVISIONAL)]
        for part, heading in ((established, None), (provisional, f"### Provisional agents ({len(provisional)})")):
            if heading is not None and not part:
                continue
            shown = part if top is None else part[:top]
            lines += [heading, ""] if heading is not None else []
            lines.append("| " + " | ".join(map(markdown_text, header)) + " |")
            lines.append("|" + "---|" * len(header))
            lines += ["| " + " | ".join(_cell(rec.get(c)) for c in header) + " |" for rec in shown]
            if len(shown) < len(part):
                lines.append(f"\n({len(part) - len(shown)} more in ratings.parquet)")
            lines.append("")
    return "\n".join(lines)


ORDER_WORDS = {"score": "the method's score", "lower": "the lower end of the 95% score interval",
               "rank_ub": "the rank upper bound [Arena] (1 + the agents whose whole interval lies above)"}


def standing_sentence(info: dict[str, object]) -> str:
    """What orders a board's table, and who is ranked apart (the info `pipeline.methods.standing` adds)."""
    apart = int(info["provisional_count"])
    when = f"Records as of {info['as_of']}. " if "as_of" in info else ""
    if "ages_from" in info:
        when += f"Each record weighed by its age: half-life {info['half_life_days']:g} days from {info['ages_from']}. "
    return (when + f"Ranked by {ORDER_WORDS[str(info['ordered_by'])]}, among the agents with at least {info['min_records']} records; "
            + (f"the {apart} with fewer are provisional, ranked apart after them." if apart else "no agent has fewer."))


def method_tables(ratings: list[Ratings], names: list[str], judges: list[str] | None = None) -> dict[str, pa.Table]:
    """Each method's extra tables as `<method>.<table>` (`<method>-2.<table>` for a second spec of
    the same method), with store ids replaced by names: `agent` / `*_agent` columns from the
    agents dictionary, `judge` / `*_judge` columns from the judges dictionary (-1, battles without a
    judge, is "(none)"; ids stay as text where no judges dictionary is given)."""
    label = {"agent": lambda a: names[a], "judge": lambda j: judge_name(j, judges)}
    tables, seen = {}, {}
    for r in ratings:
        seen[r.name] = seen.get(r.name, 0) + 1
        stem = r.name if seen[r.name] == 1 else f"{r.name}-{seen[r.name]}"
        for name, table in r.tables.items():
            for i, column in enumerate(table.column_names):
                key = column.rpartition("_")[2]
                if key in label:
                    ids = table.column(column).to_pylist()
                    table = table.set_column(i, column, pa.array([None if a is None else label[key](a) for a in ids], pa.string()))
            tables[f"{stem}.{name}"] = table
    return tables


def table_markdown(title: str, table: pa.Table) -> str:
    lines = [f"# {markdown_text(title)}", "", "| " + " | ".join(map(markdown_text, table.column_names)) + " |",
             "|" + "---|" * table.num_columns]
    lines += ["| " + " | ".join(_cell(_plain(v)) for v in row.values()) + " |" for row in table.to_pylist()]
    return "\n".join(lines) + "\n"


def agents_table(stats: Statistics, names: list[str]) -> pa.Table:
    """Per agent the number of records (battles, games, tasks, ballots, reviews) it appears in, by name."""
    rows = sorted(zip((names[a] for a in stats.agents.tolist()), stats.appearances.tolist()))
    return pa.table({"agent": pa.array([r[0] for r in rows], pa.string()), "records": pa.array([r[1] for r in rows], pa.int64())})


def pairwise_table(pairs: PairwiseCounts, names: list[str]) -> pa.Table:
    """Every ordered pair of agents that met: `wins` N[x, y], `losses` N[y, x], `ties` T[x, y] and
    `win_rate` (N[x, y] + T[x, y] / 2) / (N[x, y] + N[y, x] + T[x, y]), by agent then opponent name."""
    met = pairs.wins + pairs.wins.T + pairs.ties
    x, y = (sp.coo_array(met).coords if pairs.is_sparse else np.nonzero(met))
    kept = np.asarray(met[x, y]).ravel() > 0  # a sparse matrix may hold explicit zeros
    x, y = x[kept], y[kept]
    n_xy, n_yx, t_xy = (np.asarray(m[i, j], dtype=np.float64).ravel() for m, i, j in
                        ((pairs.wins, x, y), (pairs.wins, y, x), (pairs.ties, x, y)))
    label = [names[a] for a in pairs.agents.tolist()]
    by_name = np.empty(len(label), dtype=np.int64)
    by_name[sorted(range(len(label)), key=label.__getitem__)] = np.arange(len(label))
    order = np.lexsort((by_name[y], by_name[x]))
    labels = pa.array(label, pa.string())  # each name once; the pairs take theirs by index (millions at 2,000 agents)
    return pa.table({
        "agent": labels.take(x[order]),
        "opponent": labels.take(y[order]),
        "wins": pa.array(n_xy[order], pa.float64()),
        "losses": pa.array(n_yx[order], pa.float64()),
        "ties": pa.array(t_xy[order], pa.float64()),
        "win_rate": pa.array(((n_xy + t_xy / 2) / (n_xy + n_yx + t_xy))[order], pa.float64()),
    })


def code_version() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True,
                             cwd=Path(pipeline.__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        rev = "unknown"
    return f"{pipeline.__version__}+{rev}"


@dataclass
class RunRecord:
    """What run.json says about a run: inputs, parameters, version, timings, row accounting."""

    kind: str
    methods: list[str]
    store: str
    inputs: list[IngestReport]
    parameters: dict[str, object] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    diagnostics: dict[str, dict[str, object]] = field(default_factory=dict)
    outputs: list[str] = field(default_factory=list)
    title: str = ""
    errors: dict[str, str] = field(default_factory=dict)  # spec -> why the method could not rate (agents named)
    categories: dict[str, object] = field(default_factory=dict)  # a board rated by category: its categories' boards

    def to_json(self) -> dict[str, object]:
        rows = {key: sum(getattr(r, key) for r in self.inputs) for key in ("rows_in", "rows_accepted", "rows_quarantined")}
        return {
            "title": self.title,
            "version": code_version(),
            "python": platform.python_version(),
            "kind": self.kind,
            "methods": self.methods,
            "store": self.store,
            "parameters": self.parameters,
            "inputs": [{k: v for k, v in asdict(r).items() if k != "partitions"} | {"partitions": len(r.partitions)} for r in self.inputs],
            "rows": rows,
            "timings_s": {k: round(v, 3) for k, v in self.timings.items()},
            "diagnostics": self.diagnostics,
            "errors": self.errors,
            "outputs": sorted(self.outputs),
        } | ({"categories": self.categories} if self.categories else {})


def publish(out: str | Path, ratings: list[Ratings], names: list[str], run: RunRecord, title: str, *,
            judges: list[str] | None = None, stats: Statistics | None = None) -> list[Path]:
    """Write the standard outputs of one leaderboard into `out`; returns the paths written.

    `names` are the agents dictionary's names, `judges` the judges dictionary's (for method tables);
    `stats`, the statistics the methods read, adds `agents.parquet` and (when the pairwise counts
    were computed) `pairwise.parquet`."""
    out = Path(out)
    records = ratings_records(ratings, names)
    written = {
        "ratings.parquet": lambda p: write_parquet(p, ratings_table(records)),
        "ratings.json": lambda p: write_text(p, json.dumps(records, indent=1, allow_nan=False) + "\n"),
        "leaderboard.md": lambda p: write_text(p, leaderboard_markdown(ratings, names, title)),
    }
    if stats is not None:
        written["agents.parquet"] = lambda p: write_parquet(p, agents_table(stats, names))
        if stats.pairwise is not None:
            written["pairwise.parquet"] = lambda p: write_parquet(p, pairwise_table(stats.pairwise, names))
    for stem, table in method_tables(ratings, names, judges).items():
        written[f"{stem}.parquet"] = lambda p, table=table: write_parquet(p, table)
        written[f"{stem}.md"] = lambda p, stem=stem, table=table: write_text(p, table_markdown(f"{title}: {stem}", table))
    for filename, write in written.items():
        write(out / filename)
    run.outputs = sorted(set(run.outputs) | set(written) | {"run.json"})
    run.title = run.title or title
    run.diagnostics = {r.spec: published_info(r, names) for r in ratings}
    write_json(out / "run.json", run.to_json())
    return [out / name for name in run.outputs]


def published_info(ratings: Ratings, names: list[str]) -> dict[str, object]:
    """A method's diagnostics as published: JSON-safe, store ids as names, keys in order."""
    return {k: _json_safe(_named(k, v, names)) for k, v in sorted(ratings.info.items())}


def _named(key: str, value: object, names: list[str]) -> object:
    """Diagnostics named `*_agent` or `*_agents` hold store ids; publish them as names."""
    if key.endswith("_agent") and value is not None:
        return names[int(value)]
    if key.endswith("_agents"):
        return [_named("_agents", v, names) if isinstance(v, (list, tuple, np.ndarray)) else names[int(v)] for v in value]
    return value


def _json_safe(value: object) -> object:
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_json_safe(v) for v in value.tolist()]
    return _plain(value)
