"""uvicorn's HTTP protocol with deadlines and a size cap on what comes before a request's
body, so that one client cannot hold the service's connections or memory (issue 26).

uvicorn (0.3x-0.5x) has no such bounds: a connection that sends part of a request line and
then a byte now and then (slowloris) stays open for ever (2,000 of them were all open 10 s
later, and the process allows 20,000 descriptors), and a request whose headers never end
grows the service without limit (300 MiB of headers grew ``assay serve`` by 345 MiB).
Here a request's head must arrive within :data:`~assay.defaults.SERVER_HEAD_TIMEOUT_S`
of its first byte (or of the connection), in at most
:data:`~assay.defaults.SERVER_HEAD_MAX_BYTES` (431 beyond), and its body within
:data:`~assay.defaults.SERVER_BODY_TIMEOUT_S`; past a deadline the connection is closed.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .. import defaults

_431 = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain\r\n"
    b"content-length: 30\r\nconnection: close\r\n\r\nrequest head over the size cap"
)


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """:class:`HttpToolsProtocol` plus the deadlines and the head cap above."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = True
        self._head_bytes = 0
        self._deadline: asyncio.TimerHandle | None = None

    def _arm(self, seconds: float | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = None if seconds is None else self.loop.call_later(seconds, self._late)

    def _late(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(defaults.SERVER_HEAD_TIMEOUT_S)

    def connection_lost(self, exc: Exception | None) -> None:
        self._arm(None)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._head_bytes += len(data)
            if self._head_bytes > defaults.SERVER_HEAD_MAX_BYTES:
                self._arm(None)
                self.transport.write(_431)
                self.transport.close()
                return
        super().data_received(data)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if not self._in_head:  # the next request on a kept-alive connection
            self._in_head, self._head_bytes = True, 0
            self._arm(defaults.SERVER_HEAD_TIMEOUT_S)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._arm(defaults.SERVER_BODY_TIMEOUT_S)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._arm(None)
        super().on_message_complete()
