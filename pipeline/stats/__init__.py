"""Sufficient statistics and the Dask reductions that compute them from the store.

Every module of this package is imported here, so that extra statistics registered with
`register_extra` exist wherever `pipeline.stats` is imported (including on Dask workers), except
the compiled loops, which register nothing and are imported where they are used.
"""

import importlib
import pkgutil

from pipeline.stats.counts import CORE_STATISTICS, BallotHistogram, PairwiseCounts, PositionCounts, Statistics
from pipeline.stats.extras import EXTRAS, Extra, register_extra
from pipeline.stats.reduce import reduce_store

# numba's compiled loops register no extra; importing them imports numba (~0.5 s), so they load on first use
COMPILED_ON_FIRST_USE = {"sorted_runs"}

for _module in sorted({m.name for m in pkgutil.iter_modules(__path__)} - COMPILED_ON_FIRST_USE):
    importlib.import_module(f"{__name__}.{_module}")

__all__ = ["CORE_STATISTICS", "EXTRAS", "BallotHistogram", "Extra", "PairwiseCounts", "PositionCounts", "Statistics",
           "reduce_store", "register_extra"]
