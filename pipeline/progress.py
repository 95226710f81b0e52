"""Progress on the command line: transient bars on stderr, and only on a terminal.

The library announces its long stages (`stage`: files ingested, reduction units, bootstrap
rounds, backtest splits) without knowing who watches; a command shows them by running inside
`progress_display`, which draws a bar per stage while it runs when stderr is a terminal. Off a
terminal (tests, pipes, logs, cron) nothing is drawn and a stage costs a function call per step,
so captured output stays clean; on a terminal a bar disappears when its stage is done.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from pipeline.terminal import visible

Advance = Callable[..., None]  # advance(steps=1, label=None)
_display: ContextVar[Callable[[str, int], AbstractContextManager[Advance]] | None] = ContextVar("vase progress display", default=None)


def _ignore(steps: int = 1, label: str | None = None) -> None:
    pass


def progress_shown() -> bool:
    """Whether stages begun here are drawn (the command shows progress, on a terminal)."""
    return _display.get() is not None


@contextmanager
def stage(description: str, total: int) -> Iterator[Advance]:
    """A stage of the library's work of `total` steps; yields `advance(steps=1, label=None)`. Shown
    as a bar while it runs inside `progress_display` on a terminal; otherwise `advance` does nothing.
    `advance` may be called from other threads (rich's progress is thread-safe)."""
    display = _display.get()
    if display is None:
        yield _ignore
        return
    with display(description, total) as advance:
        yield advance


@contextmanager
def local_tasks_advance(advance: Advance, steps: Mapping[object, int]) -> Iterator[None]:
    """While Dask's local scheduler runs in the block, `advance(steps[key])` as each task of `steps`
    (keys of Delayed objects) ends: a stage's progress through a graph run on local threads."""
    if advance is _ignore:
        yield
        return
    from dask.callbacks import Callback

    def ended(key, result, graph, state, worker_id) -> None:
        if key in steps:
            advance(steps[key])

    with Callback(posttask=ended):
        yield


@contextmanager
def progress_display() -> Iterator[None]:
    """Draw the stages begun in the block (in this thread and the context it passes on) on stderr,
    one transient bar each, when stderr is a terminal."""
    if not sys.stderr.isatty():
        yield
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[label]}", style="dim", markup=False), console=Console(stderr=True),
                  transient=True) as progress:

        @contextmanager
        def bar(description: str, total: int) -> Iterator[Advance]:
            task = progress.add_task(description, total=total, label="")

            def advance(steps: int = 1, label: str | None = None) -> None:
                if label is None:
                    progress.update(task, advance=steps)
                else:  # drawn now: a stage that ends before the next refresh still shows what it was doing
                    progress.update(task, advance=steps, label=visible(label), refresh=True)

            try:
                yield advance
            finally:
                progress.remove_task(task)

        with watching(bar):
            yield


@contextmanager
def watching(display: Callable[[str, int], AbstractContextManager[Advance]]) -> Iterator[None]:
    """Send the stages begun in the block to `display(description, total)`, a context manager
    yielding the stage's `advance` (`progress_display` draws bars; a test may record them)."""
    token = _display.set(display)
    try:
        yield
    finally:
        _display.reset(token)


@contextmanager
def progress_bar(description: str, total: int) -> Iterator[Advance]:
    """One bar for the block (a command's own loop, e.g. the nightly's boards), on a terminal only."""
    with progress_display(), stage(description, total) as advance:
        yield advance
