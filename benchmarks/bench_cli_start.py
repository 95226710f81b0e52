"""Start-up time of the `vase` command against a bare Python start, timed in the same run.

Run as `python -m benchmarks.bench_cli_start [--repeat N]`. Each command is a fresh process
(the installed `vase` script of this environment): `python -c pass` is the floor, then
`vase --help`, `vase methods --help` (a command's help imports nothing more), and `vase kinds` and
`vase methods`, which list the stored catalogue of the registry (`pipeline/catalogue.py`) instead of
importing every method module with numpy, scipy and polars (5-12 s before). The best of N runs of
each is kept, the least disturbed by other load. The targets are `vase --help` under 0.5 s ("Fast
start") and `vase kinds` and `vase methods` under 1 s (issue 34); the table also gives each time as
a ratio to the bare start measured in the same run, and the modules `vase --help`, `vase kinds`
and `vase methods` import that the targets exclude (none is expected). JSON is written to
benchmarks/results/cli_start.json.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import save

VASE = Path(sys.executable).parent / "vase"
HEAVY = ("prefect", "distributed", "dask", "scipy", "polars", "pyarrow", "numpy", "matplotlib", "pipeline.methods")


def best_start(argv: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ | {"COLUMNS": "100"})
        best = min(best, time.perf_counter() - start)
    return best


def heavy_imports(*command: str) -> list[str]:
    """The excluded modules (top-level names) that `vase COMMAND...` imports."""
    probe = (f"import sys\nsys.argv = ['vase', *{list(command)!r}]\nfrom flows.cli import app\ntry:\n    app()\n"
             "except SystemExit:\n    pass\nprint('\\n'.join(sys.modules), file=sys.stderr)")
    loaded = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stderr.split()
    return sorted({heavy for heavy in HEAVY for module in loaded if module == heavy or module.startswith(heavy + ".")})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "vase --help": [str(VASE), "--help"],
        "vase methods --help": [str(VASE), "methods", "--help"],
        "vase kinds": [str(VASE), "kinds"],
        "vase methods": [str(VASE), "methods"],
    }
    times = {name: best_start(argv, args.repeat) for name, argv in commands.items()}
    baseline = times["python -c pass"]
    print(f"{'command':<22} {'best s':>8} {'x bare python':>14}")
    for name, seconds in times.items():
        print(f"{name:<22} {seconds:8.3f} {seconds / baseline:14.1f}")
    heavy = {command: heavy_imports(*command.split()[1:]) for command in ("vase --help", "vase kinds", "vase methods")}
    for command, modules in heavy.items():
        print(f"heavy modules imported by `{command}`: {', '.join(modules) or 'none'}")
    targets = {"vase --help": 0.5, "vase kinds": 1.0, "vase methods": 1.0}
    for command, limit in targets.items():
        print(f"target: {command} under {limit} s: {'met' if times[command] < limit else 'NOT met'}")
    print(f"load average {os.getloadavg()[0]:.1f}")
    path = save("cli_start", {"repeat": args.repeat, "seconds": times, "ratio_to_bare_python": {k: v / baseline for k, v in times.items()},
                              "heavy_imports": heavy, "load_average": os.getloadavg()[0]})
    print(f"results: {path}")


if __name__ == "__main__":
    main()
