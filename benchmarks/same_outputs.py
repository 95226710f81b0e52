"""Whether a change keeps every byte a rating writes: two checkouts, the same logs, stores and run folders compared.

Run as `python -m benchmarks.same_outputs --baseline DIR [--kind battles] [-m SPEC ...] BOARD=FILE[,FILE...] ...`.
For each board, each checkout (this one and `--baseline`, say main's from `git worktree add DIR main`) runs
`pipeline.board.run_board` in a fresh process into a persistent store, twice, each into its own run folder:
the board's files, then the board's files again with the next board's first file (so the second ingest
checks its ids against the committed index read back from disk). Every file of the two stores (partitions, quarantine,
dictionaries, id runs, manifest) and of the run folders (ratings, report, run.json) is compared byte for
byte. What differs between any two runs is masked first: the folder's own path, wall-clock times, stage
timings (`"name": seconds` in run.json, `<td>seconds s</td>` in the report), the checkout's commit, and the
random names of the id index's run files (each named by its content's SHA-256). Anything else that differs
is printed, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.bench_elo import ROOT

RUN_FILE = re.compile(r"run-[0-9a-f]{32}\.npy")
STAMP = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(\+00:00|Z)?")
COMMIT = re.compile(r"\+([0-9a-f]{7,}|unknown)\b")
TIMING = re.compile(r"<td>\d+(\.\d+)? s</td>|^[-+]\s*\"[^\"]*\": \d+(\.\d+)?,?$")
SCRIPT = """
import sys
from pathlib import Path
from pipeline.board import Board, run_board
from pipeline.store import Store
folder, out, kind = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
specs, sources = tuple(sys.argv[4].split(";")), tuple(sys.argv[5].split(";"))
run_board(Board(folder.name, kind, sources, specs), Store(folder / "store"), folder / out)
"""


def run(root: Path, folder: Path, out: str, kind: str, specs: list[str], sources: list[str]) -> None:
    """`run_board` of the checkout at `root`, in a fresh process, into `folder`'s store and `folder/out`."""
    subprocess.run([sys.executable, "-c", SCRIPT, str(folder), out, kind, ";".join(specs), ";".join(sources)], cwd=root,
                   env=os.environ | {"PYTHONPATH": str(root)}, check=True, stdout=subprocess.DEVNULL)


def files(root: Path) -> dict[str, Path]:
    """The files under `root` by relative path, an id run named by its content."""
    found = {}
    for path in root.rglob("*"):
        if path.is_file() and path.name != ".lock":
            relative = str(path.relative_to(root))
            found[RUN_FILE.sub(f"run-{hashlib.sha256(path.read_bytes()).hexdigest()}.npy", relative)] = path
    return found


def masked(root: Path, text: str) -> str:
    for name in set(RUN_FILE.findall(text)):
        text = text.replace(name, f"run-{hashlib.sha256(next(root.rglob(name)).read_bytes()).hexdigest()}.npy")
    return STAMP.sub("<time>", COMMIT.sub("+<commit>", text.replace(str(root), "<root>")))


def differences(before: Path, after: Path) -> tuple[int, int, list[str]]:
    """Files byte-identical, files identical once masked, and what differs otherwise."""
    old, new = files(before), files(after)
    found = [f"only in {side}: {name}" for side, names in (("the baseline", old.keys() - new.keys()), ("this checkout", new.keys() - old.keys()))
             for name in sorted(names)]
    same = alike = 0
    for name in sorted(old.keys() & new.keys()):
        a, b = old[name].read_bytes(), new[name].read_bytes()
        if a == b:
            same += 1
            continue
        try:
            a_text, b_text = masked(before, a.decode()), masked(after, b.decode())
        except UnicodeDecodeError:
            found.append(f"{name}: binary, differs")
            continue
        lines = [line for line in difflib.unified_diff(a_text.splitlines(), b_text.splitlines(), lineterm="", n=0)
                 if line[:1] in "+-" and line[:3] not in ("+++", "---")]
        if all(TIMING.search(line) for line in lines):
            alike += 1
        else:
            found.append(f"{name}: " + " | ".join(line[:160] for line in lines[:4]))
    return same, alike, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True)
    parser.add_argument("--kind", default="battles")
    parser.add_argument("-m", "--method", dest="specs", action="append", default=None)
    parser.add_argument("boards", nargs="+", help="NAME=FILE[,FILE...]")
    args = parser.parse_args()
    specs = args.specs or ["m-elo:bootstrap=0", "borda"]
    boards = [(name, [str(Path(f).resolve()) for f in sources.split(",")]) for name, _, sources in (b.partition("=") for b in args.boards)]
    failed = False
    with tempfile.TemporaryDirectory(prefix="vase-same-") as tmp:
        for index, (name, sources) in enumerate(boards):
            again = sources + boards[(index + 1) % len(boards)][1][:1]
            for side, root in (("baseline", args.baseline.resolve()), ("this", ROOT)):
                folder = Path(tmp) / side / name
                run(root, folder, "first", args.kind, specs, sources)
                run(root, folder, "again", args.kind, specs, list(dict.fromkeys(again)))
            same, alike, found = differences(Path(tmp) / "baseline" / name, Path(tmp) / "this" / name)
            print(f"{name}: {same} files byte-identical, {alike} identical but for paths, times and timings, {len(found)} differ")
            for line in found:
                print(f"  {line}")
            failed |= bool(found)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
