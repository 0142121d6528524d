"""Backends of the fleet's test and benchmark workers (``assay worker --backend
_fleet_backends:NAME``; this folder on the worker's PYTHONPATH): no sandbox, so a test
controls exactly how long a job takes and how it ends."""

from __future__ import annotations

import time

from assay.executor import Execution, InMemoryBackend, Job, RunJob
from assay.types import ExecResult


def _code(job: Job) -> str:
    assert isinstance(job, RunJob)
    return job.code if isinstance(job.code, str) else job.code.decode()


def _sleep(job: Job) -> Execution:
    """A run of ``RunJob(code="<seconds>")``: sleeps that long, prints the code back."""
    code = _code(job)
    time.sleep(float(code))
    return Execution("ok", None, "exit code 0", result=ExecResult("ok", 0, stdout=code.encode()))


def sleeping() -> InMemoryBackend:
    return InMemoryBackend(_sleep)


def _broken(job: Job) -> Execution:
    """This worker's environment is broken: every run is our fault."""
    return Execution("sandbox_error", None, "the sandbox could not start (test)")


def broken() -> InMemoryBackend:
    return InMemoryBackend(_broken)


#: The code of every job a :func:`recording` backend ran, in the order they started.
RAN: list[str] = []


def _record(job: Job) -> Execution:
    RAN.append(_code(job))
    return _sleep(job)


def recording() -> InMemoryBackend:
    """:func:`sleeping`, noting each job's code in :data:`RAN` as it starts (in-process
    workers only)."""
    RAN.clear()
    return InMemoryBackend(_record)
