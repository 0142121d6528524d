"""The gVisor tier's plumbing on the host side: the exec server's program text, the
length-prefixed JSON channel to it, and the relays that carry a run's extra fds."""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import struct
import time
from typing import Any

from ._zygote import readable

_HERE = os.path.dirname(os.path.abspath(__file__))
_PYRUN = os.path.join(_HERE, "_inside", "pyrun.py")
_SERVER = os.path.join(_HERE, "_gvserver.py")


def server_program() -> str:
    """The container's ``python -c`` text: ``pyrun`` as a module, then the server."""
    with open(_PYRUN, encoding="utf-8") as fh:
        pyrun = fh.read()
    with open(_SERVER, encoding="utf-8") as fh:
        server = fh.read()
    return (
        "# assay gVisor server\nimport types as _types\n"
        "pyrun = _types.ModuleType('pyrun')\n"
        f"exec(compile({pyrun!r}, '/assay/pyrun.py', 'exec'), pyrun.__dict__)\n"
        "server = _types.ModuleType('server')\n"
        f"exec(compile({server!r}, '/assay/server.py', 'exec'), server.__dict__)\n"
        "server.pyrun = pyrun\nserver.main()\n"
    )


def relay(conn: socket.socket, fd: int) -> None:
    """Copy bytes both ways between ``conn`` (the exec server's connection, which the
    program holds as fd 3, 4, ...) and the caller's socket ``fd`` until both are done;
    then close both (the caller passed ``fd``'s ownership with the request)."""
    theirs = socket.socket(fileno=os.dup(fd))
    pairs = {conn.fileno(): (conn, theirs), theirs.fileno(): (theirs, conn)}
    open_ends = set(pairs)
    try:
        while open_ends:
            ready, _, _ = select.select(list(open_ends), [], [], 1.0)
            for r in ready:
                src, dst = pairs[r]
                try:
                    data = src.recv(1 << 16)
                except OSError:
                    data = b""
                if not data:
                    open_ends.discard(r)
                    with contextlib.suppress(OSError):
                        dst.shutdown(socket.SHUT_WR)
                    continue
                try:
                    dst.sendall(data)
                except OSError:
                    open_ends.clear()
    finally:
        conn.close()
        theirs.close()
        with contextlib.suppress(OSError):
            os.close(fd)


def send(fd: int, msg: dict[str, Any]) -> None:
    data = json.dumps(msg, separators=(",", ":")).encode()
    data = struct.pack("<I", len(data)) + data
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def recv(fd: int, deadline: float) -> dict[str, Any] | None:
    buf = b""
    need = 4
    length: int | None = None
    while True:
        while len(buf) < need:
            if not readable(fd, max(0.0, deadline - time.monotonic())):
                return None
            chunk = os.read(fd, max(need - len(buf), 1 << 16))
            if not chunk:
                return None
            buf += chunk
        if length is None:
            (length,) = struct.unpack("<I", buf[:4])
            buf = buf[4:]
            need = length
            continue
        answer: dict[str, Any] = json.loads(buf[:length])
        return answer


class Stopped(Exception):
    """The caller's stop fd fired during a run."""


def wait_answer(rfd: int, stop_fd: int, deadline: float) -> bool:
    """Wait until ``rfd`` is readable (True) or ``stop_fd`` is, or the deadline passes."""
    poller = select.poll()
    poller.register(rfd, select.POLLIN)
    poller.register(stop_fd, select.POLLIN)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return True  # _recv then reports the missed deadline
        for fd, _mask in poller.poll(int(left * 1000) + 1):
            if fd == stop_fd:
                return False
            if fd == rfd:
                return True
