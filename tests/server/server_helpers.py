"""Helpers of the HTTP tests: uvicorn in a thread on a free port, in-memory executors."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import uvicorn
from fastapi import FastAPI

from assay.executor import Execution, InMemoryBackend, Job, LocalExecutor, RunJob
from assay.scheduler import RuntimeEstimator
from assay.telemetry import MemoryWriter
from assay.types import ExecResult
from serve_helpers import free_port


class Live:
    def __init__(self, app: FastAPI, server: uvicorn.Server, url: str) -> None:
        self.app = app
        self.server = server
        self.url = url

    def client(self, **kw: object) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60, **kw)  # type: ignore[arg-type]


@contextmanager
def live(app: FastAPI) -> Iterator[Live]:
    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=10
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("server did not start")
        time.sleep(0.02)
    try:
        yield Live(app, server, f"http://127.0.0.1:{port}")
    finally:
        server.should_exit = True
        thread.join(30)


def fake_run(fn: Callable[[Job], None] | None = None) -> Callable[[Job], Execution]:
    """An in-memory backend function: echoes the program's code as its stdout."""

    def run(job: Job) -> Execution:
        if fn is not None:
            fn(job)
        assert isinstance(job, RunJob)
        code = job.code.encode() if isinstance(job.code, str) else job.code
        r = ExecResult("ok", 0, stdout=code)
        return Execution("ok", None, "", result=r)

    return run


def memory_executor(fn: Callable[[Job], Execution], **kw: object) -> LocalExecutor:
    kw.setdefault("slots", 1)
    kw.setdefault("records", MemoryWriter())
    kw.setdefault("estimator", RuntimeEstimator())
    return LocalExecutor(backend=InMemoryBackend(fn), **kw)  # type: ignore[arg-type]
