"""Calls that take one of the executor's slots: work that is not a job (an agent session's
step) but must share the machine with batches, in the queue's order.

A call is queued as a task like a job's: its priority class, its caller's fair share and
its estimate decide when a worker takes it; the worker holds the call's memory from the
executor's budget while it runs. The caller's thread waits for the result.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ..errors import ClosedError
from ..scheduler import NORMAL, FairQueue, Task
from ..telemetry import Metrics
from ._jobs import Memory

R = TypeVar("R")


class SlotCall(Generic[R]):
    """``fn()`` waiting for, then running on, an executor worker."""

    def __init__(self, fn: Callable[[], R], memory_mb: int) -> None:
        self.fn = fn
        self.memory_mb = memory_mb
        self._done = threading.Event()
        self._result: R | None = None
        self._error: BaseException | None = None

    def run(self) -> None:
        try:
            self._result = self.fn()
        except BaseException as exc:  # handed to the caller's thread
            self._error = exc
        finally:
            self._done.set()

    def wait(self) -> R:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]  # set: run() ended without error


class SlotCalls:
    """The executor's side of calls (mixed into :class:`~assay.executor.LocalExecutor`)."""

    _closed: bool
    _busy: int
    _lock: threading.Lock
    _batches: itertools.count[int]
    _memory: Memory
    queue: FairQueue
    metrics: Metrics

    def call(
        self,
        fn: Callable[[], R],
        *,
        priority: int = NORMAL,
        caller: str = "sessions",
        estimate_s: float = 0.0,
        memory_mb: int = 0,
    ) -> R:
        """``fn()`` run on one of the executor's slots, queued with its jobs by the
        scheduler's rules, and its result (or exception). Raises
        :class:`~assay.errors.Overloaded` when the queue is full, and
        :class:`~assay.errors.ClosedError` once the executor is closed."""
        if self._closed:
            raise ClosedError("executor is closed")
        slot_call = SlotCall(fn, memory_mb)
        self.queue.put_many([Task(slot_call, caller, priority, estimate_s, next(self._batches))])
        return slot_call.wait()

    def _run_call(self, slot_call: SlotCall[Any], wait: float) -> None:
        """A worker's turn at a call: the slot and the call's memory are held while it runs."""
        with self._lock:
            self._busy += 1
        self.metrics.observe_queue_wait(wait)
        self._memory.acquire(slot_call.memory_mb)
        try:
            slot_call.run()
        finally:
            self._memory.release(slot_call.memory_mb)
            with self._lock:
                self._busy -= 1
