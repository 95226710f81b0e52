"""Fixtures of the store's tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def memory_url(tmp_path):
    """A folder's URL on fsspec's in-memory filesystem (object storage within the test's process, no
    server), of this test alone, emptied after it."""
    import fsspec

    url = f"memory://vase-{tmp_path.name}"
    yield url
    fs = fsspec.filesystem("memory")
    if fs.exists(url):
        fs.rm(url, recursive=True)
