from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from _redis_server import RedisServer


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A fresh redis-server per test (own port, own directory), with a password."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian package redis-server)")
    pytest.importorskip("redis", reason="redis-py is not installed (pip install 'assay[queue]')")
    server = RedisServer(tmp_path, password="fleet-token")
    yield server
    server.stop()
