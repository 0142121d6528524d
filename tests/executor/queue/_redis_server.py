"""A real ``redis-server`` (Debian's package) on 127.0.0.1, in a temporary directory, for the
queue fleet's tests and benchmark."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """``redis-server`` on a free loopback port; ``url`` carries ``password`` when given."""

    def __init__(self, workdir: Path, password: str | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise FileNotFoundError("redis-server (Debian package redis-server) is not installed")
        self.password = password
        for _ in range(5):  # another process may take the free port before redis binds it
            self.port = free_port()
            args = [binary, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(workdir)]
            args += ["--save", "", "--appendonly", "no", "--daemonize", "no"]
            if password is not None:
                args += ["--requirepass", password]
            self.proc = subprocess.Popen(
                args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=workdir
            )
            if self._ready():
                return
            self.proc.kill()
            self.proc.wait()
        raise RuntimeError("redis-server did not start")

    def _ready(self) -> bool:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                    s.sendall(b"PING\r\n")
                    reply = s.recv(64)
                    if reply.startswith((b"+PONG", b"-NOAUTH")):
                        return True
            except OSError:
                pass
            time.sleep(0.02)
        return False

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


SRC = Path(__file__).resolve().parents[3] / "src"


@contextmanager
def running(tmp_path: Path) -> Iterator[RedisServer]:
    """A fresh redis-server (own port, own directory, a password) for one test, or the test
    skipped naming the package that is missing."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian package redis-server)")
    pytest.importorskip("redis", reason="redis-py is not installed (pip install 'assay[queue]')")
    server = RedisServer(tmp_path, password="fleet-token")
    try:
        yield server
    finally:
        server.stop()


def start_worker(
    url: str,
    state_dir: Path,
    *,
    name: str,
    backend: str = "sleeping",
    slots: int = 1,
    prefetch: int = 0,
    visibility_s: float = 1.0,
) -> subprocess.Popen[bytes]:
    """``assay worker`` in its own process, with a backend of :mod:`_fleet_backends`."""
    import os
    import sys

    env = {
        **os.environ,
        "PYTHONPATH": f"{SRC}{os.pathsep}{Path(__file__).parent}",
        "ASSAY_STATE_DIR": str(state_dir),
        "ASSAY_QUEUE_URL": url,
        "ASSAY_LOG_LEVEL": "WARNING",
    }
    args = [sys.executable, "-m", "assay.cli", "worker", "--name", name]
    args += ["--backend", f"_fleet_backends:{backend}", "--slots", str(slots)]
    args += ["--prefetch", str(prefetch), "--visibility", str(visibility_s)]
    return subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL)
