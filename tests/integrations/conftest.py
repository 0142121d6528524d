"""Fixtures for the trainer integrations: one small executor shared by the tests, an
executor that always fails (our fault), a fake Assay server on ``httpx.MockTransport``, and
a real ``assay serve`` (a subprocess on a free port, started as a user would)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from assay import LocalExecutor, Runner
from assay.executor import Execution, InMemoryBackend, Job

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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def serve_url() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from assay.cli import main; main()", "serve", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "ASSAY_API_TOKEN": ""},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                err = proc.stderr.read().decode() if proc.stderr else ""
                pytest.fail(f"assay serve did not start: {err[-2000:]}")
            time.sleep(0.2)
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
