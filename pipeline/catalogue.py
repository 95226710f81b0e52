"""The rating methods and log kinds as `vase methods` and `vase kinds` list them, without the numerical stack.

Listing the registry imports every method module, and with them numpy, scipy, polars and numba:
5-12 s for a table of names. `catalogue.json` beside this module holds the listing instead: each
method's parameters with their defaults and the words of their rules, the statistics it reads, the
kinds it rates and its summary; each kind's rows, file types and whether it is stored. It is
generated from the live registry (`python -m pipeline.catalogue` rewrites it; `--print` prints
what it would write), and tests/test_catalogue.py fails when the two differ, so it cannot drift:
a new method, parameter, rule or kind is a failing test until the file is written again.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

CATALOGUE = Path(__file__).with_name("catalogue.json")


def read() -> dict[str, list[dict]]:
    """The stored catalogue: {"methods": [...], "kinds": [...]}."""
    return json.loads(CATALOGUE.read_text(encoding="utf-8"))


def methods() -> list[dict]:
    """Each rating method by name: `parameters` (defaults), `rules` (their words), `statistics`, `kinds`, `summary`."""
    return read()["methods"]


def kinds() -> list[dict]:
    """Each log kind: what one row (or file) `holds`, the `files` read, whether it is `stored`."""
    return read()["kinds"]


def build() -> dict[str, list[dict]]:
    """The catalogue of the live registry (imports every method and log kind)."""
    from pipeline.board import KINDS, kinds_rated
    from pipeline.methods import REGISTRY

    return {
        "methods": [{"method": name, "parameters": {k: written(v) for k, v in m.parameters.items()}, "rules": {k: r.words for k, r in m.rules.items()},
                     "statistics": list(m.statistics), "kinds": kinds_rated(m), "summary": m.summary}
                    for name, m in sorted(REGISTRY.items())],
        "kinds": [{"kind": name, "holds": k.holds, "files": list(k.suffixes), "stored": k.stored} for name, k in KINDS.items()],
    }


def written(default: object) -> object:
    """A parameter's default as JSON holds it: an infinite one as its spelling in a spec (`inf`), JSON having none."""
    return str(default) if isinstance(default, float) and math.isinf(default) else default


def text(catalogue: dict[str, list[dict]]) -> str:
    return json.dumps(catalogue, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> None:
    if argv == ["--print"]:
        sys.stdout.write(text(build()))
    elif not argv:
        from pipeline.store.files import write_text

        write_text(CATALOGUE, text(build()))
        print(f"wrote {CATALOGUE}")
    else:
        sys.exit("usage: python -m pipeline.catalogue [--print]")


if __name__ == "__main__":
    main(sys.argv[1:])
