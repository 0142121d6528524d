"""Live servers for the HTTP tests: uvicorn in a thread on a free port, httpx as the client."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from server_helpers import Live, live

from assay.executor import LocalExecutor
from assay.server import Settings, create_app
from assay.telemetry import MemoryWriter


@pytest.fixture(scope="session")
def sandbox_executor() -> Iterator[LocalExecutor]:
    with LocalExecutor(slots=2, records=MemoryWriter()) as ex:
        yield ex


@pytest.fixture(scope="session")
def server(sandbox_executor: LocalExecutor) -> Iterator[Live]:
    """The real thing: sandboxes behind a live uvicorn."""
    settings = Settings(max_code_bytes=64 * 1024, max_files=4, max_time_s=10, max_memory_mb=2048)
    with live(create_app(sandbox_executor, settings=settings)) as srv:
        yield srv


@pytest.fixture
def client(server: Live) -> Iterator[httpx.Client]:
    with server.client() as c:
        yield c
