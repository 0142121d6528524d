"""Messages between the supervisor, the fork server and sandboxed children.

Control messages are JSON over SOCK_SEQPACKET (one message = one record, so a record can
never be split or merged) with file descriptors attached as SCM_RIGHTS. Bulk data (files,
stdin) travels in memfds so that the fork server never holds a run's data in its memory:
every forked child would otherwise inherit every earlier run's inputs.
"""

from __future__ import annotations

import array
import fcntl
import json
import os
import socket
from typing import Any

MAX_MSG = 1 << 16
MAX_FDS = 32
_CMSG_SPACE = socket.CMSG_SPACE(MAX_FDS * array.array("i").itemsize)
# Plain ints: combining the socket module's flag enums costs microseconds per message.
_CLOEXEC = int(socket.MSG_CMSG_CLOEXEC)
_TRUNCATED = int(socket.MSG_TRUNC) | int(socket.MSG_CTRUNC)
DONTWAIT = int(socket.MSG_DONTWAIT)

# The common orders and answers, as the exact bytes ``send`` would produce for them, so the
# slot's init can match them without parsing JSON (every page it touches after a fork is
# copied; see slot.py).
#: Arm orders by (launcher, net, idle): ``net`` for a run with loopback networking (``lo``
#: up, IP sockets allowed); ``idle``: after the run the order is for, the slot's init may
#: do its work at idle priority (launcher.c's ``assay_background_idle``).
ARM = {
    (launcher, net, idle): (
        b'{"op":"arm","launcher":%s%s%s}'
        % (
            b"true" if launcher else b"false",
            b',"net":true' if net else b"",
            b',"idle":true' if idle else b"",
        )
    )
    for launcher in (False, True)
    for net in (False, True)
    for idle in (False, True)
}
ARMED = b'{"kind":"armed"}'
KILL = b'{"op":"kill"}'
#: The order that gives a slot's init the pages its calibration run wrote (see
#: ``pyrun.CALIBRATE``), as "address bytes" lines after it:
#: each later program process of the slot faults them in before it says "armed".
PREFAULT = b"prefault\n"


def send(sock: socket.socket, obj: dict[str, Any], fds: list[int] | tuple[int, ...] = ()) -> None:
    send_raw(sock, json.dumps(obj, separators=(",", ":")).encode(), fds)


def recv(sock: socket.socket, flags: int = 0) -> tuple[dict[str, Any] | None, list[int]]:
    """Receive one message; ``(None, [])`` on EOF. Received fds are close-on-exec."""
    data, fds, truncated = _recvmsg(sock, flags)
    if truncated:
        raise ValueError("truncated control message")
    # Decoded first: ``json.loads`` of bytes guesses their encoding (UTF-8 is all we send).
    return (json.loads(data.decode()) if data else None), fds


def send_raw(sock: socket.socket, data: bytes, fds: list[int] | tuple[int, ...] = ()) -> None:
    if fds:
        sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    else:
        sock.sendmsg([data])


def recv_raw(sock: socket.socket, flags: int = 0) -> tuple[bytes, list[int]]:
    """One message, unparsed, and its fds (close-on-exec); ``b""`` at EOF or if truncated."""
    data, fds, _truncated = _recvmsg(sock, flags)
    return data, fds


def _recvmsg(sock: socket.socket, flags: int) -> tuple[bytes, list[int], bool]:
    """``(data, fds, truncated)``; at EOF or truncation no fd is kept open (and data is
    ``b""``)."""
    fds = array.array("i")
    data, anc, got, _ = sock.recvmsg(MAX_MSG, _CMSG_SPACE, _CLOEXEC | flags)
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - (len(payload) % fds.itemsize)])
    truncated = bool(data) and bool(got & _TRUNCATED)
    if not data or truncated:
        for fd in fds:
            os.close(fd)
        return b"", [], truncated
    return data, list(fds), False


def unpack_files(fd: int) -> list[tuple[str, bytes, int]]:
    """The ``(path, content, mode)`` entries of a collected-files archive (a JSON index line,
    then the contents; see ``rootfs.collect_files``)."""
    os.lseek(fd, 0, os.SEEK_SET)
    with os.fdopen(os.dup(fd), "rb") as fh:
        line = fh.readline()
        if not line:
            return []
        head = json.loads(fh.read(int(line)))
        out = []
        for entry in head:
            out.append((entry["path"], fh.read(entry["size"]), entry["mode"]))
        return out


def memfd_with(data: bytes, name: str = "assay") -> int:
    """A sealed-by-convention memfd holding ``data``, positioned at 0."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    write_at_start(fd, data)
    return fd


_SEALS = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL


def sealed_memfd(data: bytes, name: str) -> int:
    """A memfd holding ``data``, positioned at 0, that nobody can change any more (sealed)."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        write_at_start(fd, data)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_at_start(fd: int, data: bytes) -> None:
    """Write ``data`` at the start of the empty file ``fd``, leaving its offset at 0
    (``pwrite``: no seek back, a system call fewer per file on every run's path)."""
    view = memoryview(data)
    done = 0
    while done < len(view):
        done += os.pwrite(fd, view[done:], done)


def read_all(fd: int) -> bytes:
    """Everything ``fd`` (a pipe) holds now, without blocking; closes ``fd``."""
    os.set_blocking(fd, False)
    chunks = []
    try:
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    except BlockingIOError:
        pass
    finally:
        os.close(fd)
    return b"".join(chunks)
