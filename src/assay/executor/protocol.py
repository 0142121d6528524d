"""What every executor offers its callers: batches in, results streaming out.

:class:`~assay.executor.LocalExecutor` (and the cluster executor built on it) and the queue
fleet's producer (:class:`~assay.executor.queue.QueueExecutor`) all satisfy it, so a caller
that only submits batches (the trainer integrations) takes any of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..scheduler import NORMAL
from .batch import BatchHandle, Callback
from .types import Job, JobResult


class Executor(Protocol):
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
        """Queue a batch; its results stream from the handle as jobs finish."""

    def run(self, jobs: Sequence[Job], **kw: Any) -> list[JobResult]:
        """Submit and wait: results in submission order."""

    async def run_async(self, jobs: Sequence[Job], **kw: Any) -> list[JobResult]: ...

    def close(self) -> None: ...
