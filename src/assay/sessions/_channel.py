"""The trusted side's end of a session agent's socket: one JSON line out, one back.

Replies are untrusted data (the agent runs as the sandbox's user): they are parsed with
bounded sizes, and a reply that does not come in time, or is malformed, ends the session.
"""

from __future__ import annotations

import json
import select
import socket
import time
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

    def send(self, msg: dict[str, Any], payload: bytes = b"") -> None:
        if payload:
            msg = {**msg, "nbytes": len(payload)}
        data = memoryview(json.dumps(msg).encode() + b"\n" + payload)
        while data:
            try:
                n = self.sock.send(data)
            except BlockingIOError:
                _writable(self.sock, 1.0)
                continue
            except OSError as exc:
                raise ChannelBroken(f"send: {exc}") from exc
            data = data[n:]

    def _fill(self, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ChannelBroken("no reply in time")
        if not readable(self.sock, left):
            raise ChannelBroken("no reply in time")
        try:
            chunk = self.sock.recv(1 << 20)
        except BlockingIOError:
            return
        except OSError as exc:
            raise ChannelBroken(f"recv: {exc}") from exc
        if not chunk:
            raise ChannelBroken("the agent closed its end")
        self._buf += chunk

    def recv(self, timeout: float) -> tuple[dict[str, Any], bytes]:
        deadline = time.monotonic() + timeout
        while (end := self._buf.find(b"\n")) < 0:
            if len(self._buf) > MAX_LINE:
                raise ChannelBroken("reply line too long")
            self._fill(deadline)
        line = bytes(self._buf[:end])
        del self._buf[: end + 1]
        try:
            msg = json.loads(line)
        except ValueError as exc:
            raise ChannelBroken(f"malformed reply: {exc}") from exc
        if not isinstance(msg, dict):
            raise ChannelBroken("malformed reply: not an object")
        size = msg.get("nbytes", 0)
        if not isinstance(size, int) or not 0 <= size <= MAX_PAYLOAD:
            raise ChannelBroken("malformed reply: bad nbytes")
        while len(self._buf) < size:
            self._fill(deadline)
        payload = bytes(self._buf[:size])
        del self._buf[:size]
        return msg, payload


def _wait(sock: socket.socket, events: int, timeout: float) -> bool:
    """``poll`` rather than ``select``, which fails on fds above 1023 (many sessions)."""
    poller = select.poll()
    poller.register(sock, events)
    return bool(poller.poll(max(0, int(timeout * 1000 + 0.999))))


def readable(sock: socket.socket, timeout: float) -> bool:
    return _wait(sock, select.POLLIN, timeout)


def _writable(sock: socket.socket, timeout: float) -> None:
    _wait(sock, select.POLLOUT, timeout)
