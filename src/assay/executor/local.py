"""The local executor: batches from many callers, run on this machine's sandboxes.

One worker thread per slot pulls the next task from the :class:`~assay.scheduler.FairQueue`
(priority, fairness, longest-first) and runs it on the backend. Around that loop:

- **Dedup and cache**: identical jobs (content hash) run once; the others take its result.
- **Split**: a long submission's tests spread over the slots a small batch leaves idle.
- **Retries**: only ``sandbox_error`` (our fault) is retried, at most ``retries`` times
  (``attempts`` in the result and record); the program's own failures never are.
- **Deadlines and cancellation**: unfinished jobs of the batch get a ``deadline`` or
  ``cancelled`` result with ``reward=None`` at once; queued work nobody waits for is dropped.
- **Records and metrics** for every job (:mod:`assay.telemetry`); **calls** (session
  steps) are admitted in the queue's order, on step slots of their own (``_calls``).
"""

from __future__ import annotations

import collections
import itertools
import logging
import os
import socket
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Unpack

from .. import defaults
from ..errors import ValidationError
from ..reward import RewardFn
from ..runner import Runner
from ..scheduler import NORMAL, FairQueue, ResultCache, RuntimeEstimator, Task
from ..telemetry import Metrics, RecordWriter, open_writer, tracing
from . import _records
from ._calls import SlotCall, SlotCalls, StepSlots
from ._deadlines import Reaper
from ._jobs import JobState, Memory, Part, Sub, memory_budget, shareable
from ._options import ExecutorOptions, with_defaults
from ._workers import start_workers
from .backend import Backend, JobInfo, SandboxBackend
from .batch import BatchHandle, Callback, ended, new_batch_id
from .protocol import BatchRuns
from .types import Execution, Job, JobResult, Outcome

log = logging.getLogger("assay.executor")


class LocalExecutor(SlotCalls, BatchRuns):
    """Runs batches of jobs on this machine. Thread-safe; use as a context manager.

    ``slots``: programs run at once (default: the CPUs this process may use). The queue,
    cache, retry and record options (``max_queued``, ``cache``, ``retries``, ``records``...)
    are :class:`~assay.executor._options.ExecutorOptions`, shared with ``RayExecutor``.

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
        reward: RewardFn | None = None,
        backend: Backend | None = None,
        **options: Unpack[ExecutorOptions],
    ) -> None:
        opts = with_defaults(type(self).__name__, options)
        retries, cache_entries, records = opts["retries"], opts["cache_entries"], opts["records"]
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
        self.split = opts["split"]
        self.queue = FairQueue(opts["max_queued"], opts["order"])
        #: Finished results by content key, with the id of the job that produced each.
        self.cache: ResultCache[tuple[Execution, str]] | None = (
            ResultCache(
                cache_entries,
                max_bytes=defaults.EXECUTOR_CACHE_BYTES,
                max_entry_bytes=defaults.EXECUTOR_CACHE_ENTRY_BYTES,
                sizeof=lambda entry: entry[0].approx_bytes() + len(entry[1]),
            )
            if opts["cache"]
            else None
        )
        state_dir = opts["state_dir"]
        state = Path(state_dir) if state_dir is not None else defaults.state_dir()
        self.estimator = opts["estimator"] or RuntimeEstimator(state / "estimates.sqlite")
        self.records: RecordWriter = (
            records if not isinstance(records, str | Path | None) else open_writer(records)
        )
        self.metrics = opts["metrics"] or Metrics()
        self.metrics.bind_queue(self.queue.gauges)
        self._memory = mem = Memory(memory_budget_mb or memory_budget())
        self.metrics.bind_workers(lambda: self._busy, self.slots, lambda: (mem.budget, mem.used))
        self._lock = threading.Lock()
        self._inflight: dict[str, JobState] = {}
        self._busy = 0
        self._step_slots = StepSlots(self.slots * defaults.STEP_SLOTS_PER_SLOT)
        self._batches = itertools.count()
        # Ids unique across executors and restarts without a urandom call per id.
        self._id_prefix = os.urandom(4).hex()
        self._ids = itertools.count()
        self._handles: dict[str, tuple[BatchHandle, list[JobState | None], str, int]] = {}
        self._closed = False
        self._reaper = Reaper(lambda handle: self._end(handle, "deadline"))
        if isinstance(self.backend, SandboxBackend):
            # Two armed sandboxes per slot: a slot that just finished a run re-arms in the
            # background while the worker takes the other, so a burst finds them ready.
            self.backend.runner.warm_up(2 * self.slots)
        self._workers = self._start_workers()

    def _start_workers(self) -> list[threading.Thread]:
        """One thread per slot pulling from the queue (the cluster executor overrides this
        with its dispatcher to the node agents)."""
        host = socket.gethostname()
        return start_workers(self._work, [f"{host}/w{i}" for i in range(self.slots)])

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
        handle = BatchHandle(new_batch_id(), len(jobs), self._cancel)
        if on_result is not None:
            handle.add_callback(on_result)
        tracing.start_batch(handle, caller, priority)
        if not jobs:
            return handle  # already done: nothing to queue, wait for or record
        deadline_at = None if deadline_s is None else now + deadline_s
        hits: list[tuple[Sub, JobInfo, tuple[Execution, str]]] = []
        shared = 0
        new_jobs: list[JobState] = []
        entries: list[JobState | None] = []
        with self._lock:
            fresh: dict[str, JobState] = {}
            for i, (job, info) in enumerate(zip(jobs, infos, strict=True)):
                sub = Sub(handle, i, caller, priority, deadline_at, now, mono, False)
                key = info.cache_key + ("/stop" if stop_on_failure else "")
                cacheable = self.cache is not None and shareable(job)
                shared += cacheable
                cached = self.cache.get(key) if self.cache is not None and cacheable else None
                if cached is not None:
                    hits.append((sub, info, cached))
                    entries.append(None)
                    continue
                twin = (fresh.get(key) or self._inflight.get(key)) if cacheable else None
                if twin is not None and not twin.done:
                    sub.follower = True
                    twin.subs.append(sub)
                    entries.append(twin)
                    continue
                j = JobState(
                    self._new_id(), job, info, stop_on_failure, [sub], key=key, cacheable=cacheable
                )
                if cacheable:
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
            handle._on_complete = self._forget
            if deadline_s is not None:
                self._reaper.add(mono + deadline_s, batch_seq, handle)
        for language, n in collections.Counter(i.language for i in infos).items():
            self.metrics.submitted(language, n)
        # Of the jobs that may share a result: those that did (cache or twin), those that ran.
        misses = sum(j.cacheable for j in new_jobs)
        for _ in range(shared - misses):
            self.metrics.cache_hit()
        for _ in range(misses):
            self.metrics.cache_miss()
        for sub, info, (ex, source) in hits:
            self._deliver(
                sub,
                info,
                ex,
                job_id=self._new_id(),
                source_job_id=source,
                attempts=0,
                run_s=0.0,
                cache_hit=True,
            )
        return handle

    def close(self) -> None:
        """Finish queued work, stop the workers, flush records and estimates."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._reaper.close()
        self.queue.close()
        for t in self._workers:
            t.join()
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
    def _plan(self, jobs: list[JobState], priority: int, caller: str, seq: int) -> list[Task]:
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
                t = Task(Part(j, k, payload, 1), caller, priority, share, seq)
                j.tasks.append(t)
                tasks.append(t)
        return tasks

    # -- workers ----------------------------------------------------------------------------
    def _work(self, name: str) -> None:
        while True:
            task = self.queue.get()
            if task is None:
                return
            if isinstance(task.payload, SlotCall):
                self._run_call(task.payload, time.monotonic() - task.enqueued_at)
                continue
            claim = self._claim(task, name)
            if claim is None:
                continue
            part: Part = task.payload
            job = part.job
            started = time.monotonic()
            acquiring = time.monotonic()
            self._memory.acquire(job.info.limits.memory_mb)
            acquire_s = time.monotonic() - acquiring
            try:
                ex = self.backend.execute(part.payload, job.stop_on_failure)
            except Exception as exc:
                log.exception("backend failed on job %s", job.id)
                ex = Execution("sandbox_error", None, f"internal error: {exc!r}"[:500])
            finally:
                self._memory.release(job.info.limits.memory_mb)
            self._finish(task, ex, time.monotonic() - started, claim, acquire_s)

    def _claim(self, task: Task, worker: str) -> tuple[Any] | None:
        """A worker takes ``task``: None when nobody waits for its job any more; otherwise
        its bookkeeping is done (busy, queue wait, attempts) and its span opened, returned
        in a 1-tuple for :meth:`_finish`."""
        part: Part = task.payload
        job = part.job
        with self._lock:
            if job.done or not job.subs:
                return None
            self._busy += 1
            wait = time.monotonic() - task.enqueued_at
            if job.first_wait_s is None:
                job.first_wait_s = wait
                job.started_at = time.time()
            job.worker = worker
            job.attempts = max(job.attempts, part.attempt)
            batch_id = job.subs[0].handle.id if job.subs else ""
        self.metrics.observe_queue_wait(wait)
        return (tracing.start_job(job.id, batch_id, job.info.language, part.attempt, wait),)

    def _finish(
        self, task: Task, ex: Execution, elapsed: float, claim: tuple[Any], acquire_s: float = 0.0
    ) -> None:
        """A claimed task ran (``elapsed`` seconds in its slot): metrics, then either a retry
        (``sandbox_error``, attempts left) or the part's result."""
        part: Part = task.payload
        job = part.job
        with self._lock:
            self._busy -= 1
        tracing.end_job(claim[0], ex.verdict, ex.reason)
        self.metrics.observe_run(elapsed)
        self.metrics.observe_execution(job.info.language, ex, elapsed, acquire_s)
        if ex.overhead_s is not None:
            self.metrics.observe_sandbox_start(ex.overhead_s)
        if ex.verdict == "sandbox_error":
            self.metrics.sandbox_error()
            if part.attempt <= self.retries and not self._closed:
                self.metrics.retry()
                log.warning("job %s attempt %d: sandbox_error, retrying", job.id, part.attempt)
                with self._lock:
                    job.work_s += elapsed
                self._requeue(task)
                return
        self._part_done(part, ex, elapsed)

    def _requeue(self, task: Task) -> Task:
        """Queue ``task``'s part again as its next attempt (ahead of the bound: it was
        admitted once)."""
        part: Part = task.payload
        retry = Task(
            Part(part.job, part.index, part.payload, part.attempt + 1),
            task.caller,
            task.priority,
            task.estimate,
            task.batch_seq,
        )
        with self._lock:
            part.job.tasks.append(retry)
        self.queue.put_many([retry], force=True)
        return retry

    def _part_done(self, part: Part, ex: Execution, elapsed: float) -> None:
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
            # A finished job keeps neither its callers' handles nor its parts' results: a
            # worker still holds it until its next task, and a handle holds a whole batch.
            job.subs.clear()
        if job.parts is not None:
            ex = self.backend.merge(
                job.job,
                [(job.parts[i][0], job.results[i]) for i in range(len(job.parts))],
                job.stop_on_failure,
            )
        job.results.clear()
        if ex.verdict != "sandbox_error":
            if self.cache is not None and job.cacheable:
                self.cache.put(job.key, (ex, job.id))
            self.estimator.observe(job.info.estimate_keys, job.work_s, job.info.size)
        for sub in subs:
            self._deliver(
                sub,
                job.info,
                ex,
                job_id=self._new_id() if sub.follower else job.id,
                source_job_id=job.id,
                attempts=job.attempts,
                run_s=job.work_s,
                cache_hit=sub.follower,
                wait=job.first_wait_s,
                started_at=job.started_at,
                worker=job.worker,
            )

    def _deliver(
        self,
        sub: Sub,
        info: JobInfo,
        ex: Execution,
        *,
        job_id: str,
        source_job_id: str,
        attempts: int,
        run_s: float,
        cache_hit: bool,
        wait: float | None = None,
        started_at: float | None = None,
        worker: str = "",
    ) -> None:
        result = JobResult(
            index=sub.index,
            job_id=job_id,
            outcome="done",
            verdict=ex.verdict,
            reward=ex.reward,
            reason=ex.reason,
            judgement=ex.judgement,
            result=ex.result,
            attempts=attempts,
            cache_hit=cache_hit,
            source_job_id=source_job_id,
            queue_wait_s=wait if wait is not None and not cache_hit else 0.0,
            run_s=0.0 if cache_hit else run_s,
            worker=worker,
        )
        if sub.handle._deliver(result):
            _records.write(self.records, sub, info, result, started_at)
            self.metrics.completed(info.language, ex.verdict)
            if log.isEnabledFor(logging.DEBUG):
                log.debug("job done", extra=_records.log_fields(sub.handle.id, sub.caller, result))

    def _forget(self, handle: BatchHandle) -> None:
        """Drop a finished batch (its results are its caller's alone); the batch's last
        delivery does it before its caller wakes (``BatchHandle._on_complete``)."""
        with self._lock:
            self._handles.pop(handle.id, None)

    # -- deadlines and cancellation (the reaper thread is in _deadlines.py) ----------------
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
            ended_subs: list[tuple[Sub, JobState]] = []
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
                self._new_id() if sub.follower else j.id,
                outcome,
                f"{why} before the job finished{started}",
                now - sub.submitted_mono,
            )
            if handle._deliver(r):
                _records.write(self.records, sub, j.info, r, j.started_at)
                self.metrics.completed(j.info.language, outcome)
