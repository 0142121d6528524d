"""``assay serve`` in its own process, started as a user would, for tests of the clients
and adapters that talk to a real service: bound to 127.0.0.1 on a free port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def assay_serve(*args: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """Start ``assay serve --port <free> *args``; yields its base URL once /healthz answers,
    and stops it (SIGINT, as Ctrl-C would) afterwards."""
    port = free_port()
    argv = [sys.executable, "-c", "from assay.cli import main; main()", "serve"]
    proc = subprocess.Popen(
        [*argv, "--host", "127.0.0.1", "--port", str(port), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "ASSAY_API_TOKEN": "", **(env or {})},
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
