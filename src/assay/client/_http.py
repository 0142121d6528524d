"""The session client's HTTP: the standard library's ``http.client``, one keep-alive
connection per thread (so no pool lock and no connection shared between threads).

Not httpx or urllib3: their request layers cost 0.5-0.8 ms per call more than
``http.client`` on loopback (``benchmarks/sessions.py --only remote``), which is most of a
step's 2 ms budget for going remote. Before a kept connection is reused it is checked for
having been closed by the server (an idle keep-alive timeout); only a failed connect is
retried, so a request that may have reached the server is never sent twice.
"""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
import weakref
from urllib.parse import urlsplit

from ..errors import RemoteError, ValidationError

__all__ = ["Connections"]


class Connections:
    """Requests to the server at ``url`` (``http://`` or ``https://``, with an optional
    path prefix)."""

    def __init__(self, url: str, connect_timeout: float = 10.0) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValidationError("url", f"not an http(s) URL: {url!r}")
        self.url = url.rstrip("/")
        self.prefix = parts.path.rstrip("/")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._connect_timeout = connect_timeout
        self._local = threading.local()
        self._all: weakref.WeakSet[http.client.HTTPConnection] = weakref.WeakSet()
        self._lock = threading.Lock()

    def request(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str], timeout: float
    ) -> tuple[int, bytes, dict[str, str]]:
        """Status, body and (lower-cased) headers of one request; RemoteError if the server
        cannot be reached or the connection fails."""
        conn = self._connection()
        try:
            if conn.sock is None:  # a new connection: connecting is safe to retry
                self._connect(conn)
            assert conn.sock is not None
            conn.sock.settimeout(timeout)
            conn.request(method, self.prefix + path, body=body, headers=headers)
            got = conn.getresponse()
            data = got.read()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise RemoteError(f"{method} {self.url}{path}: {type(exc).__name__}: {exc}") from None
        return got.status, data, {k.lower(): v for k, v in got.getheaders()}

    def close(self) -> None:
        with self._lock:
            conns = list(self._all)
        for conn in conns:
            conn.close()

    def _connection(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is not None and conn.sock is not None and _dropped(conn.sock):
            conn.close()  # the server closed it while idle: reconnect
        if conn is None:
            if self._https:
                conn = http.client.HTTPSConnection(
                    self._host, self._port, context=ssl.create_default_context()
                )
            else:
                conn = http.client.HTTPConnection(self._host, self._port)
            self._local.conn = conn
            with self._lock:
                self._all.add(conn)
        return conn

    def _connect(self, conn: http.client.HTTPConnection) -> None:
        conn.timeout = self._connect_timeout
        for attempt in range(3):
            try:
                conn.connect()
                break
            except OSError:
                conn.close()
                if attempt == 2:
                    raise
        assert conn.sock is not None
        # Headers and body go in one send; without this a reply's ACK could wait 40 ms.
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _dropped(sock: socket.socket) -> bool:
    """An idle keep-alive connection the server closed reads EOF at once."""
    poller = select.poll()
    poller.register(sock, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(0))
