"""Stages of ingest on threads: items in order, errors raised where the next stage waits,
a stage that stops early stops the one feeding it."""

from __future__ import annotations

import threading

import pytest

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
