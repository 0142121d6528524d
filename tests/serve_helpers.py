"""A real ``assay serve`` for tests, started as a user starts it (a subprocess on a free
loopback port), and figures of its process (shared by tests/server and tests/integrations)."""

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def served(*args: str, env: dict[str, str] | None = None) -> Iterator[tuple[str, int]]:
    """A real ``assay serve`` subprocess on a free loopback port, as a user starts it:
    its URL and pid, stopped with SIGINT (killed if it does not stop in 30 s)."""
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
