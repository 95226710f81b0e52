"""Progress bars for the command line: transient, on stderr, and only on a terminal.

Off when stderr is not a terminal (tests, logs, cron), so captured output stays clean; on a
terminal the bar disappears when done, leaving the command's results.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from pipeline.terminal import visible


@contextmanager
def progress_bar(description: str, total: int) -> Iterator[Callable[..., None]]:
    """Yields `advance(steps=1, label=None)`: move the bar on, naming what is being done."""
    console = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[label]}", style="dim", markup=False), console=console, transient=True,
                  disable=not sys.stderr.isatty()) as progress:
        task = progress.add_task(description, total=total, label="")

        def advance(steps: int = 1, label: str | None = None) -> None:
            progress.update(task, advance=steps, **({"label": visible(label)} if label is not None else {}))

        yield advance
