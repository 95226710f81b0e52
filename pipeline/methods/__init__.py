"""Rating methods: pure functions from statistics to `Ratings`, looked up by spec.

The contract sits at the top (`registry`, `ratings`, `convergence`, `uncertainty`, `comparison`,
`standing`: provisional agents and the order key);
the methods sit in one sub-package per family (`voting`, `bradley_terry`, `game_theory`,
`council`), with the numerical helpers they share in `numerics`. Every module of every
sub-package is imported here, so that its `@method` registrations exist wherever
`pipeline.methods` is imported (including on Dask workers); the numba-compiled loops, which
register nothing, are imported by the methods that call them.
"""

import importlib
import pkgutil

from pipeline.methods.ratings import Ratings, competition_ranks
from pipeline.methods.registry import REGISTRY, Method, Spec, apply, method, needed_statistics, run

# numba's compiled loops register no method; importing them imports numba (~0.5 s), so they load on first use
COMPILED_ON_FIRST_USE = {f"{__name__}.{name}" for name in ("bradley_terry.elo_update", "bradley_terry.newton", "numerics.guide_table",
                                                             "voting.widest_paths")}

for _module in sorted({m.name for m in pkgutil.walk_packages(__path__, prefix=f"{__name__}.")} - COMPILED_ON_FIRST_USE):
    importlib.import_module(_module)

__all__ = ["REGISTRY", "Method", "Ratings", "Spec", "apply", "competition_ranks", "method", "needed_statistics", "run"]
