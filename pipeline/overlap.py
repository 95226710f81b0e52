"""Stages of ingest overlapped on threads: the next chunk of a file is parsed while the current one
is validated (`pipeline.logs.read_batches`), the batch before is checked for duplicates and
encoded, and the one before that is partitioned and written (`pipeline.store.store`).

Each stage still handles its batches one at a time and in file order, so the stored bytes are
those of a sequential run; only the stages run side by side. It pays because the work of each
stage is inside pyarrow, polars and numpy, which release the GIL. Queues hold at most `DEPTH`
batches between two stages, so memory stays bounded (a few batches, whatever the file's size).
An error in a stage is raised where the next stage waits for it; a stage that stops early (a
refused file) stops the thread feeding it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

DEPTH = 1  # batches waiting between two stages
_END = object()


class _Failed:
    def __init__(self, error: BaseException):
        self.error = error


def _put(items: queue.Queue, item: object, stop: threading.Event) -> bool:
    """Put unless told to stop; whether it was put."""
    while not stop.is_set():
        try:
            items.put(item, timeout=0.1)
            return True
        except queue.Full:
            continue
    return False


def read_ahead(batches: Iterator[T], depth: int = DEPTH) -> Iterator[T]:
    """The items of `batches`, produced on a thread up to `depth` items ahead of the consumer."""
    items: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in batches:
                if not _put(items, item, stop):
                    return
            _put(items, _END, stop)
        except BaseException as exc:  # noqa: BLE001 (handed to the consumer, which decides)
            _put(items, _Failed(exc), stop)
        finally:
            close = getattr(batches, "close", None)
            if stop.is_set() and close is not None:
                close()

    thread = threading.Thread(target=produce, name="vase-read-ahead", daemon=True)
    thread.start()
    leaving = False
    try:
        while True:
            item = items.get()
            if item is _END:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item
    except (SystemExit, KeyboardInterrupt):  # SIGTERM (`pipeline.cancellation.exit_on_sigterm`) or Ctrl-C
        leaving = True
        raise
    finally:
        stop.set()
        if not leaving:  # the process is leaving, and the reader with it (a daemon thread): not waited for, as
            thread.join()  # it may be deep in a long read (skipping a line of gigabytes) before it looks at `stop`


class Behind(Generic[T]):
    """`consume(item)` for each item given to `put`, on a thread, in order; `finish` waits for
    all of them and raises the first error of `consume`, `cancel` drops what is waiting."""

    def __init__(self, consume: Callable[[T], None], depth: int = DEPTH):
        self._consume = consume
        self._items: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="vase-write-behind", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._items.get()
            if item is _END:
                return
            if self._error is None and not self._stop.is_set():
                try:
                    self._consume(item)
                except BaseException as exc:  # noqa: BLE001 (raised in the caller's thread)
                    self._error = exc

    def put(self, item: T) -> None:
        if self._error is not None:
            raise self._error
        _put(self._items, item, self._stop)

    def finish(self) -> None:
        self._items.put(_END)
        self._thread.join()
        if self._error is not None:
            raise self._error

    def cancel(self) -> None:
        self._stop.set()
        while True:  # make room for the end marker; the items dropped are never consumed
            try:
                self._items.get_nowait()
            except queue.Empty:
                break
        self._items.put(_END)
        self._thread.join()
