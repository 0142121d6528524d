"""A fleet worker: jobs from the broker, run on this machine's executor, results back.

The loop keeps at most ``slots + prefetch`` jobs in hand. Each round it claims jobs another
worker left idle past the visibility timeout (that worker died or stalled), reads new ones
(the most urgent class first), each with an attempt counted as it is taken, and submits
it to its :class:`~assay.executor.LocalExecutor`, which runs it with the local executor's
own rules (retries of ``sandbox_error``, the result cache, records, metrics). A finisher
thread stores each result and acknowledges its job in one atomic step per job, many jobs per
round trip: a worker killed at any moment leaves its unfinished jobs pending, to be claimed,
and never a job acknowledged without its result. Jobs still in hand are touched every third
of the visibility timeout, so a long job is not claimed from a live worker.

A job that never reaches the program gets a result anyway, with no reward: ``cancelled`` or
``deadline`` when its batch ended first, and ``sandbox_error`` (our side's fault) when its
message is malformed, this worker cannot run it, or ``max_attempts`` workers stopped while
running it.
"""

from __future__ import annotations

import logging
import os
import queue
import socket
import threading
import time
from dataclasses import replace

from ... import defaults
from ...errors import AssayError
from ...scheduler import HIGH, LOW, NORMAL
from ...telemetry import Metrics
from ..local import LocalExecutor
from ..protocol import Executor
from ..types import Job, JobResult, Outcome
from ._wire import Malformed, decode_job, encode_result
from .broker import Broker, Delivery, Start, Taken

log = logging.getLogger("assay.executor.queue")

_PRIORITY = {"high": HIGH, "normal": NORMAL, "low": LOW}
#: Results stored per round trip to the broker.
_FINISH_BATCH = 256


class Worker:
    """Serves one broker with ``executor``'s slots until :meth:`stop` (then drains).

    >>> with LocalExecutor() as ex:                                 # doctest: +SKIP
    ...     Worker(RedisBroker("redis://:token@redis:6379/0"), ex).run()
    """

    def __init__(
        self,
        broker: Broker,
        executor: LocalExecutor,
        *,
        name: str | None = None,
        prefetch: int = defaults.QUEUE_PREFETCH,
        visibility_s: float = defaults.QUEUE_VISIBILITY_S,
        max_attempts: int = defaults.QUEUE_MAX_ATTEMPTS,
        metrics: Metrics | None = None,
    ) -> None:
        self.broker = broker
        self.executor = executor
        self.name = name or f"{socket.gethostname()}-{os.getpid()}"
        self.capacity = executor.slots + max(0, prefetch)
        self.visibility_s = visibility_s
        self.max_attempts = max_attempts
        self.metrics = metrics or executor.metrics
        self.metrics.bind_broker(lambda: (broker.depth(), broker.lag()))
        self._inflight: dict[str, Delivery] = {}
        self._cond = threading.Condition()
        self._done: queue.SimpleQueue[tuple[Delivery, bytes] | None] = queue.SimpleQueue()
        self._stop = threading.Event()
        #: Jobs finished (results stored by this worker), claims, results dropped as second.
        self.stats = {"finished": 0, "claimed": 0, "duplicates": 0}

    def stop(self) -> None:
        """Take no new job; :meth:`run` returns once the jobs in hand have their results."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()

    def run(self) -> None:
        finisher = threading.Thread(target=self._finish_loop, name="assay-finisher", daemon=True)
        finisher.start()
        next_claim = next_touch = time.monotonic()
        backoff = 0.1
        while not self._stop.is_set():
            try:
                with self._cond:
                    self._cond.wait_for(
                        lambda: len(self._inflight) < self.capacity or self._stop.is_set(),
                        defaults.QUEUE_POLL_S,
                    )
                    free = self.capacity - len(self._inflight)
                now = time.monotonic()
                if now >= next_touch:
                    with self._cond:
                        held = list(self._inflight.values())
                    self.broker.touch(self.name, held)
                    next_touch = now + self.visibility_s / 3
                if free <= 0 or self._stop.is_set():
                    continue
                got: list[Taken] = []
                if now >= next_claim:
                    got = self.broker.claim(self.name, self.visibility_s, free)
                    # A full claim may have left more behind: look again next round.
                    full = len(got) == free
                    next_claim = now if full else now + max(0.05, self.visibility_s / 4)
                    if got:
                        self.stats["claimed"] += len(got)
                        self.metrics.broker_claimed(len(got))
                if len(got) < free:
                    block = 0.0 if got else defaults.QUEUE_POLL_S
                    got += self.broker.read(self.name, free - len(got), block)
                if got:
                    self._take(got)
                backoff = 0.1
            except Exception:
                log.exception(
                    "worker %s: broker call failed; retrying in %.1f s", self.name, backoff
                )
                self._stop.wait(backoff)
                backoff = min(5.0, backoff * 2)
        with self._cond:  # drain: every job in hand gets its result stored
            self._cond.wait_for(lambda: not self._inflight)
        self._done.put(None)
        finisher.join()

    # -- taking jobs ------------------------------------------------------------------------
    def _take(self, taken: list[Taken]) -> None:
        with self._cond:
            fresh = [(d, s) for d, s in taken if d.message_id not in self._inflight]
            for d, _ in fresh:
                self._inflight[d.message_id] = d
        now = time.time()
        #: Jobs to run, grouped into one local batch per (class, stop rule, fleet batch).
        groups: dict[tuple[str, bool, str], list[tuple[Delivery, Start, Job]]] = {}
        for d, s in fresh:
            why = self._unrunnable(d, s, now)
            if why is not None:
                self._unrun(d, s, why, now)
                continue
            try:
                job, stop_on_failure = decode_job(d.body)
            except Malformed as exc:
                self._unrun(d, s, ("done", f"this worker could not read the job: {exc}"), now)
                continue
            groups.setdefault((d.priority, stop_on_failure, d.batch_id), []).append((d, s, job))
        for (priority, stop_on_failure, batch_id), entries in groups.items():
            self._submit(entries, priority, stop_on_failure, batch_id, now)

    def _unrun(self, d: Delivery, s: Start, why: tuple[Outcome, str], now: float) -> None:
        """A job that does not reach the program still gets its one result: ``cancelled``
        or ``deadline``, else ``sandbox_error`` (never the program's fault, no reward)."""
        outcome, reason = why
        verdict = "sandbox_error" if outcome == "done" else None
        r = JobResult(index=0, job_id="", outcome=outcome, verdict=verdict, reason=reason[:500])
        self._answer(d, s, r, now)

    def _unrunnable(self, d: Delivery, s: Start, now: float) -> tuple[Outcome, str] | None:
        if s.done:
            return ("done", "")  # its result is stored already: only acknowledged
        if s.cancelled:
            return ("cancelled", "the batch was cancelled before the job started")
        if s.deadline_at is not None and now >= s.deadline_at:
            return ("deadline", "the batch deadline passed before the job started")
        if s.attempt > self.max_attempts:
            return (
                "done",
                f"{s.attempt - 1} workers stopped while running this job; not tried again",
            )
        return None

    def _submit(
        self,
        entries: list[tuple[Delivery, Start, Job]],
        priority: str,
        stop_on_failure: bool,
        batch_id: str,
        taken: float,
    ) -> None:
        def deliver(r: JobResult) -> None:
            d, s, _ = entries[r.index]
            self._answer(d, s, r, taken)

        try:
            self.executor.submit(
                [job for _, _, job in entries],
                priority=_PRIORITY[priority],
                caller=batch_id,
                stop_on_failure=stop_on_failure,
                on_result=deliver,
            )
        except AssayError as exc:
            if len(entries) > 1:  # find the job at fault: the others run
                for entry in entries:
                    self._submit([entry], priority, stop_on_failure, batch_id, taken)
                return
            # A job this worker cannot run (a language whose toolchain this host lacks):
            # the environment's fault as far as the program is concerned.
            d, s, _ = entries[0]
            log.warning("worker %s: job %s-%d not run: %s", self.name, d.batch_id, d.index, exc)
            self._unrun(d, s, ("done", f"this worker could not run the job: {exc}"), taken)

    def _answer(self, d: Delivery, s: Start, r: JobResult, taken: float) -> None:
        """``r`` (the local executor's, or one made here) as the job's result in the fleet:
        its attempts count the workers that started it before this one."""
        attempts = s.attempt - 1 + max(1, r.attempts) if r.verdict is not None else r.attempts
        result = replace(
            r,
            index=d.index,
            job_id=f"{d.batch_id}-{d.index}",
            source_job_id=f"{d.batch_id}-{d.index}",
            attempts=attempts if r.outcome == "done" else 0,
            reward=None if r.verdict == "sandbox_error" else r.reward,
            queue_wait_s=max(0.0, taken - s.submitted_at) + r.queue_wait_s,
            worker=self.name,
        )
        self._done.put((d, encode_result(result)))

    # -- storing results --------------------------------------------------------------------
    def _finish_loop(self) -> None:
        stopping = False
        while not stopping:
            first = self._done.get()
            if first is None:
                return
            items = [first]
            while len(items) < _FINISH_BATCH:
                try:
                    nxt = self._done.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stopping = True
                    break
                items.append(nxt)
            stored = self._store(items)
            fresh = sum(stored)
            self.stats["finished"] += fresh
            self.stats["duplicates"] += len(items) - fresh
            self.metrics.broker_finished(fresh, len(items) - fresh)
            with self._cond:
                for d, _ in items:
                    self._inflight.pop(d.message_id, None)
                self._cond.notify_all()

    def _store(self, items: list[tuple[Delivery, bytes]]) -> list[bool]:
        """Store until the broker takes them: a result is never dropped (a worker that dies
        meanwhile leaves its jobs pending, to run again elsewhere)."""
        backoff = 0.1
        while True:
            try:
                return self.broker.finish(items)
            except Exception:
                log.exception(
                    "worker %s: storing %d results failed; retrying", self.name, len(items)
                )
                time.sleep(backoff)
                backoff = min(5.0, backoff * 2)


def _local_is_an_executor(ex: LocalExecutor) -> Executor:
    return ex  # mypy checks here that the local executor offers the executor API
