"""Calls: work that is not a job (an agent session's step) but must share the machine with
batches, admitted in the queue's order, run without holding a batch worker.

A call is queued as a task like a job's: its priority class, its caller's fair share and
its estimate decide *when* it starts. But a step may wait for minutes (a ``sleep``, a
server it polls) while using no CPU, so it does not *run* on the worker that admitted it:
the worker only lets it through and goes back to the queue, and the call runs on its own
caller's thread. What bounds running calls is their own budget of step slots
(:data:`~assay.defaults.STEP_SLOTS_PER_SLOT` per executor slot), separate from the batch
slots, with at most half of it per caller; a step that computes competes for the CPU as
one run does (every run and session has its own CPU cgroup of equal weight), so what a
step costs batch work is its CPU use, not its wall time. Issue 26: eight sleeping steps
used to hold every slot, and another caller's ``print(42)`` waited 22 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Generic, TypeVar

from ..errors import ClosedError
from ..scheduler import NORMAL, FairQueue, Task
from ..telemetry import Metrics
from ._jobs import Memory

R = TypeVar("R")


class SlotCall(Generic[R]):
    """``fn()`` waiting for its turn in the queue; a worker admits it (:meth:`admit`) and
    the caller's thread runs it."""

    def __init__(
        self, fn: Callable[[], R] | None, memory_mb: int, on_admit: Callable[[], None] | None = None
    ) -> None:
        self.fn = fn
        self.memory_mb = memory_mb
        self._admitted = threading.Event()
        self._on_admit = on_admit

    def admit(self) -> None:
        self._admitted.set()
        if self._on_admit is not None:
            self._on_admit()

    def wait(self) -> None:
        self._admitted.wait()


class StepSlots:
    """The step-slot budget: ``total`` calls run at once, at most ``per_caller`` of one
    caller (so one caller's sleepers leave room for everybody else's steps)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.per_caller = max(1, (total + 1) // 2)
        self._cond = threading.Condition()
        self._running: dict[str, int] = {}
        self.used = 0

    def acquire(self, caller: str, blocking: bool = True) -> bool:
        """Take a slot for ``caller`` (waiting for one, or with ``blocking=False`` only if
        one is free now: whether it was taken)."""
        with self._cond:

            def free() -> bool:
                return self.used < self.total and self._running.get(caller, 0) < self.per_caller

            if blocking:
                self._cond.wait_for(free)
            elif not free():
                return False
            self.used += 1
            self._running[caller] = self._running.get(caller, 0) + 1
            return True

    def release(self, caller: str) -> None:
        with self._cond:
            self.used -= 1
            left = self._running[caller] - 1
            if left:
                self._running[caller] = left
            else:
                del self._running[caller]
            self._cond.notify_all()


class SlotCalls:
    """The executor's side of calls (mixed into :class:`~assay.executor.LocalExecutor`)."""

    _closed: bool
    _lock: threading.Lock
    _batches: itertools.count[int]
    _memory: Memory
    _step_slots: StepSlots
    queue: FairQueue
    metrics: Metrics

    @property
    def steps_running(self) -> int:
        """Calls running now (each holds a step slot, no batch worker)."""
        return self._step_slots.used

    def call(
        self,
        fn: Callable[[], R],
        *,
        priority: int = NORMAL,
        caller: str = "sessions",
        estimate_s: float = 0.0,
        memory_mb: int = 0,
    ) -> R:
        """``fn()`` run on the caller's thread once it holds a step slot and the scheduler
        has let it through (in its order with jobs), and its result (or exception). Raises
        :class:`~assay.errors.Overloaded` when the queue is full, and
        :class:`~assay.errors.ClosedError` once the executor is closed."""
        if self._closed:
            raise ClosedError("executor is closed")
        self._step_slots.acquire(caller)
        try:
            slot_call = SlotCall(fn, memory_mb)
            task = Task(slot_call, caller, priority, estimate_s, next(self._batches))
            self.queue.put_many([task])
            slot_call.wait()
            self._memory.acquire(memory_mb)
            try:
                return fn()
            finally:
                self._memory.release(memory_mb)
        finally:
            self._step_slots.release(caller)

    @contextlib.asynccontextmanager
    async def admitted(
        self,
        *,
        priority: int = NORMAL,
        caller: str = "sessions",
        estimate_s: float = 0.0,
        memory_mb: int = 0,
        off_loop: Callable[[Callable[[], Any]], Awaitable[Any]] | None = None,
    ) -> AsyncIterator[None]:
        """:meth:`call`'s turn, awaited on an event loop: the body runs once the call holds
        a step slot and the scheduler has let it through, with no thread waiting for it (a
        service's step then costs no hand-over to a thread and back). Waiting for a step
        slot or for memory, when there is none free now, is done on a thread: ``off_loop``'s
        (the service's session threads: not the loop's default pool, which batch
        submissions wait on), else the loop's default executor."""
        if self._closed:
            raise ClosedError("executor is closed")
        loop = asyncio.get_running_loop()

        async def blocking(take: Callable[[], Any], give_back: Callable[[], None]) -> None:
            waiting = asyncio.ensure_future(
                off_loop(take) if off_loop is not None else loop.run_in_executor(None, take)
            )
            try:
                await asyncio.shield(waiting)
            except asyncio.CancelledError:  # the thread still takes it: give it back then
                waiting.add_done_callback(lambda _: give_back())
                raise

        if not self._step_slots.acquire(caller, blocking=False):
            await blocking(
                lambda: self._step_slots.acquire(caller), lambda: self._step_slots.release(caller)
            )
        try:
            turn: asyncio.Future[None] = loop.create_future()

            def let_through() -> None:
                if not turn.done():
                    turn.set_result(None)

            def on_admit() -> None:  # on the admitting worker's thread
                with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
                    loop.call_soon_threadsafe(let_through)

            slot_call: SlotCall[None] = SlotCall(None, memory_mb, on_admit)
            self.queue.put_many(
                [Task(slot_call, caller, priority, estimate_s, next(self._batches))]
            )
            await turn
            if not self._memory.acquire(memory_mb, blocking=False):
                await blocking(
                    lambda: self._memory.acquire(memory_mb),
                    lambda: self._memory.release(memory_mb),
                )
            try:
                yield
            finally:
                self._memory.release(memory_mb)
        finally:
            self._step_slots.release(caller)

    def _run_call(self, slot_call: SlotCall[Any], wait: float) -> None:
        """A worker's turn at a call: it lets the call through and is free again at once."""
        self.metrics.observe_queue_wait(wait)
        slot_call.admit()
