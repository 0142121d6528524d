from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _redis_server import RedisServer, running


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A fresh redis-server per test (own port, own directory), with a password."""
    with running(tmp_path) as server:
        yield server
