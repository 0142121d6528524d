"""Downloads out of a session (a file, a tar of a directory) with bounded memory.

The agent writes the bytes into a pipe it gets with the request (SCM_RIGHTS), and the
trusted side hands them on in chunks as they come: a download never sits whole in the
service (issue 26: one 768 MiB sparse file grew ``assay serve`` by ~1.5 GiB when the reply
carried it). The size is known before the first byte (``stat``), so a download over the
cap is refused before anything is sent; the reader also stops at the cap and at a
deadline, since the file may grow, and a reader that stops closes the pipe, which ends
the agent's copy (EPIPE) rather than leaving it blocked. All downloads together go at a
bounded pace (:class:`Pace`): copying bytes costs the service and the host CPU, and a
tenant looping over a 768 MiB file took it from another tenant's batch (2.7x its time).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from .. import defaults
from ..errors import DownloadFailed, DownloadTooLarge, SessionRefused

F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


class Pace:
    """All downloads of the process together at most ``rate`` bytes a second, in the order
    their chunks come (each chunk books the next free stretch of time, then waits for it)."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self._lock = threading.Lock()
        self._free_at = 0.0

    def take(self, n: int) -> None:
        with self._lock:
            now = time.monotonic()
            start = max(now, self._free_at)
            self._free_at = start + n / self.rate
        if start > now:
            time.sleep(start - now)


#: The process's downloads share one pace (``defaults.SESSION_DOWNLOAD_BYTES_PER_S``).
PACE = Pace(defaults.SESSION_DOWNLOAD_BYTES_PER_S)


class Download:
    """Chunks of one download, read from a pipe the agent writes into; iterate once, and
    :meth:`close` (or exhaust) it so the agent's copy ends."""

    def __init__(
        self,
        what: str,
        size: int,
        send: Callable[[int], object],
        limit: int,
        timeout_s: float = defaults.SESSION_DOWNLOAD_TIMEOUT_S,
    ) -> None:
        self.what, self.size, self.limit = what, size, limit
        self._deadline = time.monotonic() + timeout_s
        self._read, write = os.pipe2(os.O_CLOEXEC)
        with contextlib.suppress(OSError):  # fewer wake-ups per MiB
            fcntl.fcntl(write, F_SETPIPE_SZ, 1 << 20)
        self._error: list[BaseException] = []
        self._thread = threading.Thread(
            target=self._send, args=(send, write), daemon=True, name="assay-download"
        )
        self._thread.start()

    def _send(self, send: Callable[[int], object], fd: int) -> None:
        try:
            send(fd)  # owns fd: closed once passed to the agent
        except BaseException as exc:  # handed to the reader
            self._error.append(exc)

    def __iter__(self) -> Iterator[bytes]:
        got = 0
        try:
            while True:
                left = self._deadline - time.monotonic()
                if left <= 0 or not _readable(self._read, left):
                    raise DownloadFailed(f"{self.what}: not read within its deadline")
                chunk = os.read(self._read, defaults.SESSION_DOWNLOAD_CHUNK_BYTES)
                if not chunk:
                    break
                got += len(chunk)
                if got > self.limit:
                    raise DownloadTooLarge(self.what, got, self.limit)
                PACE.take(len(chunk))
                yield chunk
            self._thread.join()
            if self._error:
                raise DownloadFailed(f"{self.what}: {self._error[0]}")
        finally:
            self.close()

    def close(self) -> None:
        """Stop reading: the agent's next write fails and its request ends."""
        fd, self._read = self._read, -1
        if fd >= 0:
            os.close(fd)
            self._thread.join()


def _readable(fd: int, timeout: float) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    return bool(poller.poll(max(0, int(timeout * 1000 + 0.999))))


def check_size(what: str, info: dict[str, Any], limit: int) -> int:
    """The size the agent reported for ``what``; :class:`DownloadTooLarge` past ``limit``."""
    size = info.get("size")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise DownloadFailed(f"{what}: the session reported no size")
    if size > limit:
        raise DownloadTooLarge(what, size, limit)
    return size


Call = Callable[..., tuple[dict[str, Any], bytes]]
#: Bytes a tar adds per entry at most for names up to 512 bytes (a header, a long-name
#: header and its block, padding), and at its end: a tar's cap is its files' cap plus these.
TAR_ENTRY_BYTES = 2048
TAR_END_BYTES = 20 << 10


class Chunks(Download):
    """A download read by requests of at most a chunk each (where the sandbox cannot be
    handed a pipe: gVisor's socket proxy carries no descriptors)."""

    def __init__(self, what: str, size: int, limit: int, read: Callable[[int], bytes]) -> None:
        self.what, self.size, self.limit = what, size, limit
        self._read_at = read
        self._read = -1

    def __iter__(self) -> Iterator[bytes]:
        got = 0
        while got < self.size:
            chunk = self._read_at(got)
            if not chunk:
                raise DownloadFailed(f"{self.what}: shrank to {got} bytes while read")
            got += len(chunk)
            PACE.take(len(chunk))
            yield chunk

    def close(self) -> None:
        pass


def file_download(call: Call, path: str, limit: int, pipes: bool = True) -> Download:
    """Regular file ``path`` (under /work) of a session whose requests go through ``call``
    (``pipes``: whether its agent can be handed a descriptor)."""
    info, _ = call({"op": "stat", "path": path})
    if info.get("type") != "file":
        raise SessionRefused(f"not a file: {path!r}")
    size = check_size(path, info, limit)
    if not pipes:
        step = defaults.SESSION_DOWNLOAD_CHUNK_BYTES

        def read(at: int) -> bytes:
            msg = {"op": "read_range", "path": path, "offset": at, "length": step}
            return call(msg)[1][: size - at]  # (a file that grew is read to its checked size)

        return Chunks(path, size, limit, read)
    timeout = defaults.SESSION_DOWNLOAD_TIMEOUT_S

    def send(fd: int) -> object:
        return call({"op": "read_to", "path": path}, timeout=timeout + 60.0, fd=fd)

    return Download(path, size, send, limit, timeout)


def tar_download(
    call: Call, directory: str, gzip: bool, limit: int, pipes: bool = True
) -> Download:
    """A tar (gzipped if asked) of ``directory``'s entries; its ``size`` is that of the
    files it holds (the tar's own length is known only at its end). Without ``pipes`` the
    tar comes whole in one reply: the service holds it (at most the cap) while it is sent."""
    info, _ = call({"op": "stat", "path": directory})
    if info.get("type") != "dir":
        raise SessionRefused(f"not a directory: {directory!r}")
    size = check_size(directory, info, limit)
    entries = info.get("entries")
    count = entries if isinstance(entries, int) and not isinstance(entries, bool) else 0
    if not pipes:
        whole = call({"op": "tar", "dir": directory, "gzip": gzip})[1]
        return Chunks(directory, len(whole), limit, lambda at: whole[at : at + (1 << 20)])
    timeout = defaults.SESSION_DOWNLOAD_TIMEOUT_S

    def send(fd: int) -> object:
        msg = {"op": "tar_to", "dir": directory, "gzip": gzip}
        return call(msg, timeout=timeout + 60.0, fd=fd)

    stream_limit = limit + TAR_ENTRY_BYTES * (max(0, count) + 1) + TAR_END_BYTES
    return Download(directory, size, send, stream_limit, timeout)
