"""Backtests: train/test splits, Kendall-tau evaluation and predictive metrics [VasE] section 4.3."""

from pipeline.backtest.evaluate import run_backtest, training_statistics
from pipeline.backtest.kendall import game_distances, kendall_distance
from pipeline.backtest.runner import BacktestConfig, backtest
from pipeline.backtest.splits import Split, random_splits, temporal_splits
from pipeline.backtest.summary import summarise
from pipeline.backtest.units import UnitLog, load_units

__all__ = ["BacktestConfig", "Split", "UnitLog", "backtest", "game_distances", "kendall_distance", "load_units",
           "random_splits", "run_backtest", "summarise", "temporal_splits", "training_statistics"]
