"""The trusted side's end of a session agent's socket: one JSON line out, one back.

Replies are untrusted data (the agent runs as the sandbox's user): they are parsed with
bounded sizes, and a reply that does not come in time, or is malformed, ends the session.
"""

from __future__ import annotations

import array
import asyncio
import json
import select
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any

#: Largest reply line (JSON) and payload accepted from an agent.
MAX_LINE = 64 << 20
MAX_PAYLOAD = 1 << 30


class ChannelBroken(Exception):
    """The agent did not answer properly (timeout, EOF, garbage)."""


class Channel:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.sock.setblocking(False)
        self._buf = bytearray()

    def close(self) -> None:
        self.sock.close()

    def send(
        self, msg: dict[str, Any], payload: bytes = b"", timeout: float = 60.0, fd: int = -1
    ) -> None:
        """Send one request (with a copy of ``fd``, if given, for the agent to use); an
        agent that takes none of it for ``timeout`` breaks the channel."""
        if payload:
            msg = {**msg, "nbytes": len(payload)}
        deadline = time.monotonic() + timeout
        head = json.dumps(msg).encode() + b"\n"
        if fd >= 0:
            rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))]
            try:
                # Ancillary data travels with the first byte: send that byte alone (a
                # non-blocking send of one byte to a writable socket takes it whole).
                if not _wait(self.sock, select.POLLOUT, timeout):
                    raise ChannelBroken("the agent took no input in time")
                self.sock.sendmsg([head[:1]], rights)
            except OSError as exc:
                raise ChannelBroken(f"send: {exc}") from exc
            head = head[1:]
        for part in (head, payload):
            data = memoryview(part)  # the payload goes out as it is: no joined copy
            while data:
                try:
                    n = self.sock.send(data)
                except BlockingIOError:
                    left = deadline - time.monotonic()
                    if left <= 0 or not _wait(self.sock, select.POLLOUT, left):
                        raise ChannelBroken("the agent took no input in time") from None
                    continue
                except OSError as exc:
                    raise ChannelBroken(f"send: {exc}") from exc
                data = data[n:]

    def _fill(self, deadline: float, into: memoryview | None = None) -> int:
        """Wait (until ``deadline``) for bytes and take those that came: into ``into`` if
        given, else onto the line buffer. Returns how many were taken."""
        left = deadline - time.monotonic()
        if left <= 0 or not readable(self.sock, left):
            raise ChannelBroken("no reply in time")
        try:
            if into is not None:
                n = self.sock.recv_into(into)
            else:
                chunk = self.sock.recv(1 << 20)
                self._buf += chunk
                n = len(chunk)
        except BlockingIOError:
            return 0
        except OSError as exc:
            raise ChannelBroken(f"recv: {exc}") from exc
        if not n:
            raise ChannelBroken("the agent closed its end")
        return n

    def recv(self, timeout: float) -> tuple[dict[str, Any], bytes]:
        deadline = time.monotonic() + timeout
        seen = 0  # the bytes before this hold no line's end: each is searched once
        while (end := self._buf.find(b"\n", seen)) < 0:
            if len(self._buf) > MAX_LINE:
                raise ChannelBroken("reply line too long")
            seen = len(self._buf)
            self._fill(deadline)
        line = bytes(self._buf[:end])
        del self._buf[: end + 1]
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError) as exc:  # nested past the parser's depth
            raise ChannelBroken(f"malformed reply: {exc}") from exc
        if not isinstance(msg, dict):
            raise ChannelBroken("malformed reply: not an object")
        size = msg.get("nbytes", 0)
        if not isinstance(size, int) or not 0 <= size <= MAX_PAYLOAD:
            raise ChannelBroken("malformed reply: bad nbytes")
        payload = bytearray(size)
        have = min(size, len(self._buf))
        payload[:have] = self._buf[:have]
        del self._buf[:have]
        view = memoryview(payload)
        while have < size:
            have += self._fill(deadline, view[have:])
        return msg, bytes(payload)

    async def recv_awaited(
        self, timeout: float, off_loop: Callable[[Callable[[], Any]], Awaitable[Any]]
    ) -> tuple[dict[str, Any], bytes]:
        """:meth:`recv` from an event loop: the reply line is read as the loop sees the
        socket readable; a reply with a payload still to come is read on a thread
        (``off_loop``), so the loop never waits for a large transfer."""
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + timeout
        fd = self.sock.fileno()
        seen = 0  # the bytes before this hold no line's end: each is searched once
        while (end := self._buf.find(b"\n", seen)) < 0:
            if len(self._buf) > MAX_LINE:
                raise ChannelBroken("reply line too long")
            seen = len(self._buf)
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChannelBroken("no reply in time")
            if not await _readable(loop, fd, left):
                raise ChannelBroken("no reply in time")
            self._fill(deadline)
        size = _nbytes(bytes(self._buf[:end]))
        if size is not None and len(self._buf) - end - 1 >= size:
            return self.recv(max(0.0, deadline - time.monotonic()))  # all here: no wait
        got: tuple[dict[str, Any], bytes] = await off_loop(
            lambda: self.recv(max(0.0, deadline - time.monotonic()))
        )
        return got


async def _readable(loop: asyncio.AbstractEventLoop, fd: int, timeout: float) -> bool:
    """Whether ``fd`` became readable within ``timeout``, waited for on ``loop``."""
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, wake)
    try:
        await asyncio.wait_for(ready, timeout)
    except TimeoutError:
        return False
    finally:
        loop.remove_reader(fd)
    return True


def _nbytes(line: bytes) -> int | None:
    """The payload size a reply line announces (None if it cannot be read: :meth:`recv`
    then says what is wrong with it)."""
    try:
        size = json.loads(line).get("nbytes", 0)
    except (ValueError, AttributeError, RecursionError):
        return None
    return size if isinstance(size, int) else None


def _wait(sock: socket.socket, events: int, timeout: float) -> bool:
    """``poll`` rather than ``select``, which fails on fds above 1023 (many sessions)."""
    poller = select.poll()
    poller.register(sock, events)
    return bool(poller.poll(max(0, int(timeout * 1000 + 0.999))))


def readable(sock: socket.socket, timeout: float) -> bool:
    return _wait(sock, select.POLLIN, timeout)
