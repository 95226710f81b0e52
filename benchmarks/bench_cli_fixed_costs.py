"""The fixed cost a user pays on every `vase rate`, against bare imports timed in the same run.

Run as `python -m benchmarks.bench_cli_fixed_costs [--repeat N]`. Each command is a fresh process;
the best of N runs of each is kept (the least disturbed by other load). The floor is
`python -c "import numpy, pyarrow"`; then `import pipeline.board` (what `rate` imports: every
method module, scipy, numba, polars, matplotlib) and `vase rate` of a 10-row battles file with
borda (local threads, a temporary store, the report written). Issue 34's target is a 10-row
`rate` at most 3x the floor; the table gives each time as a ratio to it, and the 10-row rate's
share spent importing. JSON is written to benchmarks/results/cli_fixed_costs.json.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import save

VASE = Path(sys.executable).parent / "vase"
TEN_ROWS = "model_a,model_b,winner\n" + "".join(f"m{i % 4},m{(i + 1) % 4},{('model_a', 'model_b', 'tie')[i % 3]}\n" for i in range(10))
TARGET = 3.0


def best_start(argv: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vase-bench-") as scratch:
        log = Path(scratch) / "ten.csv"
        log.write_text(TEN_ROWS)
        commands = {
            "import numpy, pyarrow": [sys.executable, "-c", "import numpy, pyarrow"],
            "import pipeline.board": [sys.executable, "-c", "import pipeline.board"],
            "vase rate (10 rows)": [str(VASE), "rate", str(log), "--kind", "battles", "-m", "borda", "--out",
                                    str(Path(scratch) / "out"), "--force"],
        }
        times = {name: best_start(argv, args.repeat) for name, argv in commands.items()}
    floor = times["import numpy, pyarrow"]
    print(f"{'command':<24} {'best s':>8} {'x numpy+pyarrow':>16}")
    for name, seconds in times.items():
        print(f"{name:<24} {seconds:8.3f} {seconds / floor:16.1f}")
    ratio = times["vase rate (10 rows)"] / floor
    imports = times["import pipeline.board"] / times["vase rate (10 rows)"]
    print(f"share of the 10-row rate spent importing pipeline.board: {imports:.0%}")
    print(f"target: 10-row rate at most {TARGET}x numpy+pyarrow: {'met' if ratio <= TARGET else 'NOT met'} ({ratio:.1f}x); "
          f"load average {os.getloadavg()[0]:.1f}")
    path = save("cli_fixed_costs", {"repeat": args.repeat, "seconds": times, "ratio_to_numpy_pyarrow": {k: v / floor for k, v in times.items()},
                                    "import_share": imports, "target_ratio": TARGET, "load_average": os.getloadavg()[0]})
    print(f"results: {path}")


if __name__ == "__main__":
    main()
