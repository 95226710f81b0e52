"""Start-up time of the `vase` command against a bare Python start, timed in the same run.

Run as `python -m benchmarks.bench_cli_start [--repeat N]`. Each command is a fresh process
(the installed `vase` script of this environment): `python -c pass` is the floor, then
`vase --help`, `vase methods --help` (a command's help imports nothing more) and `vase methods`
(which imports the method registry, and with it numpy, scipy and polars). The best of N runs of
each is kept, the least disturbed by other load. The target (issue: "Fast start") is
`vase --help` under 0.5 s; the table also gives each time as a ratio to the bare start, and the
modules `vase --help` imports that the target excludes (none is expected). JSON is written to
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


def heavy_imports() -> list[str]:
    """The excluded modules (top-level names) that `vase --help` imports."""
    probe = ("import sys\nsys.argv = ['vase', '--help']\nfrom flows.cli import app\ntry:\n    app()\nexcept SystemExit:\n    pass\n"
             "print('\\n'.join(sys.modules), file=sys.stderr)")
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
        "vase methods": [str(VASE), "methods"],
    }
    times = {name: best_start(argv, args.repeat) for name, argv in commands.items()}
    baseline = times["python -c pass"]
    print(f"{'command':<22} {'best s':>8} {'x bare python':>14}")
    for name, seconds in times.items():
        print(f"{name:<22} {seconds:8.3f} {seconds / baseline:14.1f}")
    heavy = heavy_imports()
    print(f"heavy modules imported by `vase --help`: {', '.join(heavy) or 'none'}")
    print(f"target: vase --help under 0.5 s: {'met' if times['vase --help'] < 0.5 else 'NOT met'} "
          f"(load average {os.getloadavg()[0]:.1f})")
    path = save("cli_start", {"repeat": args.repeat, "seconds": times, "ratio_to_bare_python": {k: v / baseline for k, v in times.items()},
                              "heavy_imports_of_help": heavy, "load_average": os.getloadavg()[0]})
    print(f"results: {path}")


if __name__ == "__main__":
    main()
