"""Leaderboards, plots, run metadata, the HTML report and the nightly history."""

from pipeline.report.history import HISTORY_FILE, append_history, read_history
from pipeline.report.publish import RunRecord, leaderboard_markdown, publish, ratings_records, ratings_table
from pipeline.report.site import write_report

__all__ = ["HISTORY_FILE", "RunRecord", "append_history", "leaderboard_markdown", "publish", "ratings_records", "ratings_table",
           "read_history", "write_report"]
