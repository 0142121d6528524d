"""The broker protocol of the queue fleet, and an in-memory broker for tests.

A broker holds three things: **job streams**, one per priority class, read by the workers
of one consumer group (a job is pending on the worker that read it until it is finished,
and another worker may claim it once it has been idle past the visibility timeout);
**batches** (size, deadline, cancellation, each job's attempt count); and **results**, one
per job whatever happens (the first stored wins, atomically with the job's acknowledgement),
kept per batch in arrival order so a producer that restarts reads them again from the
start. :class:`~assay.executor.queue.RedisBroker` is the real implementation (Redis
Streams); :class:`InMemoryBroker` is the same contract in one process, for unit tests. A
NATS JetStream broker would be a third sibling (work-queue stream per class, ``AckWait`` as
the visibility timeout, a key-value bucket for the results).
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from ...scheduler import HIGH, LOW

#: Priority classes, most urgent first; each is a stream of its own.
PRIORITIES: tuple[str, ...] = ("high", "normal", "low")


def priority_class(priority: int) -> str:
    """The stream of the executor's priority number (``assay.scheduler`` HIGH/NORMAL/LOW)."""
    if priority <= HIGH:
        return "high"
    return "low" if priority >= LOW else "normal"


class QueueFull(Exception):
    """The job streams hold ``depth`` unfinished jobs: ``requested`` more would pass
    ``max_depth`` (the producer waits, then raises :class:`~assay.errors.Overloaded`)."""

    def __init__(self, depth: int, requested: int, max_depth: int) -> None:
        super().__init__(f"{depth} jobs queued, {requested} more would pass {max_depth}")
        self.depth = depth
        self.requested = requested
        self.max_depth = max_depth


@dataclass(frozen=True, slots=True)
class NewBatch:
    """A batch as the producer queues it: its jobs' encoded bodies, in index order."""

    id: str
    priority: str
    bodies: list[bytes]
    #: Epoch seconds after which workers answer its unstarted jobs ``deadline``.
    deadline_at: float | None = None


@dataclass(frozen=True, slots=True)
class Delivery:
    """One job handed to a worker (read for the first time, or claimed from another)."""

    priority: str
    message_id: str
    batch_id: str
    index: int
    body: bytes


@dataclass(frozen=True, slots=True)
class Start:
    """What a worker learns as it starts a delivery: this is attempt ``attempt`` (1 the
    first time; a claim after a worker died makes it 2), the batch's state, and whether
    the job already has a result (a claim raced a slow worker that then finished)."""

    attempt: int
    cancelled: bool
    deadline_at: float | None
    submitted_at: float
    done: bool


#: A job as a worker takes it: the message, and what its taking counted and read.
Taken = tuple[Delivery, Start]


@dataclass(frozen=True, slots=True)
class Stored:
    """A result as stored: ``cursor`` resumes reading the batch's results after it."""

    batch_id: str
    cursor: str
    index: int
    body: bytes


class Broker(Protocol):
    """What the producer (:class:`~assay.executor.queue.QueueExecutor`) and the workers
    need from a message broker."""

    def enqueue(self, batch: NewBatch, max_depth: int) -> None:
        """Record the batch and queue its jobs (indices 0..n-1), all or none: raises
        :class:`QueueFull` when the unfinished jobs of every class plus these would pass
        ``max_depth``."""

    def batch_size(self, batch_id: str) -> int | None:
        """The batch's number of jobs, or None when it is unknown (or expired)."""

    def cancel(self, batch_id: str) -> None:
        """Mark the batch cancelled: workers answer its unstarted jobs ``cancelled``."""

    def read(self, consumer: str, count: int, block_s: float) -> list[Taken]:
        """Up to ``count`` new jobs, the most urgent class first, each with an attempt
        counted and its batch's state (:class:`Start`); waits up to ``block_s`` for the
        first when there is none."""

    def claim(self, consumer: str, min_idle_s: float, count: int) -> list[Taken]:
        """Up to ``count`` jobs pending on any worker for ``min_idle_s`` or longer (a
        worker that died or stalled), now pending on ``consumer``, as :meth:`read`."""

    def touch(self, consumer: str, deliveries: list[Delivery]) -> None:
        """Reset the idle time of jobs ``consumer`` still runs, so none is claimed while
        its worker lives (however long the job)."""

    def finish(self, results: list[tuple[Delivery, bytes]]) -> list[bool]:
        """Store each result unless its job has one, then acknowledge the job (one atomic
        step per job: a worker that dies before it leaves the job pending, never a job
        acknowledged without a result). True for each result stored now."""

    def results(self, cursors: dict[str, str], block_s: float) -> list[Stored]:
        """Results stored after each batch's cursor (``"0"``: from the first); waits up
        to ``block_s`` when there are none."""

    def depth(self) -> dict[str, int]:
        """Unfinished jobs (queued or running) of each class."""

    def lag(self) -> dict[str, int]:
        """Jobs of each class no worker has read yet."""

    def close(self) -> None: ...


@dataclass
class _Pending:
    consumer: str
    since: float


@dataclass
class _Batch:
    size: int
    deadline_at: float | None
    submitted_at: float
    cancelled: bool = False
    attempts: dict[int, int] = field(default_factory=dict)
    done: set[int] = field(default_factory=set)
    out: list[tuple[int, bytes]] = field(default_factory=list)


class InMemoryBroker:
    """The broker contract in one process (for tests): same semantics as Redis Streams with
    one consumer group, including visibility timeouts on ``clock``."""

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock or time.monotonic
        self._cond = threading.Condition()
        self._ids = itertools.count(1)
        #: Unfinished jobs of each class by message id, and those not read yet.
        self._jobs: dict[str, dict[str, tuple[str, int, bytes]]] = {p: {} for p in PRIORITIES}
        self._unread: dict[str, collections.deque[str]] = {
            p: collections.deque() for p in PRIORITIES
        }
        self._pending: dict[str, _Pending] = {}
        self._batches: dict[str, _Batch] = {}
        self.claims = 0

    def enqueue(self, batch: NewBatch, max_depth: int) -> None:
        with self._cond:
            depth = sum(len(j) for j in self._jobs.values())
            if depth + len(batch.bodies) > max_depth:
                raise QueueFull(depth, len(batch.bodies), max_depth)
            self._batches[batch.id] = _Batch(len(batch.bodies), batch.deadline_at, time.time())
            for i, body in enumerate(batch.bodies):
                mid = str(next(self._ids))
                self._jobs[batch.priority][mid] = (batch.id, i, body)
                self._unread[batch.priority].append(mid)
            self._cond.notify_all()

    def batch_size(self, batch_id: str) -> int | None:
        with self._cond:
            b = self._batches.get(batch_id)
            return None if b is None else b.size

    def cancel(self, batch_id: str) -> None:
        with self._cond:
            if batch_id in self._batches:
                self._batches[batch_id].cancelled = True

    def _delivery(self, priority: str, mid: str, consumer: str) -> Delivery:
        self._pending[mid] = _Pending(consumer, self._clock())
        batch_id, index, body = self._jobs[priority][mid]
        return Delivery(priority, mid, batch_id, index, body)

    def read(self, consumer: str, count: int, block_s: float) -> list[Taken]:
        with self._cond:
            if not any(self._unread.values()):
                self._cond.wait(block_s)
            out: list[Delivery] = []
            for p in PRIORITIES:
                while self._unread[p] and len(out) < count:
                    out.append(self._delivery(p, self._unread[p].popleft(), consumer))
            return self._start(out)

    def claim(self, consumer: str, min_idle_s: float, count: int) -> list[Taken]:
        with self._cond:
            now = self._clock()
            out: list[Delivery] = []
            for p in PRIORITIES:
                for mid in list(self._jobs[p]):
                    pend = self._pending.get(mid)
                    if len(out) < count and pend is not None and now - pend.since >= min_idle_s:
                        out.append(self._delivery(p, mid, consumer))
            self.claims += len(out)
            return self._start(out)

    def touch(self, consumer: str, deliveries: list[Delivery]) -> None:
        with self._cond:
            for d in deliveries:
                pend = self._pending.get(d.message_id)
                if pend is not None:
                    self._pending[d.message_id] = _Pending(consumer, self._clock())

    def _start(self, deliveries: list[Delivery]) -> list[Taken]:
        with self._cond:
            out = []
            for d in deliveries:
                b = self._batches[d.batch_id]
                b.attempts[d.index] = b.attempts.get(d.index, 0) + 1
                start = Start(
                    b.attempts[d.index],
                    b.cancelled,
                    b.deadline_at,
                    b.submitted_at,
                    d.index in b.done,
                )
                out.append((d, start))
            return out

    def finish(self, results: list[tuple[Delivery, bytes]]) -> list[bool]:
        with self._cond:
            stored = []
            for d, body in results:
                b = self._batches[d.batch_id]
                new = d.index not in b.done
                if new:
                    b.done.add(d.index)
                    b.out.append((d.index, body))
                stored.append(new)
                self._pending.pop(d.message_id, None)
                self._jobs[d.priority].pop(d.message_id, None)
            self._cond.notify_all()
            return stored

    def results(self, cursors: dict[str, str], block_s: float) -> list[Stored]:
        deadline = time.monotonic() + block_s
        with self._cond:
            while True:
                out = []
                for batch_id, cursor in cursors.items():
                    b = self._batches.get(batch_id)
                    start = 0 if cursor == "0" else int(cursor)
                    for pos in range(start, len(b.out) if b is not None else 0):
                        assert b is not None
                        index, body = b.out[pos]
                        out.append(Stored(batch_id, str(pos + 1), index, body))
                left = deadline - time.monotonic()
                if out or left <= 0:
                    return out
                self._cond.wait(left)

    def depth(self) -> dict[str, int]:
        with self._cond:
            return {p: len(self._jobs[p]) for p in PRIORITIES}

    def lag(self) -> dict[str, int]:
        with self._cond:
            return {p: len(self._unread[p]) for p in PRIORITIES}

    def close(self) -> None:
        with self._cond:
            self._cond.notify_all()
