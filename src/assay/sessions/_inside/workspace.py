"""The session agent's workspace side (stdlib only): paths kept inside /work, the file and
tar requests, and the socket connection with the descriptors passed along a request.

Shipped in front of agent.py as one file (``sessions._agentfile``), in place of the
agent's import of it.
"""

from __future__ import annotations

import io
import os
import signal
import socket
import stat
import sys
from typing import Any

WORK = "/work"
#: tarfile's copy buffer (its default, 16 KiB, makes a 10 MiB file 640 Python-level copies).
COPY_BUF = 1 << 20


class Refused(Exception):
    """A request the agent will not carry out (the reply names why)."""


def inside(path: str, must_exist: bool = False) -> str:
    """``path`` (relative to /work, or absolute under it) resolved; refused if it, or a
    symlink on the way, leads out of /work."""
    if not isinstance(path, str) or "\x00" in path:
        raise Refused("path must be a string without NUL")
    full = os.path.normpath(os.path.join(WORK, path))
    if full != WORK and not full.startswith(WORK + "/"):
        raise Refused(f"path {path!r} leads out of {WORK}")
    real = os.path.realpath(full)
    if real != WORK and not real.startswith(WORK + "/"):
        raise Refused(f"path {path!r} leads out of {WORK} through a symlink")
    if must_exist and not os.path.lexists(full):
        raise Refused(f"no such file: {path!r}")
    return real


def take_fd(fds: list[int]) -> int:
    if not fds:
        raise Refused("this request needs a file descriptor passed with it")
    return fds.pop(0)


def tarfile_open(fileobj: Any, mode: str) -> Any:
    import tarfile  # imported when needed: the agent starts on every create

    # Stream modes ("|") write and read records of ``bufsize``; both sizes default to
    # 10-16 KiB, which makes a 10 MiB workspace about a thousand Python-level copies.
    opener: Any = tarfile.open  # (typeshed's overloads want the mode as a literal)
    if not mode.startswith("w"):
        return opener(fileobj=fileobj, mode=mode, bufsize=COPY_BUF, copybufsize=COPY_BUF)
    # Writing: no user and group names (tarfile looks each member's up in /etc/passwd and
    # /etc/group, which for the sandbox's uid finds nothing after reading both files whole:
    # two thirds of the time of a workspace of thousands of files), and GNU headers (a
    # sandbox uid does not fit ustar's field; pax would add a header block to every member).
    tarfile.pwd = tarfile.grp = None  # type: ignore[attr-defined]
    return opener(
        fileobj=fileobj,
        mode=mode,
        bufsize=COPY_BUF,
        copybufsize=COPY_BUF,
        format=tarfile.GNU_FORMAT,
    )


def workspace_op(
    op: object, req: dict[str, Any], payload: bytes, fds: list[int]
) -> dict[str, Any] | None:
    """Carry out a file or tar request; ``None`` if ``op`` is not one."""
    if op == "write":
        path = inside(req["path"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
        fd = os.open(path, flags, int(req.get("mode", 0o644)))
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        return {}
    if op == "read":
        path = inside(req["path"], must_exist=True)
        if not os.path.isfile(path):
            raise Refused(f"not a file: {req['path']!r}")
        with open(path, "rb") as fh:
            return {"_data": fh.read()}
    if op == "list":
        path = inside(req.get("dir") or ".", must_exist=True)
        entries = []
        for entry in sorted(os.scandir(path), key=lambda e: e.name):
            st = entry.stat(follow_symlinks=False)
            kind = (
                "dir"
                if stat.S_ISDIR(st.st_mode)
                else "symlink"
                if stat.S_ISLNK(st.st_mode)
                else "file"
            )
            entries.append({"name": entry.name, "type": kind, "size": st.st_size})
        return {"entries": entries}
    if op == "delete":
        path = inside(req["path"], must_exist=True)
        if path == WORK:
            raise Refused("the workspace itself cannot be deleted")
        if os.path.isdir(path) and not os.path.islink(path):
            import shutil  # imported when needed: the agent starts on every create

            shutil.rmtree(path)
        else:
            os.unlink(path)
        return {}
    if op == "tar":
        path = inside(req.get("dir") or ".", must_exist=True)
        buf = io.BytesIO()
        with tarfile_open(buf, "w:gz" if req.get("gzip") else "w") as tar:
            skip = set(req.get("exclude") or ())
            for name in sorted(os.listdir(path)):
                if name not in skip:
                    tar.add(os.path.join(path, name), arcname=name)
        return {"_data": buf.getbuffer()}
    if op == "untar":
        with tarfile_open(io.BytesIO(payload), "r") as tar:
            untar(tar, inside(req.get("dir") or "."))
        return {}
    if op == "read_range":  # a download where descriptors cannot be passed (gVisor)
        fd = os.open(inside(req["path"], must_exist=True), os.O_RDONLY | os.O_NOFOLLOW)
        try:
            return {"_data": os.pread(fd, min(int(req["length"]), 1 << 20), int(req["offset"]))}
        finally:
            os.close(fd)
    if op == "stat":
        path = inside(req["path"], must_exist=True)
        size, count = tree_size(path)
        kind = "dir" if os.path.isdir(path) else "file" if os.path.isfile(path) else "other"
        return {"type": kind, "size": size, "entries": count}
    if op in ("read_to", "tar_to"):  # a download: the bytes go into a pipe, never a reply
        before = signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # the reader may go away
        try:
            if op == "read_to":
                copy_file(inside(req["path"], must_exist=True), take_fd(fds))
            else:
                tar_to(
                    inside(req.get("dir") or ".", must_exist=True),
                    bool(req.get("gzip")),
                    take_fd(fds),
                )
        except BrokenPipeError:
            raise Refused("the reader stopped reading") from None
        finally:
            signal.signal(signal.SIGPIPE, before)
        return {}
    if op == "send_tree":  # fork: the tree goes straight into the child's agent
        # A child that stops reading is an EPIPE for this request, not a SIGPIPE that ends
        # the parent session.
        before = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        try:
            send_tree(inside(req.get("dir") or ".", must_exist=True), take_fd(fds))
        finally:
            signal.signal(signal.SIGPIPE, before)
        return {}
    if op == "receive_tree":
        receive_tree(inside(req.get("dir") or "."), take_fd(fds))
        return {}
    return None


def tree_size(path: str) -> tuple[int, int]:
    """Bytes of a regular file, or of the regular files under a directory (links not
    followed), and the entries: what a download of it holds, before headers."""
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        return (st.st_size if stat.S_ISREG(st.st_mode) else 0), 1
    total = entries = 0
    for top, dirs, names in os.walk(path):
        entries += len(dirs) + len(names)
        for name in names:
            try:
                st = os.lstat(os.path.join(top, name))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
    return total, entries


def copy_file(path: str, fd: int) -> None:
    """The bytes of regular file ``path`` into ``fd`` (closed at the end)."""
    with os.fdopen(fd, "wb", buffering=0) as out:
        src = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(src).st_mode):
                raise Refused(f"not a file: {os.path.relpath(path, WORK)!r}")
            while chunk := os.read(src, COPY_BUF):
                view = memoryview(chunk)
                while view:
                    view = view[out.write(view) or 0 :]
        finally:
            os.close(src)


def tar_to(path: str, gzip: bool, fd: int) -> None:
    """A tar of directory ``path``'s entries streamed into ``fd`` (closed at the end)."""
    with os.fdopen(fd, "wb") as out, tarfile_open(out, "w|gz" if gzip else "w|") as tar:
        for name in sorted(os.listdir(path)):
            tar.add(os.path.join(path, name), arcname=name)


def untar(tar: Any, dest: str) -> None:
    """Extract regular files, directories and symlinks only, in the tar's order (a stream
    is read once); every name must stay under ``dest``."""
    for member in tar:
        name = os.path.normpath(member.name)
        if name.startswith(("/", "..")) or "\x00" in name:
            raise Refused(f"tar member {member.name!r} leads out of the workspace")
        target = inside(os.path.relpath(os.path.join(dest, name), WORK))
        if member.isdir():
            os.makedirs(target, exist_ok=True)
        elif member.isfile():
            os.makedirs(os.path.dirname(target), exist_ok=True)
            src = tar.extractfile(member)
            assert src is not None
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW)
            with os.fdopen(fd, "wb") as fh:
                while chunk := src.read(COPY_BUF):
                    fh.write(chunk)
                os.fchmod(fh.fileno(), member.mode & 0o755 | 0o600)  # what was written
        elif member.issym():
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.symlink(
                member.linkname, os.path.join(os.path.dirname(target), os.path.basename(name))
            )
        # other kinds (hard links, fifos, devices) are skipped


class Conn:
    """The agent's end of the socket: request lines, their payloads, and the file
    descriptors (SCM_RIGHTS) the trusted side passes with a request."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.fds: list[int] = []

    def _more(self) -> bool:
        data, anc, _flags, _addr = self.sock.recvmsg(1 << 20, socket.CMSG_SPACE(4 * 4))
        for level, kind, blob in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                usable = len(blob) - len(blob) % 4
                self.fds.extend(
                    int.from_bytes(blob[i : i + 4], sys.byteorder, signed=True)
                    for i in range(0, usable, 4)
                )
        self.buf += data
        return bool(data)

    def line(self) -> bytes | None:
        while (end := self.buf.find(b"\n")) < 0:
            if not self._more():
                return None
        out = bytes(self.buf[:end])
        del self.buf[: end + 1]
        return out

    def read(self, size: int) -> bytes:
        while len(self.buf) < size:
            if not self._more():
                raise EOFError("the trusted side closed the socket mid-request")
        out = bytes(self.buf[:size])
        del self.buf[:size]
        return out


# -- fork's copy: entries framed for the kernel to move the file bodies ---------------------
# Each entry: 4 bytes (big-endian length), a JSON header {"p": path under the tree, "t": "d"
# (directory), "f" (file, "n" bytes follow) or "l" (symlink to "l"), "m": mode}; the file's
# bytes follow as they are. The sender's bodies go by sendfile(2), the receiver's by
# splice(2) where the Python has it: no byte of a body passes through Python.


def send_tree(root: str, fd: int) -> None:
    try:
        for top, dirs, files in os.walk(root):
            dirs.sort()
            rel = os.path.relpath(top, root)
            for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
                path = os.path.join(top, name)
                st = os.lstat(path)
                entry = {"p": os.path.normpath(os.path.join(rel, name)), "m": st.st_mode & 0o777}
                if stat.S_ISLNK(st.st_mode):
                    _frame(fd, {**entry, "t": "l", "l": os.readlink(path)})
                elif stat.S_ISREG(st.st_mode):
                    _frame(fd, {**entry, "t": "f", "n": st.st_size})
                    _send_body(fd, path, st.st_size)
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(top, d))]
            for name in dirs:
                _frame(fd, {"p": os.path.normpath(os.path.join(rel, name)), "t": "d", "m": 0o755})
    finally:
        os.close(fd)


def _frame(fd: int, header: dict[str, Any]) -> None:
    import json

    data = json.dumps(header).encode()
    _write_all(fd, len(data).to_bytes(4, "big") + data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _send_body(out: int, path: str, size: int) -> None:
    src = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        sent = 0
        while sent < size:
            n = os.sendfile(out, src, sent, min(size - sent, COPY_BUF))
            if n == 0:  # the file shrank while it was sent: pad to the size announced
                _write_all(out, bytes(size - sent))
                break
            sent += n
    finally:
        os.close(src)


def receive_tree(dest: str, fd: int) -> None:
    import json

    try:
        while True:
            head = _read_exact(fd, 4, eof_ok=True)
            if not head:
                return
            header = json.loads(_read_exact(fd, int.from_bytes(head, "big")))
            name = os.path.normpath(str(header["p"]))
            if name.startswith(("/", "..")) or "\x00" in name or name == ".":
                raise Refused(f"tree entry {header['p']!r} leads out of the workspace")
            target = inside(os.path.relpath(os.path.join(dest, name), WORK))
            kind = header["t"]
            if kind == "d":
                os.makedirs(target, exist_ok=True)
            elif kind == "l":
                os.makedirs(os.path.dirname(target), exist_ok=True)
                os.symlink(
                    str(header["l"]), os.path.join(os.path.dirname(target), os.path.basename(name))
                )
            elif kind == "f":
                os.makedirs(os.path.dirname(target), exist_ok=True)
                flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
                out = os.open(target, flags, 0o600)
                try:
                    _receive_body(fd, out, int(header["n"]))
                    os.fchmod(out, int(header["m"]) & 0o755 | 0o600)  # what was written
                finally:
                    os.close(out)
            else:
                raise Refused(f"tree entry of unknown kind {kind!r}")
    finally:
        os.close(fd)


def _read_exact(fd: int, n: int, eof_ok: bool = False) -> bytes:
    out = b""
    while len(out) < n:
        chunk = os.read(fd, n - len(out))
        if not chunk:
            if eof_ok and not out:
                return b""
            raise Refused("the tree stream ended mid-entry")
        out += chunk
    return out


def _receive_body(src: int, out: int, size: int) -> None:
    splice = getattr(os, "splice", None)  # Python >= 3.10; an image's may be older
    left = size
    while left:
        n = (
            splice(src, out, min(left, COPY_BUF))
            if splice
            else os.write(out, os.read(src, min(left, COPY_BUF)))
        )
        if n == 0:
            raise Refused("the tree stream ended mid-file")
        left -= n
