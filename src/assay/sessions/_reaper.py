"""One thread that ends sessions past their TTL or idle TTL, so nothing outlives its owner."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol


class Watched(Protocol):
    """What the reaper reads of a session (``Session`` is one; it imports this module,
    never the other way)."""

    created: float
    last_used: float
    busy: bool
    ttl_s: float
    idle_ttl_s: float

    def end(self, reason: str, detail: str = "") -> None: ...

    def on_end(self, fn: Callable[[Any], None]) -> None: ...


#: How often the reaper looks (seconds): a session may outlive its TTL by this much.
INTERVAL_S = 0.2

_lock = threading.Lock()
_sessions: set[Watched] = set()
_thread: threading.Thread | None = None


def watch(session: Watched) -> None:
    global _thread
    with _lock:
        _sessions.add(session)
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_loop, daemon=True, name="assay-session-reaper")
            _thread.start()
    session.on_end(_forget)


def _forget(session: Watched) -> None:
    with _lock:
        _sessions.discard(session)


def watched() -> int:
    with _lock:
        return len(_sessions)


def due(session: Watched, now: float) -> str | None:
    """Why ``session`` should end now, if it should."""
    if now - session.created >= session.ttl_s:
        return "ttl"
    if not session.busy and now - session.last_used >= session.idle_ttl_s:
        return "idle_ttl"
    return None


def _loop() -> None:
    while True:
        time.sleep(INTERVAL_S)
        now = time.monotonic()
        with _lock:
            expired = [(s, r) for s in _sessions if (r := due(s, now)) is not None]
        for session, reason in expired:
            # Off this thread: ending waits for the sandbox run to be torn down.
            threading.Thread(target=session.end, args=(reason,), daemon=True).start()
