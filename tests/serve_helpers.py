"""A real ``assay serve`` for the tests: a subprocess started as a user would start it."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(*args: str, env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``assay serve`` with ``args``, its output in ``log`` (a pipe nobody reads would fill
    with the service's log lines and stall it)."""
    argv = [sys.executable, "-c", "from assay.cli import main; main()", "serve", *args]
    with log.open("wb") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=dict(env))


@contextmanager
def assay_serve(*args: str, env: Mapping[str, str], log: Path) -> Iterator[str]:
    """A running ``assay serve`` on a free loopback port (``args`` added): its base URL,
    once ``/readyz`` answers; stopped as by Ctrl-C afterwards."""
    port = free_port()
    proc = start("--port", str(port), *args, env=env, log=log)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(base + "/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"assay serve did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)
        yield base
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
