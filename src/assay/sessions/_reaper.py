"""One thread that ends sessions past their TTL or idle TTL, so nothing outlives its owner."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .session import Session

#: How often the reaper looks (seconds): a session may outlive its TTL by this much.
INTERVAL_S = 0.2

_lock = threading.Lock()
_sessions: set[Session] = set()
_thread: threading.Thread | None = None


def watch(session: Session) -> None:
    global _thread
    with _lock:
        _sessions.add(session)
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_loop, daemon=True, name="assay-session-reaper")
            _thread.start()
    session.on_end(_forget)


def _forget(session: Session) -> None:
    with _lock:
        _sessions.discard(session)


def watched() -> int:
    with _lock:
        return len(_sessions)


def due(session: Session, now: float) -> str | None:
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
