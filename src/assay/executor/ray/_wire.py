"""What travels between the driver and the node agents, and how problems travel once.

A job goes to a node as an :class:`Item`; a submission's problem (its tests and expected
outputs, shared by every sample of a prompt and often the largest part of a job) goes as a
key plus a Ray object reference: the object is put once by the driver, fetched once by
each node that needs it, and kept there in a small LRU, so a group of jobs carries only keys.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass
from typing import Any

from ...judge import Problem, Submission
from ..types import Execution, Job

#: Problems a node (and the driver's table of references) keeps.
PROBLEMS_KEPT = 4096


@dataclass(frozen=True, slots=True)
class ByRef:
    """A submission whose problem is known by key (see :class:`ProblemCache`)."""

    problem: str
    code: str | bytes
    language: str


@dataclass(frozen=True, slots=True)
class Item:
    token: int
    payload: Job | ByRef
    stop_on_failure: bool
    memory_mb: int


@dataclass(frozen=True, slots=True)
class Result:
    """``ex`` None: the item was dropped unrun (its batch ended)."""

    token: int
    ex: Execution | None
    elapsed_s: float
    worker: str


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

    def job(self, item: Item) -> Job:
        p = item.payload
        if not isinstance(p, ByRef):
            return p
        with self._lock:
            problem = self._data[p.problem]
        return Submission(problem, p.code, p.language)


class ProblemRefs:
    """The driver's side: one object reference per distinct problem, kept while recent."""

    def __init__(self, fingerprint: Any, entries: int = PROBLEMS_KEPT) -> None:
        self._fingerprint = fingerprint
        self._refs: collections.OrderedDict[str, Any] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._entries = entries

    def encode(self, job: Job, refs: dict[str, Any]) -> Job | ByRef:
        """``job`` as it travels; adds the reference of its problem to ``refs``."""
        if not isinstance(job, Submission):
            return job
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
        return ByRef(key, job.code, job.language)
