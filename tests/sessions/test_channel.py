"""The trusted end of a session agent's channel (sessions/_channel.py): the agent runs as the
sandbox's user, so whatever it sends is parsed as untrusted data."""

from __future__ import annotations

import asyncio
import socket
import threading

import pytest

from assay.sessions._channel import Channel, ChannelBroken, _nbytes


def _channel_with(data: bytes) -> Channel:
    """A channel whose agent end has sent ``data`` (from a thread: it may pass the socket
    buffer) and closed."""
    ours, theirs = socket.socketpair()

    def write() -> None:
        with theirs:
            theirs.sendall(data)

    threading.Thread(target=write, daemon=True).start()
    return Channel(ours)


def test_a_reply_nested_past_the_parsers_depth_breaks_the_channel() -> None:
    """A RecursionError from the parser escaped as itself (an internal error of the session
    manager); it is a malformed reply, which ends the session as any garbage does."""
    channel = _channel_with(b"[" * 100_000 + b"\n")
    with pytest.raises(ChannelBroken, match="malformed reply"):
        channel.recv(5)
    assert _nbytes(b"[" * 100_000) is None


@pytest.mark.parametrize("awaited", [False, True], ids=["recv", "recv_awaited"])
def test_a_reply_line_of_many_chunks_is_read_whole(awaited: bool) -> None:
    """A 24 MiB line arrives in many reads; it is found and parsed, with its payload."""
    text = "x" * (24 << 20)
    channel = _channel_with(b'{"out": "' + text.encode() + b'", "nbytes": 3}\nabc')
    if awaited:

        async def off_loop(fn):  # type: ignore[no-untyped-def]
            return await asyncio.to_thread(fn)

        msg, payload = asyncio.run(channel.recv_awaited(10, off_loop))
    else:
        msg, payload = channel.recv(10)
    assert (len(msg["out"]), payload) == (len(text), b"abc")
    channel.close()
