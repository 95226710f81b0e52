"""Sufficient statistics and the Dask reductions that compute them from the store."""

from pipeline.stats.counts import BallotHistogram, PairwiseCounts, PositionCounts, Statistics
from pipeline.stats.partials import WeakOrders
from pipeline.stats.reduce import STATISTICS, reduce_store

__all__ = ["STATISTICS", "BallotHistogram", "PairwiseCounts", "PositionCounts", "Statistics", "WeakOrders", "reduce_store"]
