"""Stopping a run: SIGTERM ends a command within seconds, wherever it stands (docs/architecture.md, "Cancellation").

One process-wide flag, `STOP`, set by the command line's SIGTERM handler (`exit_on_sigterm`), which
also raises SystemExit(143) in the main thread, so the `with` blocks there release what they hold: a
temporary store is deleted, a local Dask cluster closed (its workers killed at once, see
`pipeline.runtime.local_cluster`). Python code stops at its next bytecode; native code never sees a
signal, so what runs long in it is made to stop, or left behind:
- a call that releases the GIL and runs long (a HiGHS solve) goes through `run_native`: it runs on a
  helper thread while the caller waits where a signal reaches it (the main thread) or where it looks
  at `STOP` (any other thread), and the solver itself is asked to stop through its interrupt
  callbacks (`pipeline.methods.numerics.highs`);
- a native loop (numba) holds the signal until it returns: one that runs for seconds in a call is to be
  cut into chunks with `raise_if_stopped()` between them;
- what still cannot stop at once (a MIP in its root LP, where HiGHS looks at its callbacks seconds
  apart; a thread of a local pool inside a chunk) is not waited for: once the main thread has
  unwound, the command leaves with `exit_now` instead of joining those threads.
This module imports only the standard library: the command line loads it before anything else.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

T = TypeVar("T")

STOP = threading.Event()
STOPPED = 128 + signal.SIGTERM  # the exit status of a command stopped by SIGTERM (143)
POLL = 0.1  # seconds between the looks at STOP of a thread that no signal reaches


def raise_if_stopped() -> None:
    """SystemExit(143) once the run is being stopped: for long loops, between their chunks."""
    if STOP.is_set():
        raise SystemExit(STOPPED)


@contextlib.contextmanager
def exit_on_sigterm() -> Iterator[None]:
    """While the block runs, SIGTERM sets `STOP` and raises SystemExit(143) in the main thread (the handler
    before is restored after). Outside the main thread no handler can be set: the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        STOP.set()
        raise SystemExit(128 + signum)

    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def run_native(call: Callable[[], T], name: str = "vase-native") -> T:
    """`call()`, run on a helper thread while this thread waits where it can be stopped: the main thread
    takes SIGTERM's SystemExit at once, another thread raises it itself once `STOP` is set. The helper,
    left running then, is a daemon: the process does not wait for it (`exit_now`). `call` must release
    the GIL for the wait to be worth anything (HiGHS's `run` does)."""
    outcome: dict[str, object] = {}

    def target() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # noqa: BLE001 (raised again in the caller)
            outcome["error"] = exc

    helper = threading.Thread(target=target, name=name, daemon=True)
    helper.start()
    while helper.is_alive():
        helper.join(POLL)  # a signal interrupts the wait of the main thread
        raise_if_stopped()
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


def exit_now(status: int = STOPPED) -> None:
    """Leave at once with `status` after a stop has unwound the main thread: the output flushed, but no
    wait for threads still inside native code (a pool's thread in a solve; joining it could take minutes)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)
