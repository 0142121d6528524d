"""What every executor offers its callers: batches in, results streaming out.

:class:`~assay.executor.LocalExecutor` (and the cluster executor built on it) and the queue
fleet's producer (:class:`~assay.executor.queue.QueueExecutor`) all satisfy it, so a caller
that only submits batches (the trainer integrations) takes any of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypedDict, Unpack

from .batch import BatchHandle, Callback
from .types import Job, JobResult


class SubmitOptions(TypedDict, total=False):
    """The keywords of ``submit`` (each optional; the executor's defaults in brackets)."""

    #: The scheduler's priority class (``assay.scheduler`` HIGH 0, [NORMAL 1], LOW 2).
    priority: int
    #: Seconds until unfinished jobs end ``deadline`` with no reward [none].
    deadline_s: float | None
    #: The fairness key between callers ["default"].
    caller: str
    #: A submission's judging stops at its first failed test [False].
    stop_on_failure: bool
    #: Called with each result as it arrives [none].
    on_result: Callback | None


class Executor(Protocol):
    def submit(self, jobs: Sequence[Job], **options: Unpack[SubmitOptions]) -> BatchHandle:
        """Queue a batch; its results stream from the handle as jobs finish."""

    def run(self, jobs: Sequence[Job], **kw: Any) -> list[JobResult]:
        """Submit and wait: results in submission order."""

    async def run_async(self, jobs: Sequence[Job], **kw: Any) -> list[JobResult]: ...

    def close(self) -> None: ...


class BatchRuns:
    """``run`` and ``run_async`` of an executor, from its ``submit`` (one definition for
    every executor, so they cannot drift apart)."""

    def submit(self, jobs: Sequence[Job], **options: Unpack[SubmitOptions]) -> BatchHandle:
        raise NotImplementedError

    def run(self, jobs: Sequence[Job], **kw: Any) -> list[JobResult]:
        """Submit and wait: results in submission order."""
        return self.submit(jobs, **kw).gather()

    async def run_async(self, jobs: Sequence[Job], **kw: Any) -> list[JobResult]:
        """:meth:`run` without blocking the event loop."""
        return await self.submit(jobs, **kw).gather_async()
