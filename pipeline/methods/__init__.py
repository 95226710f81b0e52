"""Rating methods: pure functions from statistics to `Ratings`, looked up by spec.

Importing this package registers every method module.
"""

from pipeline.methods import copeland, scoring  # noqa: F401  (registration)
from pipeline.methods.ratings import Ratings, competition_ranks
from pipeline.methods.registry import REGISTRY, Method, Spec, method, needs, run

__all__ = ["REGISTRY", "Method", "Ratings", "Spec", "competition_ranks", "method", "needs", "run"]
