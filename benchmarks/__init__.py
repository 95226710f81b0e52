"""Benchmarks: each reports its results as ratios to a baseline measured in the same run."""
