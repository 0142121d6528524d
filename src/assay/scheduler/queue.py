"""The run queue: priority classes, fairness between callers, longest job first in a batch.

Order of dispatch, from the outside in:

1. **Priority class** (lower number first, strict): a trainer's step outranks a background
   evaluation.
2. **Fairness between callers** within a class: start-time fair queueing on *estimated
   work*. Each caller has a virtual clock that advances by the estimated seconds of every task
   dispatched for it; the caller with the lowest clock goes next. A caller that was idle joins
   at the lowest clock of the active ones, so it neither starves the others nor is starved.
3. **Within a caller**: batches in submission order, and inside a batch the longest
   estimated task first (LPT), which keeps the batch's makespan close to its lower bound
   ``max(longest task, total work / slots)``.

Admission is bounded: :meth:`FairQueue.put_many` takes a whole batch or raises
:class:`~assay.errors.Overloaded`, never dropping part of it silently. Removal (deadline,
cancel) is lazy: a discarded task stays in its heap, marked, and is skipped when reached.
"""

from __future__ import annotations

import heapq
import itertools
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import ClosedError, Overloaded, ValidationError

#: Smallest amount of work a task is charged in the fairness clock (seconds), so tasks with
#: a zero estimate still take turns.
_MIN_CHARGE = 1e-3

#: ``lpt``: longest estimated task first within a batch (the default); ``fifo`` and
#: ``random`` exist as baselines for benchmarks and experiments.
Order = Literal["lpt", "fifo", "random"]


@dataclass(eq=False)
class Task:
    """One unit of work for a slot; ``payload`` is opaque to the scheduler."""

    payload: Any
    caller: str = "default"
    priority: int = 1
    #: Estimated run time in seconds (the runtime estimator's guess).
    estimate: float = 0.0
    #: Submission order of the task's batch among all batches (FIFO between batches).
    batch_seq: int = 0
    enqueued_at: float = field(default_factory=time.monotonic)
    seq: int = 0
    discarded: bool = False
    #: True while the task sits in the queue (not yet handed to a worker, not discarded).
    queued: bool = False
    #: Set once queued: a task object is queued at most once (a retry is a new task), since
    #: discarded entries stay in the heaps until reached.
    pushed: bool = False


class FairQueue:
    """Thread-safe bounded queue with the dispatch order described in the module doc."""

    def __init__(self, capacity: int, order: Order = "lpt", seed: int | None = None) -> None:
        if capacity < 1:
            raise ValidationError("capacity", "must be at least 1")
        if order not in ("lpt", "fifo", "random"):
            raise ValidationError("order", f"unknown order {order!r}; known: lpt, fifo, random")
        self.capacity = capacity
        self.order = order
        self._random = random.Random(seed)
        self._cond = threading.Condition()
        # priority -> caller -> heap of (batch_seq, -estimate, seq, task)
        self._heaps: dict[int, dict[str, list[tuple[int, float, int, Task]]]] = {}
        self._clock: dict[str, float] = {}
        self._seq = itertools.count()
        self._depth = 0
        self._closed = False
        # enqueued_at of queued tasks, for the oldest-age gauge (lazy-deleted min-heap of
        # (enqueued_at, seq): no Task, so a task and its payload are not kept alive here
        # after a worker took it; ``_live`` holds the seqs still queued)
        self._ages: list[tuple[float, int]] = []
        self._live: set[int] = set()

    # -- producer side ------------------------------------------------------------------
    def put_many(self, tasks: Sequence[Task], *, force: bool = False) -> None:
        """Queue all of ``tasks`` or none (``force`` skips the bound: retries, split parts)."""
        with self._cond:
            if self._closed and not force:
                raise ClosedError("queue is closed")
            if not force and self._depth + len(tasks) > self.capacity:
                raise Overloaded(
                    self._depth, self.capacity, len(tasks), retry_after=self._retry_after()
                )
            if any(t.pushed for t in tasks):
                raise ValidationError("tasks", "a task is queued at most once; queue a new Task")
            for task in tasks:
                self._push(task)
            self._cond.notify(len(tasks))

    def _push(self, task: Task) -> None:
        if task.pushed:
            raise ValidationError("tasks", "a task is queued at most once; queue a new Task")
        task.pushed = True
        task.seq = next(self._seq)
        task.queued = True
        by_caller = self._heaps.setdefault(task.priority, {})
        heap = by_caller.get(task.caller)
        if not heap:
            # An idle caller joins at the lowest clock of the active ones in this class.
            active = [self._clock[c] for c, h in by_caller.items() if h and c in self._clock]
            floor = min(active) if active else max(self._clock.values(), default=0.0)
            self._clock[task.caller] = max(self._clock.get(task.caller, 0.0), floor)
            heap = by_caller.setdefault(task.caller, [])
        if self.order == "lpt":
            rank = -task.estimate
        elif self.order == "random":
            rank = self._random.random()
        else:
            rank = 0.0
        heapq.heappush(heap, (task.batch_seq, rank, task.seq, task))
        heapq.heappush(self._ages, (task.enqueued_at, task.seq))
        self._live.add(task.seq)
        self._depth += 1

    def _retry_after(self) -> float:
        return max(1.0, min(60.0, self._depth / max(1, self.capacity) * 10.0))

    def discard(self, tasks: Sequence[Task]) -> int:
        """Take queued tasks out (deadline passed, batch cancelled); returns how many were."""
        n = 0
        with self._cond:
            for task in tasks:
                if task.queued and not task.discarded:
                    task.discarded = True
                    task.queued = False
                    self._live.discard(task.seq)
                    self._depth -= 1
                    n += 1
        return n

    def close(self) -> None:
        """Wake every waiting consumer; :meth:`get` then returns None once the queue is empty."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # -- consumer side ------------------------------------------------------------------
    def get(self, timeout: float | None = None) -> Task | None:
        """The next task in dispatch order; blocks until one is queued, or returns None on
        timeout or once the queue is closed and empty."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                task = self._pop()
                if task is not None:
                    return task
                if self._closed:
                    return None
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._cond.wait(remaining)

    def _pop(self) -> Task | None:
        if self._depth == 0:
            return None
        for priority in sorted(self._heaps):
            by_caller = self._heaps[priority]
            while True:
                live = [c for c, h in by_caller.items() if h]
                if not live:
                    break
                caller = min(live, key=lambda c: (self._clock.get(c, 0.0), c))
                heap = by_caller[caller]
                _, _, _, task = heapq.heappop(heap)
                if not heap:
                    del by_caller[caller]
                if task.discarded:
                    continue
                task.queued = False
                self._live.discard(task.seq)
                self._prune_ages()
                self._depth -= 1
                self._clock[caller] = self._clock.get(caller, 0.0) + max(task.estimate, _MIN_CHARGE)
                return task
        return None

    # -- gauges ---------------------------------------------------------------------------
    def depth(self) -> int:
        with self._cond:
            return self._depth

    def _prune_ages(self) -> None:
        while self._ages and self._ages[0][1] not in self._live:
            heapq.heappop(self._ages)

    def oldest_age(self) -> float:
        """Seconds the oldest still-queued task has waited (0 when empty)."""
        with self._cond:
            self._prune_ages()
            if not self._ages:
                return 0.0
            return max(0.0, time.monotonic() - self._ages[0][0])

    def gauges(self) -> tuple[int, float]:
        return self.depth(), self.oldest_age()
