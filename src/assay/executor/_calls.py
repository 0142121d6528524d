"""Calls that take one of the executor's slots: work that is not a job (an agent session's
step) but must share the machine with batches, in the queue's order.

A call is queued as a task like a job's: its priority class, its caller's fair share and
its estimate decide when a worker takes it; the worker holds the call's memory from the
executor's budget while it runs. The caller's thread waits for the result.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

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
