"""Sufficient statistics and the Dask reductions that compute them from the store.

Every module of this package is imported here, so that extra statistics registered with
`register_extra` exist wherever `pipeline.stats` is imported (including on Dask workers).
"""

import importlib
import pkgutil

from pipeline.stats.counts import CORE_STATISTICS, BallotHistogram, PairwiseCounts, PositionCounts, Statistics
from pipeline.stats.extras import EXTRAS, Extra, register_extra
from pipeline.stats.reduce import reduce_store

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")

__all__ = ["CORE_STATISTICS", "EXTRAS", "BallotHistogram", "Extra", "PairwiseCounts", "PositionCounts", "Statistics",
           "reduce_store", "register_extra"]
