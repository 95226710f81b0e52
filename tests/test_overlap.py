"""Stages of ingest on threads: items in order, errors raised where the next stage waits,
a stage that stops early stops the one feeding it."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from pipeline.cancellation import exit_on_sigterm
from pipeline.overlap import Behind, read_ahead


def test_read_ahead_yields_every_item_in_order_and_raises_the_producers_error():
    assert list(read_ahead(iter(range(1_000)))) == list(range(1_000))

    def failing():
        yield 1
        yield 2
        raise ValueError("row 3 is bad")

    got = []
    with pytest.raises(ValueError, match="row 3 is bad"):
        for item in read_ahead(failing()):
            got.append(item)
    assert got == [1, 2]


def test_read_ahead_stops_and_closes_its_source_when_the_consumer_stops():
    produced, closed = [], threading.Event()

    def source():
        try:
            for i in range(1_000_000):
                produced.append(i)
                yield i
        finally:
            closed.set()

    ahead = read_ahead(source(), depth=2)
    assert next(ahead) == 0
    ahead.close()  # the consumer gives up (a refused file)
    assert closed.is_set() and len(produced) <= 4
    assert not [t for t in threading.enumerate() if t.name == "vase-read-ahead"]


def test_behind_consumes_in_order_on_another_thread_and_reports_its_first_error():
    seen, threads = [], set()

    def consume(item):
        threads.add(threading.get_ident())
        seen.append(item)

    behind = Behind(consume)
    for i in range(500):
        behind.put(i)
    behind.finish()
    assert seen == list(range(500)) and threading.get_ident() not in threads

    def bad(item):
        if item == 3:
            raise OSError("disk full")

    behind = Behind(bad)
    with pytest.raises(OSError, match="disk full"):
        for i in range(100):
            behind.put(i)
        behind.finish()
    behind.cancel()  # after an error, as ingest does: nothing left running
    assert not [t for t in threading.enumerate() if t.name == "vase-write-behind"]


def test_cancel_drops_what_waits_and_joins():
    started, release, seen = threading.Event(), threading.Event(), []

    def slow(item):
        started.set()
        release.wait(5)
        seen.append(item)

    behind = Behind(slow, depth=1)
    behind.put(0)
    started.wait(5)
    behind.put(1)  # waits in the queue
    threading.Timer(0.2, release.set).start()  # the item being consumed finishes after the cancel
    behind.cancel()
    assert seen == [0]


def test_sigterm_leaves_at_once_while_the_reader_is_deep_in_a_long_read():
    """The reader thread may be in one long read (skipping a line of gigabytes) that never looks at
    the consumer: a signal ends the process without waiting for it."""

    def long_read():
        yield 1
        time.sleep(30)
        yield 2

    start = time.monotonic()
    with pytest.raises(SystemExit) as stopped, exit_on_sigterm():
        for _ in read_ahead(long_read()):
            threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
    assert stopped.value.code == 143
    assert time.monotonic() - start < 10  # not the 30 s of the read
