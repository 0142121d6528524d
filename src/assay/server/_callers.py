"""Per-caller bounds on the service's session work, waited for on the event loop.

A session call holds a thread of the service's session pool while it runs or waits (for
its session's previous step, a step slot, a sandbox start). Without a bound per caller,
one caller's few hundred concurrent requests (sleeping steps on one session, a flood of
creates) would hold every thread, and every other caller's session calls would wait for
them. Here a caller's calls beyond its share wait as coroutines (a few hundred bytes each,
no thread) and its sandbox starts (creates, forks) go a few at a time: a flood queues
behind itself, not in front of anybody else (issue 26).
"""

from __future__ import annotations

import asyncio
import collections
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from .. import defaults


class PerCaller:
    """At most ``n`` holders per caller at once; the others wait their turn (FIFO)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._sems: dict[str, asyncio.Semaphore] = {}
        self._users: collections.Counter[str] = collections.Counter()

    @asynccontextmanager
    async def hold(self, caller: str) -> AsyncIterator[None]:
        sem = self._sems.setdefault(caller, asyncio.Semaphore(self.n))
        self._users[caller] += 1
        try:
            async with sem:
                yield
        finally:
            self._users[caller] -= 1
            if not self._users[caller]:  # nobody holds or waits: forget the caller
                del self._users[caller], self._sems[caller]


class Callers:
    """The bounds of one service: session calls, and sandbox starts, per caller."""

    def __init__(self) -> None:
        self.calls = PerCaller(defaults.SERVER_SESSION_CALLS_PER_CALLER)
        self.starts = PerCaller(defaults.SERVER_SESSION_STARTS_PER_CALLER)


_BY_OWNER: weakref.WeakKeyDictionary[object, Callers] = weakref.WeakKeyDictionary()


def callers_of(owner: object) -> Callers:
    """The bounds kept for ``owner`` (the service's session manager: one per app and event
    loop, which its semaphores belong to)."""
    found = _BY_OWNER.get(owner)
    if found is None:
        found = _BY_OWNER[owner] = Callers()
    return found
