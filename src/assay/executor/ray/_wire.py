"""What travels between the driver and the node agents, and how problems travel once.

A job goes to a node as an :class:`Item`; a submission's problem (its tests and expected
outputs, shared by every sample of a prompt and often the largest part of a job) goes as a
key plus a Ray object reference: the object is put once by the driver, fetched once by
each node that needs it, and kept there in a small LRU, so a group of jobs carries only keys.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import fields
from typing import Any

from ...judge import Problem, Submission
from ...types import Limits
from ..types import Execution, Job, RunJob

#: Problems a node (and the driver's table of references) keeps.
PROBLEMS_KEPT = 4096


#: A job as it travels: ``(token, payload, stop_on_failure, memory_mb)``. Plain tuples,
#: not dataclasses: pickling a slotted dataclass walks its fields each time, and at thousands
#: of jobs per second that was the largest cost of dispatch.
Item = tuple[int, tuple[Any, ...], bool, int]
#: ``(token, execution or None when dropped unrun, elapsed seconds, worker)``.
Result = tuple[int, "tuple[Any, ...] | None", float, str]

_LIMITS = tuple(f.name for f in fields(Limits))


def encode_job(job: Job, problem_key: str | None) -> tuple[Any, ...]:
    if isinstance(job, Submission):
        assert problem_key is not None
        return ("s", problem_key, job.code, job.language)
    return (
        "r",
        job.code,
        job.language,
        job.stdin,
        tuple(getattr(job.limits, f) for f in _LIMITS),
        job.files,
        job.collect,
        job.cache,
    )


def encode_execution(ex: Execution) -> tuple[Any, ...]:
    return (ex.verdict, ex.reward, ex.reason, ex.judgement, ex.result, ex.overhead_s)


def decode_execution(t: tuple[Any, ...]) -> Execution:
    return Execution(t[0], t[1], t[2], t[3], t[4], t[5])


class ProblemCache:
    """A node's problems by key, fetched from their object references on first use."""

    def __init__(self, entries: int = PROBLEMS_KEPT) -> None:
        self._data: collections.OrderedDict[str, Problem] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._entries = entries

    def resolve(self, refs: dict[str, Any]) -> None:
        import ray

        with self._lock:
            missing = [k for k in refs if k not in self._data]
            for k in refs:
                if k in self._data:
                    self._data.move_to_end(k)
        if not missing:
            return
        fetched = ray.get([refs[k] for k in missing])
        with self._lock:
            for k, problem in zip(missing, fetched, strict=True):
                self._data[k] = problem
            while len(self._data) > self._entries:
                self._data.popitem(last=False)

    def job(self, payload: tuple[Any, ...]) -> Job:
        if payload[0] == "s":
            with self._lock:
                problem = self._data[payload[1]]
            return Submission(problem, payload[2], payload[3])
        _, code, language, stdin, limits, files, collect, cache = payload
        return RunJob(code, language, stdin, Limits(*limits), files, collect, cache)


class ProblemRefs:
    """The driver's side: one object reference per distinct problem, kept while recent."""

    def __init__(self, fingerprint: Any, entries: int = PROBLEMS_KEPT) -> None:
        self._fingerprint = fingerprint
        self._refs: collections.OrderedDict[str, Any] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._entries = entries

    def encode(self, job: Job, refs: dict[str, Any]) -> tuple[Any, ...]:
        """``job`` as it travels; adds the reference of its problem to ``refs``."""
        if not isinstance(job, Submission):
            return encode_job(job, None)
        import ray

        key = f"{job.problem.id}:{self._fingerprint(job.problem)}"
        with self._lock:
            ref = self._refs.get(key)
            if ref is not None:
                self._refs.move_to_end(key)
        if ref is None:
            ref = ray.put(job.problem)
            with self._lock:
                self._refs[key] = ref
                while len(self._refs) > self._entries:
                    self._refs.popitem(last=False)
        refs[key] = ref
        return encode_job(job, key)
