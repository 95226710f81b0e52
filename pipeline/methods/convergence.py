"""Why a method could not rate the data: one line, naming the agents and the numbers.

Methods see store ids, not names (names live in the store's dictionaries and come back in the
report). A `RatingError` message speaks of agents through the placeholder `{agents}`; `agents`
holds their store ids; `str(error)` shows the ids and `error.named(names)` the names, which is
what the command line, the flows and run.json print.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

SHOWN = 10  # agents named in one message; the rest are counted


class RatingError(Exception):
    """A method cannot rate these statistics (a fact about the data or the solver, not a bug)."""

    def __init__(self, message: str, agents: Iterable[int] = ()):
        self.template = message
        self.agents = [int(a) for a in agents]
        super().__init__(self.named(None))

    def named(self, names: Sequence[str] | None) -> str:
        """The message with `{agents}` replaced by the agents' names (or their ids without names)."""
        shown = [str(a) if names is None else names[a] for a in self.agents[:SHOWN]]
        if len(self.agents) > SHOWN:
            shown.append(f"and {len(self.agents) - SHOWN} more")
        return self.template.replace("{agents}", ", ".join(shown))


class ConvergenceError(RatingError, RuntimeError):
    """An iterative fit used up `max_iter` before its convergence test passed."""


class NoEstimate(RatingError, ValueError):
    """The maximum-likelihood estimate does not exist for these data."""
