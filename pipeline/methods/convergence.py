"""Failures of iterative fits, reported as facts about the data or the solver (STYLE.md)."""

from __future__ import annotations


class ConvergenceError(RuntimeError):
    """An iterative fit used up `max_iter` before its convergence test passed."""


class NoEstimate(ValueError):
    """The maximum-likelihood estimate does not exist for these data; `agents` are store ids."""

    def __init__(self, message: str, agents: list[int] | None = None):
        super().__init__(message)
        self.agents = list(agents or [])
