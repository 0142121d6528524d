"""A real ``assay serve`` for the tests: a subprocess on a free loopback port, started as a
user would start it (shared by tests/server, tests/integrations and tests/security), and
figures of its process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
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
def _running(
    args: tuple[str, ...], env: Mapping[str, str], log: Path
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    proc = start("--port", str(port), *args, env=env, log=log)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(base + "/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"assay serve did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)
        yield base, proc
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def assay_serve(*args: str, env: Mapping[str, str], log: Path) -> Iterator[str]:
    """A running ``assay serve`` (``args`` added): its base URL, once ``/readyz``
    answers; stopped as by Ctrl-C afterwards."""
    with _running(args, env, log) as (base, _proc):
        yield base


@contextmanager
def served(*args: str, env: dict[str, str] | None = None) -> Iterator[tuple[str, int]]:
    """A running ``assay serve`` without tokens (``env`` added to the environment): its
    URL and pid; its log in a temporary file."""
    with tempfile.TemporaryDirectory(prefix="assay-serve-") as tmp:
        full = {**os.environ, "ASSAY_API_TOKEN": "", **(env or {})}
        with _running(args, full, Path(tmp) / "serve.log") as (base, proc):
            yield base, proc.pid


def status_kib(pid: int, key: str) -> int:
    """A ``/proc/<pid>/status`` figure in KiB (``VmRSS``, ``VmHWM``: the peak)."""
    with open(f"/proc/{pid}/status") as fh:
        line = next(x for x in fh if x.startswith(key + ":"))
    return int(line.split()[1])
