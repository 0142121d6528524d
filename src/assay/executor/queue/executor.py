"""``QueueExecutor``: the executor's API with the jobs run by a worker fleet behind a broker.

``submit`` validates and encodes a batch, queues all of it in one atomic broker call on the
stream of its priority class, and returns a :class:`~assay.executor.BatchHandle` that a
collector thread fills as workers store results (in the order they finish; iterate,
``gather``, ``async for``, callbacks, as with the local executor). Results live in the
broker under the batch id until they expire, so a trainer that restarts calls
:meth:`QueueExecutor.collect` with the ids it saved and gets every result again, those
stored while it was down included.

**Backpressure**: the broker holds at most ``max_depth`` unfinished jobs. A batch that
does not fit waits up to ``block_s`` for the workers to make room, then raises
:class:`~assay.errors.Overloaded` with nothing queued; a batch larger than ``max_depth``
can never fit and raises :class:`~assay.errors.ValidationError` at once.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Sequence
from typing import Unpack

from ... import defaults
from ...errors import ClosedError, Overloaded, ValidationError
from ...scheduler import NORMAL
from ...telemetry import Metrics
from .._deadlines import Reaper
from ..backend import InMemoryBackend
from ..batch import BatchHandle, Callback, ended, new_batch_id
from ..protocol import BatchRuns, Executor, SubmitOptions
from ..types import Execution, Job, Outcome
from ._wire import decode_result, encode_job
from .broker import Broker, NewBatch, QueueFull, priority_class

log = logging.getLogger("assay.executor.queue")


def _never(job: Job) -> Execution:  # the describer's backend runs nothing
    raise AssertionError("the queue executor runs no job itself")


class QueueExecutor(BatchRuns):
    """Submits batches to a worker fleet (``assay worker``) through a broker.

    >>> with QueueExecutor("redis://:token@redis:6379/0") as ex:   # doctest: +SKIP
    ...     handle = ex.submit([Submission(problem, code)] * 1000)
    ...     save(handle.id)                        # collect(handle.id) after a restart
    ...     for r in handle:
    ...         print(r.index, r.verdict, r.reward, r.attempts)

    ``url``: a Redis URL (``redis://[:token@]host:port/db``, ``rediss://`` for TLS) or a
    :class:`~assay.executor.queue.broker.Broker` (e.g. the in-memory one in tests).
    ``prefix`` names the fleet's keys (workers must use the same). ``max_depth`` and
    ``block_s``: backpressure, see the module. ``metrics``: where submitted, completed and
    rejected jobs and the broker's depth and lag are counted.
    """

    def __init__(
        self,
        url: str | Broker,
        *,
        prefix: str = "assay",
        max_depth: int = defaults.QUEUE_MAX_DEPTH,
        block_s: float = defaults.QUEUE_BLOCK_S,
        metrics: Metrics | None = None,
    ) -> None:
        if max_depth < 1:
            raise ValidationError("max_depth", "must be at least 1")
        if block_s < 0:
            raise ValidationError("block_s", "must be >= 0")
        if isinstance(url, str):
            from ._redis import RedisBroker

            self.broker: Broker = RedisBroker(url, prefix=prefix)
        else:
            self.broker = url
        self.max_depth = max_depth
        self.block_s = block_s
        self.metrics = metrics or Metrics()
        broker = self.broker
        self.metrics.bind_broker(lambda: (broker.depth(), broker.lag()))
        self._describe = InMemoryBackend(_never).describe  # validation and languages only
        self._cond = threading.Condition()
        self._handles: dict[str, BatchHandle] = {}
        self._cursors: dict[str, str] = {}
        self._closed = False
        self._reaper = Reaper(lambda handle: self._end(handle, "deadline"))
        self._collector = threading.Thread(
            target=self._collect_loop, name="assay-queue-collect", daemon=True
        )
        self._collector.start()

    # -- public API -------------------------------------------------------------------------
    def submit(self, jobs: Sequence[Job], **options: Unpack[SubmitOptions]) -> BatchHandle:
        """Queue a batch on the broker; results stream from the returned handle (its ``id``
        is the batch id :meth:`collect` takes). Raises :class:`ValidationError` naming
        ``jobs[i]`` for a bad job, and :class:`~assay.errors.Overloaded` (nothing queued)
        when the broker stays too deep for ``block_s``. The options are the local
        executor's (:class:`~assay.executor.protocol.SubmitOptions`); ``caller`` is accepted
        for that API, fairness between callers being each worker's."""
        priority = options.get("priority", NORMAL)
        deadline_s = options.get("deadline_s")
        stop_on_failure = options.get("stop_on_failure", False)
        on_result = options.get("on_result")
        if self._closed:
            raise ClosedError("executor is closed")
        if deadline_s is not None and not deadline_s > 0:
            raise ValidationError("deadline_s", "must be positive")
        if len(jobs) > self.max_depth:
            raise ValidationError(
                "jobs",
                f"a batch of {len(jobs)} can never fit the queue (max_depth {self.max_depth})",
            )
        bodies: list[bytes] = []
        languages: collections.Counter[str] = collections.Counter()
        for i, job in enumerate(jobs):
            try:
                languages[self._describe(job).language] += 1
                bodies.append(encode_job(job, stop_on_failure))
            except ValidationError as exc:
                raise ValidationError(f"jobs[{i}].{exc.field}", exc.message) from None
        handle = BatchHandle(new_batch_id(), len(jobs), self._cancel)
        if on_result is not None:
            handle.add_callback(on_result)
        if not jobs:
            return handle
        deadline_at = None if deadline_s is None else time.time() + deadline_s
        self._enqueue(handle.id, priority_class(priority), bodies, deadline_at)
        for language, n in languages.items():
            self.metrics.submitted(language, n)
        self._follow(handle)
        if deadline_s is not None:
            self._reaper.add(time.monotonic() + deadline_s, 0, handle)
        return handle

    def collect(self, batch_id: str, *, on_result: Callback | None = None) -> BatchHandle:
        """The handle of a batch submitted earlier (by this process or one before it that
        stopped): every result already stored comes first, then the rest as they finish.
        Raises :class:`ValidationError` when the broker knows no such batch (never
        submitted, or expired after ``QUEUE_RESULT_TTL_S``)."""
        if self._closed:
            raise ClosedError("executor is closed")
        with self._cond:
            if batch_id in self._handles:
                raise ValidationError("batch_id", "this executor is collecting it already")
        size = self.broker.batch_size(batch_id)
        if size is None:
            raise ValidationError("batch_id", f"no batch {batch_id!r} in the queue (or expired)")
        handle = BatchHandle(batch_id, size, self._cancel)
        if on_result is not None:
            handle.add_callback(on_result)
        self._follow(handle)
        return handle

    def close(self) -> None:
        """Stop collecting; unfinished batches stay in the broker (the workers finish them)
        and can be collected by id later."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        self._reaper.close()
        self._collector.join()
        self.broker.close()

    def __enter__(self) -> QueueExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- queueing ---------------------------------------------------------------------------
    def _enqueue(
        self, batch_id: str, priority: str, bodies: list[bytes], deadline_at: float | None
    ) -> None:
        give_up = time.monotonic() + self.block_s
        pause = 0.01
        while True:
            try:
                self.broker.enqueue(
                    NewBatch(batch_id, priority, bodies, deadline_at), self.max_depth
                )
                return
            except QueueFull as full:
                left = give_up - time.monotonic()
                if left <= 0 or self._closed:
                    self.metrics.rejected(len(bodies))
                    raise Overloaded(
                        full.depth, self.max_depth, len(bodies), max(1.0, self.block_s)
                    ) from None
                time.sleep(min(pause, left))
                pause = min(0.5, pause * 2)

    def _follow(self, handle: BatchHandle) -> None:
        with self._cond:
            self._handles[handle.id] = handle
            self._cursors[handle.id] = "0"
            self._cond.notify_all()

    # -- results ----------------------------------------------------------------------------
    def _collect_loop(self) -> None:
        backoff = 0.1
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._closed or bool(self._cursors))
                if self._closed:
                    return
                cursors = dict(self._cursors)
            try:
                stored = self.broker.results(cursors, defaults.QUEUE_POLL_S)
                backoff = 0.1
            except Exception:
                log.exception("reading results from the broker failed; retrying in %.1f s", backoff)
                time.sleep(backoff)
                backoff = min(5.0, backoff * 2)
                continue
            for s in stored:
                with self._cond:
                    handle = self._handles.get(s.batch_id)
                    if handle is None:
                        continue
                    self._cursors[s.batch_id] = s.cursor
                result = decode_result(s.body, s.index, f"{s.batch_id}-{s.index}")
                if 0 <= s.index < handle.size and handle._deliver(result):
                    self.metrics.completed("any", result.verdict or result.outcome)
                if handle.done:
                    self._forget(handle)

    def _forget(self, handle: BatchHandle) -> None:
        with self._cond:
            if self._handles.get(handle.id) is handle:
                del self._handles[handle.id]
                self._cursors.pop(handle.id, None)

    # -- deadlines and cancellation ---------------------------------------------------------
    def _cancel(self, handle: BatchHandle) -> None:
        self.broker.cancel(handle.id)
        self._end(handle, "cancelled")

    def _end(self, handle: BatchHandle, outcome: Outcome) -> None:
        """Every job of ``handle`` without a result gets ``outcome`` (no verdict, no reward);
        workers answer its unstarted jobs the same way in the broker."""
        why = "the batch deadline passed" if outcome == "deadline" else "the batch was cancelled"
        for i in range(handle.size):
            handle._deliver(
                ended(i, f"{handle.id}-{i}", outcome, f"{why} before the job finished", 0.0)
            )
        self._forget(handle)


def _is_an_executor(ex: QueueExecutor) -> Executor:
    return ex  # mypy checks here that QueueExecutor offers the executor API
