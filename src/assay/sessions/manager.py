"""Open sessions by id, with a cap on how many and how much memory they may hold.

An open session holds one sandbox slot (its run) and its memory limit, but no executor
worker: an idle session costs memory, not a worker; its steps run on the caller's thread.
The cap on open sessions and on the sum of their memory limits is what keeps a burst of
sessions from taking the machine from batch judging; beyond it ``create`` raises
:class:`TooManySessions` (the server's 429).

A manager on a ``LocalExecutor`` (or given ``metrics``) exports its sessions to the
executor's Prometheus metrics: open, busy and oldest sessions, those past their TTL, creates,
refusals, ends by reason and lifetimes (:meth:`SessionManager.stats`).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
import time
from typing import Any

from .. import defaults
from ..errors import TooManySessions, UnknownSession, ValidationError
from ..telemetry import Metrics, SessionStats
from ._base import SessionBase
from ._held import HeldSessions
from ._source import capabilities_of
from .session import open_session
from .types import SessionLimits

log = logging.getLogger("assay.sessions")

#: Seconds a session's sandbox may outlive the moment it should have ended (its TTL, its
#: idle TTL, its close) before it counts as past its TTL: the reaper looks every 0.2 s and a
#: teardown takes milliseconds, and the sandbox's own wall limit ends a run 5 s past its TTL.
LEAK_GRACE_S = 2.0


def overdue(session: SessionBase, now: float) -> bool:
    """Whether an open ``session`` should have been ended over :data:`LEAK_GRACE_S` ago
    (computed apart from the reaper's own test, so a broken reaper shows)."""
    late = now - LEAK_GRACE_S
    if late - session.created >= session.ttl_s:
        return True
    return not session.busy and late - session.last_used >= session.idle_ttl_s


def host_memory_mb() -> int | None:
    """MiB this process may still use: ``MemAvailable``, or its memory cgroup's limit (v1
    or v2) if lower; None if neither can be read."""
    found: list[int] = []
    try:
        with open("/proc/meminfo") as fh:
            found += [int(x.split()[1]) >> 10 for x in fh if x.startswith("MemAvailable:")]
        with open("/proc/self/cgroup") as fh:
            lines = [x.rstrip("\n").split(":", 2) for x in fh]
    except (OSError, ValueError, IndexError):
        lines = []
    for _, controllers, path in (x for x in lines if len(x) == 3):
        if controllers == "":
            limit = f"/sys/fs/cgroup{path}/memory.max"
        elif "memory" in controllers.split(","):
            limit = f"/sys/fs/cgroup/memory{path}/memory.limit_in_bytes"
        else:
            continue
        with contextlib.suppress(OSError, ValueError):
            with open(limit) as fh:
                found.append(int(fh.read().strip()) >> 20)  # "max" (no limit): ValueError
    return min(found) if found else None


def default_memory_budget_mb() -> int | None:
    """The sessions' memory budget when none is given (``defaults.SESSION_MEMORY_SHARE``
    of :func:`host_memory_mb`), never below one default session."""
    host = host_memory_mb()
    if host is None:
        return None
    return max(SessionLimits().memory_mb, int(host * defaults.SESSION_MEMORY_SHARE))


class SessionManager:
    """Creates, finds and closes sessions on one sandbox pool (thread-safe)."""

    def __init__(
        self,
        source: object,
        max_sessions: int = 512,
        memory_budget_mb: int | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        """``memory_budget_mb``: what open sessions' memory limits may add up to (None:
        :func:`default_memory_budget_mb`, from what the host has)."""
        if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
            raise ValidationError("max_sessions", "must be a positive integer")
        if not callable(getattr(source, "open_session", None)):  # (Ray: on its nodes)
            capabilities_of(source)  # checks what it is
        self.source = source
        self.max_sessions = max_sessions
        if memory_budget_mb is None:
            memory_budget_mb = default_memory_budget_mb()
        self.memory_budget_mb = memory_budget_mb
        self._lock = threading.Lock()
        self._held = HeldSessions()
        self._reserved = 0
        self._reserved_mb = 0
        # Sessions being started (created or forked) per caller: a sandbox start is work.
        self._starting: collections.Counter[str] = collections.Counter()
        # Ended sessions whose sandbox run is still being torn down (-> when they ended).
        self._ending: dict[SessionBase, float] = {}
        self._ended_steps = 0
        self._ended_counts: collections.Counter[str] = collections.Counter()
        found = metrics if metrics is not None else getattr(source, "metrics", None)
        self.metrics = found if isinstance(found, Metrics) else None
        if self.metrics is not None:
            self.metrics.bind_sessions(self.stats)

    def _memory_mb(self) -> int:
        return sum(s.limits.memory_mb for s in self._held.open.values()) + self._reserved_mb

    def _reserve(self, limits: SessionLimits, caller: str) -> None:
        with self._lock:
            used = len(self._held.open) + self._reserved
            starting = self._starting[caller]
            full = None
            if used >= self.max_sessions:
                full = TooManySessions("sessions", used, self.max_sessions)
            elif starting >= defaults.SESSION_STARTS_PER_CALLER:
                cap = defaults.SESSION_STARTS_PER_CALLER
                full = TooManySessions(f"sessions starting for {caller!r}", starting, cap)
            elif self.memory_budget_mb is not None:
                mem = self._memory_mb()
                if mem + limits.memory_mb > self.memory_budget_mb:
                    full = TooManySessions("memory MiB", mem, self.memory_budget_mb)
            if full is not None:
                if self.metrics is not None:
                    self.metrics.session_rejected()
                raise full
            self._reserved += 1
            self._reserved_mb += limits.memory_mb
            self._starting[caller] += 1

    def _admit(
        self, limits: SessionLimits, session: SessionBase | None, caller: str, owner: str | None
    ) -> None:
        with self._lock:
            self._reserved -= 1
            self._reserved_mb -= limits.memory_mb
            self._starting[caller] -= 1
            if not self._starting[caller]:
                del self._starting[caller]
            if session is not None and not session.ended:
                self._held.hold(session, owner)
        if session is not None:
            if self.metrics is not None:
                self.metrics.session_created()
            log.info(
                "session created",
                extra={
                    "event": "session_created",
                    "session_id": session.id,
                    "ttl_s": session.ttl_s,
                    "idle_ttl_s": session.idle_ttl_s,
                    "memory_mb": session.limits.memory_mb,
                },
            )
            session.on_end(self._forget)
            if session.ended:
                self._forget(session)

    def _forget(self, session: SessionBase) -> None:
        now = time.monotonic()
        reason = session.end_reason or "closed"
        with self._lock:
            self._held.ended(session, reason)
            for gone in [s for s in self._ending if s.result is not None]:
                del self._ending[gone]
            if session.result is None:  # its sandbox run is still being torn down
                self._ending[session] = now
            self._ended_steps += session.steps
            self._ended_counts[reason] += 1
        if self.metrics is not None:
            self.metrics.session_ended(reason, now - session.created)
        # The detail is the service's own words (a sandbox_error's message, a broken
        # channel), never a step's output: steps' streams go to their callers only.
        log.log(
            logging.WARNING if reason == "crashed" else logging.INFO,
            "session ended",
            extra={
                "event": "session_ended",
                "session_id": session.id,
                "reason": reason,
                "detail": session.end_detail[:300],
                "lifetime_s": round(now - session.created, 3),
                "steps": session.steps,
            },
        )

    def stats(self) -> SessionStats:
        """Open, busy and oldest sessions, those past their TTL and those being torn down
        (what ``/metrics`` exports; see :data:`LEAK_GRACE_S`)."""
        now = time.monotonic()
        with self._lock:
            sessions = list(self._held.open.values())
            for gone in [s for s in self._ending if s.result is not None]:
                del self._ending[gone]
            ending = list(self._ending.values())
            steps = self._ended_steps
            ended = dict(self._ended_counts)
        return SessionStats(
            open=len(sessions),
            busy=sum(1 for s in sessions if s.busy),
            max_sessions=self.max_sessions,
            memory_limit_bytes=sum(s.limits.memory_mb for s in sessions) << 20,
            oldest_age_s=max((now - s.created for s in sessions), default=0.0),
            past_ttl=sum(1 for s in sessions if overdue(s, now))
            + sum(1 for t in ending if now - t >= LEAK_GRACE_S),
            ending=len(ending),
            steps=steps + sum(s.steps for s in sessions),
            ended=ended,
        )

    def create(self, *, owner: str | None = None, **kwargs: Any) -> SessionBase:
        """A new session (``Session``'s keyword arguments), ``owner``'s if given: then only
        lookups for ``owner`` (or for any owner) find it."""
        limits = kwargs.get("limits") or SessionLimits()
        caller = str(kwargs.get("caller", "sessions"))
        self._reserve(limits, caller)
        session = None
        try:
            session = open_session(self.source, **kwargs)
        finally:
            self._admit(limits, session, caller, owner)
        return session

    def get(self, session_id: str, owner: str | None = None) -> SessionBase:
        """The open session ``session_id``; :class:`SessionEnded` if it has ended (with why),
        :class:`UnknownSession` if there never was one (or it ended long ago), or if
        ``owner`` is given and it is not ``owner``'s (ended or not: the same answer as for
        an id that never existed)."""
        with self._lock:
            session = self._held.find(session_id, owner)
        if session is None:
            raise UnknownSession(session_id)
        return session

    def fork(self, session_id: str, owner: str | None = None) -> SessionBase:
        """A copy of session ``session_id`` (found as by :meth:`get`), owned by its owner."""
        parent = self.get(session_id, owner)
        with self._lock:
            parent_owner = self._held.owners.get(parent.id)
        self._reserve(parent.limits, parent.caller)
        child = None
        try:
            child = parent.fork()
        finally:
            self._admit(parent.limits, child, parent.caller, parent_owner)
        return child

    def close(self, session_id: str, owner: str | None = None) -> None:
        self.get(session_id, owner).close()

    def sessions(self) -> list[SessionBase]:
        with self._lock:
            return list(self._held.open.values())

    def close_all(self) -> None:
        for session in self.sessions():
            session.close()
