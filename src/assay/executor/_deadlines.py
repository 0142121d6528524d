"""Batch deadlines: one thread that ends each batch whose deadline has passed.

Ending a batch (every unfinished job gets a ``deadline`` result with ``reward=None``, and
queued work nobody waits for any more is dropped) is the executor's; this module only keeps
the deadlines in order and wakes at the next one, so a batch's deadline costs no thread.
"""

from __future__ import annotations

import heapq
import threading
import time
import weakref
from collections.abc import Callable

from .batch import BatchHandle


class Reaper:
    """Calls ``expire(handle)`` once each added deadline has passed (monotonic clock)."""

    def __init__(self, expire: Callable[[BatchHandle], None]) -> None:
        self._expire = expire
        self._cond = threading.Condition()
        #: Weak: a batch that finished (the executor lets go of it) and that its caller
        #: dropped is not kept, with its results, until its deadline.
        self._heap: list[tuple[float, int, weakref.ref[BatchHandle]]] = []
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="assay-deadlines", daemon=True)
        self._thread.start()

    def add(self, at: float, seq: int, handle: BatchHandle) -> None:
        """End ``handle`` at monotonic time ``at`` (``seq`` orders equal times)."""
        with self._cond:
            heapq.heappush(self._heap, (at, seq, weakref.ref(handle)))
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                if self._heap and self._heap[0][0] <= now:
                    _, _, ref = heapq.heappop(self._heap)
                    handle = ref()
                    if handle is None:
                        continue
                    self._cond.release()
                    try:
                        self._expire(handle)
                    finally:
                        self._cond.acquire()
                    continue
                self._cond.wait(self._heap[0][0] - now if self._heap else None)
