"""Backends the cluster tests give the node agents (pickled by value onto the nodes).

Each calls a plain function instead of the sandbox, so the tests can see when and where a
job ran, make it slow, or have it kill its own node agent.
"""

from __future__ import annotations

import os
import signal
import time

from assay.executor import Execution, InMemoryBackend, Job, RunJob


def _stdin(job: Job) -> str:
    assert isinstance(job, RunJob)
    data = job.stdin
    return data.decode() if isinstance(data, bytes) else data


def stamped(job: Job) -> Execution:
    """Sleeps the seconds in the job's stdin ("sleep <s>" or "kill"), then answers ``ok``
    with ``start;end;pid`` in the reason."""
    cmd = _stdin(job).split()
    start = time.time()
    if cmd and cmd[0] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if cmd and cmd[0] == "sleep":
        time.sleep(float(cmd[1]))
    return Execution("ok", 1.0, f"{start};{time.time()};{os.getpid()}")


def trivial(job: Job) -> Execution:
    return Execution("ok", 1.0, "")


def stamped_backend() -> InMemoryBackend:
    return InMemoryBackend(stamped)


def trivial_backend() -> InMemoryBackend:
    return InMemoryBackend(trivial)


def job(i: int, sleep: float = 0.0, kill: bool = False) -> RunJob:
    """A distinct job (the code differs) for the stamped backend."""
    cmd = "kill" if kill else f"sleep {sleep}"
    return RunJob(f"# job {i}", stdin=cmd)


def sized(job: Job) -> Execution:
    """Answers with the bytes of test input the node received for the job's problem."""
    from assay.judge import Submission

    assert isinstance(job, Submission)
    return Execution("ok", 1.0, str(sum(len(t.input) for t in job.problem.tests)))


def size_backend() -> InMemoryBackend:
    return InMemoryBackend(sized)


def start(result: object) -> float:
    """When the stamped backend started the job (seconds since the epoch)."""
    return float(result.reason.split(";")[0])  # type: ignore[attr-defined]


def pid(result: object) -> int:
    return int(result.reason.split(";")[2])  # type: ignore[attr-defined]
