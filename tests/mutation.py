"""Mutation testing (`make mutation`, docs/testing.md): mutmut plants small bugs in a module one at
a time and runs the tests that guard it; a mutant that no test kills is a claim without a guard.

Each target runs in a scratch copy of the project's tracked files, `.mutation/<target>/`, with a
`[tool.mutmut]` section of its own (mutmut reads its settings from the pyproject.toml of the
folder it runs in, and keeps its mutants and results there, so a second run only tries what
changed). At the end a line per target gives its score: caught (killed, timed out or crashed) over all
tried, mutants that no selected test reaches counted as survivors.

    make mutation                                # every target
    make mutation MUTATION="paths fuzz"          # some
    .venv/bin/python -m tests.mutation paths --survivors   # a finished run's survivors, with diffs
    .venv/bin/python -m tests.mutation store --only "*ǁStoreǁingest*"   # some functions' mutants
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = ROOT / ".mutation"


@dataclass(frozen=True)
class Target:
    mutate: tuple[str, ...]  # mutmut's only_mutate globs
    tests: tuple[str, ...]  # the pytest arguments that select the tests guarding them


TARGETS = {
    "paths": Target(("pipeline/paths.py",), ("tests/test_paths.py",)),
    "fuzz": Target(("pipeline/store/fuzz.py",), ("tests/store/test_fuzz.py", "-k", "not no_crash")),
    "scoring": Target(("pipeline/methods/voting/scoring.py",), ("tests/methods/voting",)),
    # without the toy kind's backtest (3 s, it reaches triage only through the readers the other tests run)
    "triage": Target(("pipeline/logs/triage.py",), ("tests/logs", "-k", "not backtested_by_unit")),
    # the delimited reader (CSV, TSV): its own tests and the readers' whole-format ones
    "delimited": Target(("pipeline/logs/delimited.py",),
                        ("tests/logs/test_delimited.py", "tests/logs/test_readers.py", "tests/logs/test_total_readers.py")),
    # the other readers (JSON and JSONL, Parquet, PrefLib, the encoding sniffer) against every fast test of the logs
    "readers": Target(("pipeline/logs/json_files.py", "pipeline/logs/parquet_files.py", "pipeline/logs/preflib.py",
                       "pipeline/logs/encoding.py"), ("tests/logs", "-k", "not backtested_by_unit")),
    "resample": Target(("pipeline/methods/numerics/resample.py",), ("tests/methods/numerics/test_resample.py",)),
    # without the Arena-hard test on a Dask cluster (18 s a run at load ~15)
    "uncertainty": Target(("pipeline/methods/uncertainty.py",),
                          ("tests/methods/test_uncertainty.py", "-k", "not one_and_two_workers")),
    # the store whole: its selection alone takes minutes (the object-store tests, 30-50 s each); the
    # per-module targets below each run a module against the fast tests that guard it
    "store-all": Target(("pipeline/store/*",), ("tests/store", "-k", "not no_crash")),
    "store": Target(("pipeline/store/store.py",), ("tests/store/test_store.py", "tests/store/test_isolation.py")),
    # with test_commit.py: a store in object storage on fsspec's in-memory filesystem (no server)
    "commit": Target(("pipeline/store/commit.py",),
                     ("tests/store/test_store.py", "tests/store/test_isolation.py", "tests/store/test_commit.py")),
    "footprint": Target(("pipeline/store/footprint.py",), ("tests/store/test_footprint.py",)),
    # without the many-day test (8 s: the others write the same partitions in small buffers)
    "partitions": Target(("pipeline/store/partitions.py",), ("tests/store/test_partitions.py", "-k", "not many_days")),
    "index": Target(("pipeline/store/index.py",),
                    ("tests/store/test_isolation.py", "tests/store/test_store.py", "tests/store/test_index.py")),
    "files": Target(("pipeline/store/files.py",),
                    ("tests/store/test_store.py", "tests/store/test_isolation.py", "tests/store/test_ingest_limits.py",
                     "tests/store/test_files.py")),
    # with test_location.py: URLs on fsspec's in-memory filesystem, the object store's errors (no server)
    "location": Target(("pipeline/store/location.py",),
                       ("tests/store/test_store.py", "tests/store/test_isolation.py", "tests/store/test_location.py")),
    "report": Target(("pipeline/report/*",), ("tests/report", "-m", "not slow")),
    # report's two claims apart, each against the tests that guard it (report's selection is minutes a mutant)
    "publish": Target(("pipeline/report/publish.py",),
                      ("tests/report/test_publish.py", "tests/report/test_publish_tables.py")),
    # without the tests over the session's nightly runs (demo_nightly, hostile_nightly: eight boards and a
    # backtest rated again for every mutant, a minute at load 3); the fixture-free tests build small boards
    "site": Target(("pipeline/report/site.py",),
                   ("tests/report/test_site.py", "-m", "not slow", "-k", ("not (every_board_page or intervals_records or "
                    "diagnostics_of_every or unknown_keys or every_page_shows_hostile or same_run_same_bytes or "
                    "a_board_whose_outputs)"))),
    # the secrets generator (infra/postgres.py's tests start PostgreSQL: not a target yet)
    "infra": Target(("infra/credentials.py",),
                    ("tests/infra/test_manifests.py", "tests/infra/test_credentials.py",
                     "tests/infra/test_dask_tls.py::test_a_client_key_cannot_serve_as_a_scheduler_or_a_worker")),
}


def scratch_copy(name: str, target: Target) -> Path:
    """The tracked files of the work tree (as they are now) in .mutation/<name>/, with mutmut's settings."""
    folder = SCRATCH / name
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout.decode().split("\0")
    for relative in filter(None, files):
        source, copy = ROOT / relative, folder / relative
        if source.is_file() and (not copy.exists() or copy.read_bytes() != source.read_bytes()):
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy)
    settings = "\n".join([
        "", "[tool.mutmut]",
        'source_paths = ["pipeline", "flows", "infra"]',
        f"only_mutate = {json.dumps(list(target.mutate))}",
        'also_copy = ["data-samples", "benchmarks", "experiments", "Makefile", "README.md", "docs", "constraints.txt"]',
        f"pytest_add_cli_args_test_selection = {json.dumps(list(target.tests))}",
        'pytest_add_cli_args = ["-q", "-p", "no:cacheprovider", "-p", "no:xdist"]',
        # Forked from a server that only collected the tests: a worker forked from the process that ran them
        # inherits the thread pools of pyarrow and the store's read-ahead, and can hang on their locks.
        'process_isolation = "forkserver"',
        "",
    ])
    (folder / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text() + settings)
    return folder


def statuses(folder: Path, target: Target) -> dict[str, str]:
    """Each mutant's status, from the results mutmut keeps beside its mutants (of the target's modules only:
    the results of a module the target once named stay in the scratch copy)."""
    from mutmut.stats import status_by_exit_code

    found = {}
    for meta in sorted((folder / "mutants").rglob("*.meta")):
        if not any(fnmatch(str(meta.relative_to(folder / "mutants").with_suffix("")), g) for g in target.mutate):
            continue
        for mutant, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            found[mutant] = status_by_exit_code[code]
    return found


def score(found: dict[str, str]) -> tuple[float, Counter]:
    """Killed over tried; a mutant that hangs the tests (timeout) or crashes their process (segfault: invalid
    UTF-8 let through to Arrow's string kernels) is caught as surely as one that fails them."""
    counts = Counter(found.values())
    caught = counts["killed"] + counts["timeout"] + counts["segfault"]
    tried = caught + counts["survived"] + counts["no tests"]
    return caught / tried if tried else float("nan"), counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", default=list(TARGETS), help=f"of: {', '.join(TARGETS)}")
    parser.add_argument("--children", type=int, default=2, help="mutants tried at once (default 2)")
    parser.add_argument("--survivors", action="store_true", help="show the survivors of a finished run instead")
    parser.add_argument("--only", nargs="+", default=[], metavar="GLOB",
                        help="try only the mutants whose names match (mutmut's names: module.x_function__mutmut_N)")
    args = parser.parse_args()
    unknown = set(args.targets) - set(TARGETS)
    if unknown:
        parser.error(f"unknown target(s) {', '.join(sorted(unknown))}; expected some of {', '.join(TARGETS)}")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the scratch copy's code, not another checkout's
    lines = []
    for name in args.targets:
        folder = scratch_copy(name, TARGETS[name]) if not args.survivors else SCRATCH / name
        mutmut = [sys.executable, "-m", "mutmut"]
        if args.survivors:
            for mutant, status in statuses(folder, TARGETS[name]).items():
                if status not in ("killed", "timeout"):
                    subprocess.run([*mutmut, "show", mutant], cwd=folder, env=env, check=False)
            continue
        start = time.perf_counter()
        subprocess.run([*mutmut, "run", "--max-children", str(args.children), *args.only], cwd=folder, env=env,
                       check=False)
        ratio, counts = score(statuses(folder, TARGETS[name]))
        lines.append(f"{name}: {ratio:.1%} killed ({', '.join(f'{n} {s}' for s, n in sorted(counts.items()))}) "
                     f"in {time.perf_counter() - start:.0f} s")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
