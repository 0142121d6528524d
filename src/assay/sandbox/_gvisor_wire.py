"""The gVisor tier's plumbing on the host side: the exec server's program text, the
length-prefixed JSON channel to it, and the relays that carry a run's extra fds."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import socket
import stat
import struct
import time
from typing import Any

from ._zygote import readable

_HERE = os.path.dirname(os.path.abspath(__file__))
_PYRUN = os.path.join(_HERE, "_inside", "pyrun.py")
_PYEXIT = os.path.join(_HERE, "_inside", "pyexit.py")
_SERVER = os.path.join(_HERE, "_gvserver.py")
_KERNEL = os.path.join(_HERE, "_gvkernel.py")
_STATUS = os.path.join(_HERE, "_inside", "status.py")


def server_program() -> str:
    """The container's ``python -c`` text: ``pyrun`` (and the ``pyexit`` it imports, as
    ``assay_pyexit``) as a module, then the server."""
    with open(_PYRUN, encoding="utf-8") as fh:
        pyrun = fh.read()
    with open(_PYEXIT, encoding="utf-8") as fh:
        pyexit = fh.read()
    with open(_SERVER, encoding="utf-8") as fh:
        server = fh.read()
    with open(_KERNEL, encoding="utf-8") as fh:
        kernel = fh.read()
    with open(_STATUS, encoding="utf-8") as fh:
        status = fh.read()
    return (
        "# assay gVisor server\nimport sys as _sys\nimport types as _types\n"
        "_pyexit = _sys.modules['assay_pyexit'] = _types.ModuleType('assay_pyexit')\n"
        f"exec(compile({pyexit!r}, '<assay-gvisor-pyexit>', 'exec'), _pyexit.__dict__)\n"
        "pyrun = _types.ModuleType('pyrun')\n"
        f"exec(compile({pyrun!r}, '<assay-gvisor-pyrun>', 'exec'), pyrun.__dict__)\n"
        "gvkernel = _types.ModuleType('gvkernel')\n"
        f"exec(compile({kernel!r}, '<assay-gvisor-kernel>', 'exec'), gvkernel.__dict__)\n"
        "runstatus = _types.ModuleType('runstatus')\n"
        f"exec(compile({status!r}, '<assay-gvisor-status>', 'exec'), runstatus.__dict__)\n"
        "server = _types.ModuleType('server')\n"
        f"exec(compile({server!r}, '<assay-gvisor-server>', 'exec'), server.__dict__)\n"
        "server.pyrun = pyrun\nserver.gvkernel = gvkernel\nserver.runstatus = runstatus\n"
        "server.main()\n"
    )


def _write_all(fd: int, data: bytes) -> bool:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        return False
    return True


def _shut_write(fd: int) -> None:
    """Half-close a socket ``fd`` (the peer reads EOF); nothing for a pipe, whose EOF comes
    when the relay closes it."""
    try:
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            return
    except OSError:
        return
    sock = socket.socket(fileno=os.dup(fd))
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    finally:
        sock.close()


def relay(conn: socket.socket, fd: int, over: int = -1) -> None:
    """Copy bytes between ``conn`` (the exec server's connection, which the program holds as
    fd 3, 4, ...) and the caller's ``fd`` until both directions are done, then close both
    (the caller passed ``fd``'s ownership with the request). ``fd`` may be a socket (both
    ways) or one end of a pipe (the one way its access mode allows). ``over`` (owned, closed
    here too) turns readable when the run is over: nothing more goes to the program then,
    and what it wrote is passed on to its end."""
    mode = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
    to_caller = mode != os.O_RDONLY  # what the program writes, the caller reads
    to_program = mode != os.O_WRONLY  # what the caller writes, the program reads
    cfd = conn.fileno()
    if not to_program:
        _shut_write(cfd)
    try:
        while to_caller or to_program:
            watch = ([cfd] if to_caller else []) + ([fd] if to_program else [])
            if to_program and over >= 0:
                watch.append(over)
            # poll, not select: the host's descriptors pass 1024 under load.
            poller = select.poll()
            for w in watch:
                poller.register(w, select.POLLIN)
            for r, _ in poller.poll(1000):
                if r == over:
                    if to_program:
                        to_program = False
                        _shut_write(cfd)
                    continue
                if r == fd and not to_program:
                    continue  # (the run ended in this same poll)
                try:
                    data = os.read(r, 1 << 16)
                except OSError:
                    data = b""
                if data and _write_all(fd if r == cfd else cfd, data):
                    continue
                if r == cfd:  # the program's side is done: the caller sees EOF
                    to_caller = False
                    _shut_write(fd)
                else:
                    to_program = False
                    _shut_write(cfd)
    finally:
        conn.close()
        for own in (fd, over):
            if own >= 0:
                with contextlib.suppress(OSError):
                    os.close(own)


def send(fd: int, msg: dict[str, Any]) -> None:
    data = json.dumps(msg, separators=(",", ":")).encode()
    data = struct.pack("<I", len(data)) + data
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def recv_bytes(fd: int, n: int, deadline: float) -> bytes | None:
    """Exactly ``n`` bytes from ``fd`` (never more: raw bytes follow some messages), or None
    at EOF or the deadline."""
    chunks, got = [], 0
    while got < n:
        if not readable(fd, max(0.0, deadline - time.monotonic())):
            return None
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    # One allocation of the result (as the default tier joins its output): a growing
    # bytearray and its copy would take three times the size, and fragment the heap.
    return b"".join(chunks)


def send_bytes(fd: int, data: bytes, deadline: float) -> bool:
    """Write all of ``data`` (False if the reader is gone or the deadline passes)."""
    view = memoryview(data)
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    while view:
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(int(left * 1000) + 1):
            return False
        try:
            view = view[os.write(fd, view[: 1 << 20]) :]
        except OSError:
            return False
    return True


def recv(fd: int, deadline: float) -> dict[str, Any] | None:
    head = recv_bytes(fd, 4, deadline)
    if head is None:
        return None
    (length,) = struct.unpack("<I", head)
    body = recv_bytes(fd, length, deadline)
    if body is None:
        return None
    answer: dict[str, Any] = json.loads(body)
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
