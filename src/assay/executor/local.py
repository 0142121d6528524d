"""The local executor: batches from many callers, run on this machine's sandboxes.

One worker thread per slot pulls the next task from the :class:`~assay.scheduler.FairQueue`
(priority, fairness, longest-first) and runs it on the backend. Around that loop:

- **Dedup and cache**: a job whose content hash matches a finished job takes its result;
  one matching a queued or running job subscribes to it. Identical programs run once.
- **Split**: when a batch has fewer jobs than slots, a long submission's tests are spread
  over several slots and the parts' judgements combined.
- **Retries**: only ``sandbox_error`` (our fault) is retried, at most ``retries`` times; the
  attempt count is in the result and the record. The program's own failures never are.
- **Deadlines and cancellation**: unfinished jobs of the batch get a ``deadline`` or
  ``cancelled`` result with ``reward=None`` at once; queued work nobody waits for is dropped.
- **Records and metrics** for every job (:mod:`assay.telemetry`).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import defaults
from ..errors import ValidationError
from ..reward import RewardFn
from ..runner import Runner
from ..scheduler import NORMAL, FairQueue, ResultCache, RuntimeEstimator, Task
from ..scheduler.queue import Order
from ..telemetry import Metrics, NullWriter, RecordWriter, open_writer
from . import _records
from .backend import Backend, JobInfo, SandboxBackend
from .batch import BatchHandle, Callback, ended
from .types import Execution, Job, JobResult, Outcome

log = logging.getLogger("assay.executor")


@dataclass(eq=False)
class _Sub:
    """One batch entry waiting for a job's result."""

    handle: BatchHandle
    index: int
    caller: str
    priority: int
    deadline_at: float | None
    submitted_at: float
    submitted_mono: float
    follower: bool  # subscribed to an identical job already queued or running


@dataclass(eq=False)
class _Job:
    id: str
    job: Job
    info: JobInfo
    stop_on_failure: bool
    subs: list[_Sub]
    #: The cache and dedup key: the job's content, and whether it stops at a failure (such
    #: a result lacks the tests after the failure, so it only stands for the same request).
    key: str = ""
    parts: list[tuple[list[int], Job]] | None = None
    results: dict[int, Execution] = field(default_factory=dict)
    tasks: list[Task] = field(default_factory=list)
    attempts: int = 0
    work_s: float = 0.0
    first_wait_s: float | None = None
    started_at: float | None = None
    worker: str = ""
    done: bool = False


@dataclass(eq=False)
class _Part:
    job: _Job
    index: int
    payload: Job
    attempt: int


class _Memory:
    """A budget of MiB held by running jobs; a job larger than the budget runs alone."""

    def __init__(self, budget_mb: int) -> None:
        self.budget = budget_mb
        self.used = 0
        self._cond = threading.Condition()

    def acquire(self, mb: int) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self.used == 0 or self.used + mb <= self.budget)
            self.used += mb

    def release(self, mb: int) -> None:
        with self._cond:
            self.used -= mb
            self._cond.notify_all()


def _memory_budget() -> int:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(int(line.split()[1]) / 1024 * defaults.EXECUTOR_MEMORY_SHARE)
    except OSError:
        pass
    return 4096


class LocalExecutor:
    """Runs batches of jobs on this machine. Thread-safe; use as a context manager.

    >>> with LocalExecutor() as ex:                                 # doctest: +SKIP
    ...     for r in ex.submit([Submission(problem, code)] * 8):
    ...         print(r.index, r.verdict, r.reward)
    """

    def __init__(
        self,
        runner: Runner | None = None,
        *,
        slots: int | None = None,
        memory_budget_mb: int | None = None,
        max_queued: int = defaults.EXECUTOR_MAX_QUEUED,
        cache: bool = True,
        cache_entries: int = defaults.EXECUTOR_CACHE_ENTRIES,
        retries: int = defaults.EXECUTOR_RETRIES,
        split: bool = True,
        order: Order = "lpt",
        records: str | Path | RecordWriter | None = None,
        state_dir: str | Path | None = None,
        estimator: RuntimeEstimator | None = None,
        reward: RewardFn | None = None,
        backend: Backend | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        if slots is not None and slots < 1:
            raise ValidationError("slots", "must be at least 1")
        if retries < 0:
            raise ValidationError("retries", "must be >= 0")
        self.slots = slots or len(os.sched_getaffinity(0))
        self._own_runner = runner is None and backend is None
        self.runner = runner if runner is not None or backend is not None else Runner()
        if backend is None:
            assert self.runner is not None
            backend = SandboxBackend(self.runner, reward)
        self.backend = backend
        self.retries = retries
        self.split = split
        self.queue = FairQueue(max_queued, order)
        self.cache: ResultCache[Execution] | None = ResultCache(cache_entries) if cache else None
        state = Path(state_dir) if state_dir is not None else defaults.state_dir()
        self.estimator = estimator or RuntimeEstimator(state / "estimates.sqlite")
        self.records: RecordWriter = (
            records if not isinstance(records, str | Path | None) else open_writer(records)
        )
        self.metrics = metrics or Metrics()
        self.metrics.bind_queue(self.queue.gauges)
        self.metrics.bind_workers(lambda: self._busy, self.slots)
        self._memory = _Memory(memory_budget_mb or _memory_budget())
        self._lock = threading.Lock()
        self._inflight: dict[str, _Job] = {}
        self._busy = 0
        self._batches = itertools.count()
        # Ids unique across executors and restarts without a urandom call per id.
        self._id_prefix = os.urandom(4).hex()
        self._ids = itertools.count()
        self._deadlines: list[tuple[float, int, BatchHandle]] = []
        self._handles: dict[str, tuple[BatchHandle, list[_Job | None], str, int]] = {}
        self._closed = False
        self._wake = threading.Condition(self._lock)
        if isinstance(self.backend, SandboxBackend):
            # Two armed sandboxes per slot: a slot that just finished a run re-arms in the
            # background while the worker takes the other, so a burst finds them ready.
            sandbox = self.backend.runner.sandbox
            sandbox.warm_up(min(2 * self.slots, sandbox.pool_size))
        self._workers = [
            threading.Thread(target=self._work, args=(f"{socket.gethostname()}/w{i}",), daemon=True)
            for i in range(self.slots)
        ]
        self._reaper = threading.Thread(target=self._reap, daemon=True)
        for t in [*self._workers, self._reaper]:
            t.start()

    def _new_id(self) -> str:
        return f"{self._id_prefix}{next(self._ids):08x}"

    # -- public API -------------------------------------------------------------------------

    def submit(
        self,
        jobs: Sequence[Job],
        *,
        priority: int = NORMAL,
        deadline_s: float | None = None,
        caller: str = "default",
        stop_on_failure: bool = False,
        on_result: Callback | None = None,
    ) -> BatchHandle:
        """Queue a batch; results stream from the returned handle as jobs finish.

        Raises :class:`~assay.errors.Overloaded` (nothing queued) when the queue cannot take
        the whole batch, and :class:`ValidationError` naming ``jobs[i]`` for a bad job.
        """
        if self._closed:
            raise ValidationError("executor", "closed")
        if deadline_s is not None and deadline_s <= 0:
            raise ValidationError("deadline_s", "must be positive")
        infos: list[JobInfo] = []
        for i, job in enumerate(jobs):
            try:
                infos.append(self.backend.describe(job))
            except ValidationError as exc:
                raise ValidationError(f"jobs[{i}].{exc.field}", exc.message) from None
        now, mono = time.time(), time.monotonic()
        batch_seq = next(self._batches)
        handle = BatchHandle(self._new_id(), len(jobs), self._cancel)
        if on_result is not None:
            handle.add_callback(on_result)
        if not jobs:
            return handle  # already done: nothing to queue, wait for or record
        deadline_at = None if deadline_s is None else now + deadline_s
        hits: list[tuple[_Sub, JobInfo, Execution]] = []
        new_jobs: list[_Job] = []
        entries: list[_Job | None] = []
        with self._lock:
            fresh: dict[str, _Job] = {}
            for i, (job, info) in enumerate(zip(jobs, infos, strict=True)):
                sub = _Sub(handle, i, caller, priority, deadline_at, now, mono, False)
                key = info.cache_key + ("/stop" if stop_on_failure else "")
                cached = self.cache.get(key) if self.cache is not None else None
                if cached is not None:
                    hits.append((sub, info, cached))
                    entries.append(None)
                    continue
                twin = (
                    (fresh.get(key) or self._inflight.get(key)) if self.cache is not None else None
                )
                if twin is not None and not twin.done:
                    sub.follower = True
                    twin.subs.append(sub)
                    entries.append(twin)
                    continue
                j = _Job(self._new_id(), job, info, stop_on_failure, [sub], key=key)
                fresh[key] = j
                new_jobs.append(j)
                entries.append(j)
            tasks = self._plan(new_jobs, priority, caller, batch_seq)
            try:
                self.queue.put_many(tasks)
            except Exception:
                for j in new_jobs:  # roll back followers attached to jobs of this batch too
                    j.subs.clear()
                for e in entries:
                    if e is not None and e not in new_jobs:
                        e.subs[:] = [s for s in e.subs if s.handle is not handle]
                self.metrics.rejected(len(jobs))
                raise
            if self.cache is not None:
                self._inflight.update(fresh)
            self._handles[handle.id] = (handle, entries, caller, priority)
            if deadline_s is not None:
                heapq.heappush(self._deadlines, (mono + deadline_s, batch_seq, handle))
                self._wake.notify_all()
        for info in infos:
            self.metrics.submitted(info.language)
        if self.cache is not None:
            shared = len(jobs) - len(new_jobs)
            for _ in range(shared):
                self.metrics.cache_hit()
            for _ in range(len(new_jobs)):
                self.metrics.cache_miss()
        for sub, info, ex in hits:
            self._deliver(sub, info, ex, job_id="cached", attempts=0, run_s=0.0, cache_hit=True)
        return handle

    def run(self, jobs: Sequence[Job], **kw: Any) -> list[JobResult]:
        """Submit and wait: results in submission order."""
        return self.submit(jobs, **kw).gather()

    async def run_async(self, jobs: Sequence[Job], **kw: Any) -> list[JobResult]:
        return await self.submit(jobs, **kw).gather_async()

    def close(self) -> None:
        """Finish queued work, stop the workers, flush records and estimates."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._wake.notify_all()
        self.queue.close()
        for t in self._workers:
            t.join()
        self._reaper.join()
        self.estimator.close()
        self.records.close()
        if self._own_runner and self.runner is not None:
            self.runner.close()

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def busy(self) -> int:
        return self._busy

    # -- planning ---------------------------------------------------------------------------
    def _plan(self, jobs: list[_Job], priority: int, caller: str, seq: int) -> list[Task]:
        """Tasks for new jobs, with estimates; long submissions split when slots would idle."""
        estimates = [self.estimator.estimate(j.info.estimate_keys, j.info.size) for j in jobs]
        spare = self.slots - self._busy - self.queue.depth()
        tasks: list[Task] = []
        for j, est in zip(jobs, estimates, strict=True):
            parts = None
            if self.split and len(jobs) < self.slots and spare > len(jobs) and j.info.size > 1:
                if est >= defaults.EXECUTOR_SPLIT_MIN_S:
                    parts = self.backend.split(j.job, max(2, spare // len(jobs)))
            j.parts = parts
            units = parts or [(list(range(j.info.size)), j.job)]
            for k, (indices, payload) in enumerate(units):
                share = est * len(indices) / max(1, j.info.size)
                t = Task(_Part(j, k, payload, 1), caller, priority, share, seq)
                j.tasks.append(t)
                tasks.append(t)
        return tasks

    # -- workers ----------------------------------------------------------------------------
    def _work(self, name: str) -> None:
        while True:
            task = self.queue.get()
            if task is None:
                return
            part: _Part = task.payload
            job = part.job
            with self._lock:
                if job.done or not job.subs:
                    continue
                self._busy += 1
            started = time.monotonic()
            wait = started - task.enqueued_at
            with self._lock:
                if job.first_wait_s is None:
                    job.first_wait_s = wait
                    job.started_at = time.time()
                job.worker = name
                job.attempts = max(job.attempts, part.attempt)
            self.metrics.observe_queue_wait(wait)
            self._memory.acquire(job.info.limits.memory_mb)
            try:
                ex = self.backend.execute(part.payload, job.stop_on_failure)
            except Exception as exc:
                log.exception("backend failed on job %s", job.id)
                ex = Execution("sandbox_error", None, f"internal error: {exc!r}"[:500])
            finally:
                self._memory.release(job.info.limits.memory_mb)
                with self._lock:
                    self._busy -= 1
            elapsed = time.monotonic() - started
            self.metrics.observe_run(elapsed)
            if ex.overhead_s is not None:
                self.metrics.observe_sandbox_start(ex.overhead_s)
            if ex.verdict == "sandbox_error":
                self.metrics.sandbox_error()
                if part.attempt <= self.retries and not self._closed:
                    self.metrics.retry()
                    log.warning("job %s attempt %d: sandbox_error, retrying", job.id, part.attempt)
                    retry = Task(
                        _Part(job, part.index, part.payload, part.attempt + 1),
                        task.caller,
                        task.priority,
                        task.estimate,
                        task.batch_seq,
                    )
                    with self._lock:
                        job.tasks.append(retry)
                        job.work_s += elapsed
                    self.queue.put_many([retry], force=True)
                    continue
            self._part_done(part, ex, elapsed)

    def _part_done(self, part: _Part, ex: Execution, elapsed: float) -> None:
        job = part.job
        with self._lock:
            job.results[part.index] = ex
            job.work_s += elapsed
            if job.parts is not None and len(job.results) < len(job.parts):
                return
            job.done = True
            if self._inflight.get(job.key) is job:
                del self._inflight[job.key]
            subs = list(job.subs)
        if job.parts is not None:
            ex = self.backend.merge(
                job.job, [(job.parts[i][0], job.results[i]) for i in range(len(job.parts))]
            )
        if ex.verdict != "sandbox_error":
            if self.cache is not None:
                self.cache.put(job.key, ex)
            self.estimator.observe(job.info.estimate_keys, job.work_s, job.info.size)
        for sub in subs:
            self._deliver(
                sub,
                job.info,
                ex,
                job_id=job.id,
                attempts=job.attempts,
                run_s=job.work_s,
                cache_hit=sub.follower,
                wait=job.first_wait_s,
                started_at=job.started_at,
                worker=job.worker,
            )

    def _deliver(
        self,
        sub: _Sub,
        info: JobInfo,
        ex: Execution,
        *,
        job_id: str,
        attempts: int,
        run_s: float,
        cache_hit: bool,
        wait: float | None = None,
        started_at: float | None = None,
        worker: str = "",
    ) -> None:
        result = JobResult(
            sub.index,
            job_id,
            "done",
            ex.verdict,
            ex.reward,
            ex.reason,
            ex.judgement,
            ex.result,
            attempts,
            cache_hit,
            wait if wait is not None and not cache_hit else 0.0,
            0.0 if cache_hit else run_s,
            worker,
        )
        if sub.handle._deliver(result):
            self._record(sub, info, result, started_at)
            self.metrics.completed(info.language, ex.verdict)
            self._forget_if_done(sub.handle)

    def _forget_if_done(self, handle: BatchHandle) -> None:
        if handle.done:
            with self._lock:
                self._handles.pop(handle.id, None)

    def _record(
        self, sub: _Sub, info: JobInfo, result: JobResult, started_at: float | None
    ) -> None:
        if isinstance(self.records, NullWriter):
            return  # records are off: do not build what nobody keeps
        try:
            self.records.write(
                _records.build(
                    info,
                    result,
                    batch_id=sub.handle.id,
                    caller=sub.caller,
                    priority=sub.priority,
                    deadline_at=sub.deadline_at,
                    submitted_at=sub.submitted_at,
                    started_at=started_at,
                    ended_at=time.time(),
                )
            )
        except Exception:
            log.exception("could not write the execution record of job %s", result.job_id)

    # -- deadlines and cancellation ----------------------------------------------------------
    def _reap(self) -> None:
        with self._lock:
            while not self._closed:
                now = time.monotonic()
                if self._deadlines and self._deadlines[0][0] <= now:
                    _, _, handle = heapq.heappop(self._deadlines)
                    self._lock.release()
                    try:
                        self._end(handle, "deadline")
                    finally:
                        self._lock.acquire()
                    continue
                timeout = self._deadlines[0][0] - now if self._deadlines else None
                self._wake.wait(timeout)

    def _cancel(self, handle: BatchHandle) -> None:
        self._end(handle, "cancelled")

    def _end(self, handle: BatchHandle, outcome: Outcome) -> None:
        """Give every unfinished job of ``handle`` an ``outcome`` result; drop orphaned work."""
        with self._lock:
            entry = self._handles.pop(handle.id, None)
            if entry is None:
                return
            jobs = entry[1]
            orphans: list[Task] = []
            ended_subs: list[tuple[_Sub, _Job]] = []
            for j in {id(j): j for j in jobs if j is not None}.values():
                if j.done:  # its result is on its way to every subscriber it had
                    continue
                mine = [s for s in j.subs if s.handle is handle]
                j.subs[:] = [s for s in j.subs if s.handle is not handle]
                ended_subs += [(s, j) for s in mine]
                if not j.subs:
                    orphans += j.tasks
                    if self._inflight.get(j.key) is j:
                        del self._inflight[j.key]
        self.queue.discard(orphans)
        why = "the batch deadline passed" if outcome == "deadline" else "the batch was cancelled"
        now = time.monotonic()
        for sub, j in ended_subs:
            started = "" if j.started_at is None else " (it was running)"
            r = ended(
                sub.index,
                j.id,
                outcome,
                f"{why} before the job finished{started}",
                now - sub.submitted_mono,
            )
            if handle._deliver(r):
                self._record(sub, j.info, r, j.started_at)
                self.metrics.completed(j.info.language, outcome)
