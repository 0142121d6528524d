"""The executor layer: batches of jobs run on this machine's sandboxes, scheduled.

``LocalExecutor`` is the embedded default (no service needed); the same ``submit`` API
(:class:`Executor`) is what the HTTP server and the trainer integrations call, and what the
cluster executor (``ray/``) and the queue fleet's producer (``queue/``) offer.
"""

from __future__ import annotations

from .backend import Backend, InMemoryBackend, JobInfo, SandboxBackend
from .batch import BatchHandle
from .local import LocalExecutor
from .protocol import Executor
from .types import Execution, Job, JobResult, Outcome, RunJob

__all__ = [
    "Backend",
    "BatchHandle",
    "Execution",
    "Executor",
    "InMemoryBackend",
    "Job",
    "JobInfo",
    "JobResult",
    "LocalExecutor",
    "Outcome",
    "RunJob",
    "SandboxBackend",
]
