"""Helpers of the HTTP tests: uvicorn in a thread on a free port, in-memory executors."""

from __future__ import annotations

import socket
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


@contextmanager
def served(*args: str, env: dict[str, str] | None = None) -> Iterator[tuple[str, int]]:
    """A real ``assay serve`` subprocess on a free loopback port, as a user starts it:
    its URL and pid, stopped with SIGINT (killed if it does not stop in 30 s)."""
    import os
    import signal
    import subprocess
    import sys

    port = free_port()
    cmd = [sys.executable, "-c", "from assay.cli import main; main()", "serve"]
    proc = subprocess.Popen(
        [*cmd, "--host", "127.0.0.1", "--port", str(port), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "ASSAY_API_TOKEN": "", **(env or {})},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise RuntimeError(f"assay serve did not start: {err[-2000:]}")
            time.sleep(0.2)
        yield url, proc.pid
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def status_kib(pid: int, key: str) -> int:
    """A ``/proc/<pid>/status`` figure in KiB (``VmRSS``, ``VmHWM``: the peak)."""
    with open(f"/proc/{pid}/status") as fh:
        line = next(x for x in fh if x.startswith(key + ":"))
    return int(line.split()[1])
