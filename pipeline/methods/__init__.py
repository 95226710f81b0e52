"""Rating methods: pure functions from statistics to `Ratings`, looked up by spec.

Every module of this package is imported here, so that its `@method` registrations exist
wherever `pipeline.methods` is imported (including on Dask workers).
"""

import importlib
import pkgutil

from pipeline.methods.ratings import Ratings, competition_ranks
from pipeline.methods.registry import REGISTRY, Method, Spec, apply, method, needed_statistics, run

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")

__all__ = ["REGISTRY", "Method", "Ratings", "Spec", "apply", "competition_ranks", "method", "needed_statistics", "run"]
