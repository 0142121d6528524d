"""Fixtures for the trainer integrations: one small executor shared by the tests, an
executor that always fails (our fault), a fake Assay server on ``httpx.MockTransport``, and
a real ``assay serve`` (a subprocess on a free port, started as a user would)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from assay import LocalExecutor, Runner
from assay.executor import Execution, InMemoryBackend, Job
from serve_helpers import served

from .helpers import FakeServer


@pytest.fixture(scope="session")
def executor(runner: Runner) -> Iterator[LocalExecutor]:
    with LocalExecutor(runner, slots=2) as ex:
        yield ex


@pytest.fixture
def broken_executor() -> Iterator[LocalExecutor]:
    """An executor whose every job hits an infrastructure failure (our fault)."""

    def fail(job: Job) -> Execution:
        return Execution("sandbox_error", None, "fork server died")

    with LocalExecutor(backend=InMemoryBackend(fail), slots=1, retries=0, cache=False) as ex:
        yield ex


@pytest.fixture
def server(executor: LocalExecutor) -> FakeServer:
    return FakeServer(executor)


@pytest.fixture
def transport(server: FakeServer) -> httpx.MockTransport:
    return httpx.MockTransport(server)


@pytest.fixture(scope="session")
def serve_url() -> Iterator[str]:
    """A real ``assay serve`` without tokens (``serve_helpers``: its log in a file)."""
    with served() as (url, _pid):
        yield url
