"""The executor's bookkeeping of a job: who waits for it, its parts, its memory share."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from .. import defaults
from ..scheduler import Task
from .backend import JobInfo
from .batch import BatchHandle
from .types import Execution, Job, RunJob


@dataclass(eq=False)
class Sub:
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
class JobState:
    id: str
    job: Job
    info: JobInfo
    stop_on_failure: bool
    subs: list[Sub]
    #: The cache and dedup key: the job's content, and whether it stops at a failure (such
    #: a result lacks the tests after the failure, so it only stands for the same request).
    key: str = ""
    #: Whether the result may be cached and shared with identical jobs: always for judging,
    #: for a plain run only when it asks (``RunJob.cache``).
    cacheable: bool = True
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
class Part:
    job: JobState
    index: int
    payload: Job
    attempt: int


class Memory:
    """A budget of MiB held by running jobs; a job larger than the budget runs alone."""

    def __init__(self, budget_mb: int) -> None:
        self.budget = budget_mb
        self.used = 0
        self._cond = threading.Condition()

    def acquire(self, mb: int, blocking: bool = True) -> bool:
        """Hold ``mb`` (waiting for room, or with ``blocking=False`` only if there is room
        now: whether it was taken)."""
        with self._cond:

            def room() -> bool:
                return self.used == 0 or self.used + mb <= self.budget

            if blocking:
                self._cond.wait_for(room)
            elif not room():
                return False
            self.used += mb
            return True

    def release(self, mb: int) -> None:
        with self._cond:
            self.used -= mb
            self._cond.notify_all()


def memory_budget() -> int:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(int(line.split()[1]) / 1024 * defaults.EXECUTOR_MEMORY_SHARE)
    except OSError:
        pass
    return 4096


def shareable(job: Job) -> bool:
    """Judging is deterministic (same code, tests, limits and toolchain: same verdict); a
    plain run is not (random numbers, clocks), so it shares results only when it asks."""
    return not isinstance(job, RunJob) or job.cache
