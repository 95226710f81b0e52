"""Leaderboards, plots and run metadata."""

from pipeline.report.publish import RunRecord, leaderboard_markdown, publish, ratings_records, ratings_table

__all__ = ["RunRecord", "leaderboard_markdown", "publish", "ratings_records", "ratings_table"]
