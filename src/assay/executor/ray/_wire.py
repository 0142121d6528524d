"""What travels between the driver and the node agents, and how problems travel once.

A job goes to a node as an :class:`Item`; a submission's problem (its tests and expected
outputs, shared by every sample of a prompt and often the largest part of a job) goes to
each node once, in the first message that needs it there, and is kept there in an LRU, so
the jobs after it carry only its key. A problem travels inside that message, pickled once
by the driver, unless it is large: then it is put in the object store once and each node
fetches it. (Putting every problem in the object store cost each job ~1.5 ms of raylet
CPU on a small cluster: a put, then a transfer between object managers for every node,
for a few kilobytes.)

The driver remembers, per node, the problems it sent there most recently; the node keeps
twice as many, so what the driver believes a node holds is there even when a few of its
messages run out of order (an agent runs calls on several threads). Should a node not hold
a problem all the same (an agent restarted under the same node), its slot waits briefly
for it and then answers :data:`MISSING`: the driver forgets what it believed that node
holds and sends the job again, with its problem.
"""

from __future__ import annotations

import collections
import pickle
import threading
from collections.abc import Iterable
from dataclasses import fields
from typing import Any

from ...judge import Problem, Submission
from ...types import Limits
from ..types import Execution, Job, RunJob

#: Problems the driver remembers sending to each node (and keeps pickled or referenced).
PROBLEMS_SENT = 4096
#: Problems a node keeps: twice what the driver remembers sending it.
PROBLEMS_KEPT = 2 * PROBLEMS_SENT
#: Largest pickled problem sent inside a message (Ray itself moves arguments above 100 KiB
#: through the object store); a larger one is put there once for every node.
INLINE_MAX = 64 << 10
#: An item's result when its node did not hold its problem: sent again, with the problem.
MISSING = "problem missing"
#: How long a slot waits for a problem that a message still running may bring.
MISSING_WAIT_S = 2.0


#: A job as it travels: ``(token, payload, stop_on_failure, memory_mb)``. Plain tuples,
#: not dataclasses: pickling a slotted dataclass walks its fields each time, and at thousands
#: of jobs per second that was the largest cost of dispatch.
Item = tuple[int, tuple[Any, ...], bool, int]
#: ``(token, execution, elapsed seconds, worker)``; the execution is None for an item
#: dropped unrun, :data:`MISSING` for one whose problem the node did not hold.
Result = tuple[int, "tuple[Any, ...] | str | None", float, str]

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
    """A node's problems by key: added from the messages that bring them (a pickle, or an
    object reference for a large one), kept while recently used."""

    def __init__(self, entries: int = PROBLEMS_KEPT) -> None:
        self._data: collections.OrderedDict[str, Problem] = collections.OrderedDict()
        self._cond = threading.Condition()
        self._entries = entries

    def resolve(self, sent: dict[str, Any], used: Iterable[str] = ()) -> None:
        """Add the problems of one message (``sent``: key to pickle or object reference),
        and mark the keys its items ``used`` as recent, as the driver did when it sent them."""
        refs = {k: v for k, v in sent.items() if not isinstance(v, bytes)}
        new = {k: pickle.loads(v) for k, v in sent.items() if isinstance(v, bytes)}
        if refs:
            import ray

            with self._cond:
                wanted = [k for k in refs if k not in self._data]
            new.update(zip(wanted, ray.get([refs[k] for k in wanted]), strict=True))
        with self._cond:
            self._data.update(new)
            for k in used:
                if k in self._data:
                    self._data.move_to_end(k)
            while len(self._data) > self._entries:
                self._data.popitem(last=False)
            if new:
                self._cond.notify_all()

    def job(self, payload: tuple[Any, ...], wait_s: float = MISSING_WAIT_S) -> Job | None:
        """The job of ``payload``; None when its problem did not arrive within ``wait_s``."""
        if payload[0] == "s":
            key = payload[1]
            with self._cond:
                if key not in self._data:
                    self._cond.wait_for(lambda: key in self._data, wait_s)
                problem = self._data.get(key)
            if problem is None:
                return None
            return Submission(problem, payload[2], payload[3])
        _, code, language, stdin, limits, files, collect, cache = payload
        return RunJob(code, language, stdin, Limits(*limits), files, collect, cache)


class ProblemRefs:
    """The driver's side: each distinct problem pickled (or, when large, put in the object
    store) once and kept while recent, and sent to a node only when the node's record of
    what it was sent (``Node.problems``) does not name it."""

    def __init__(self, fingerprint: Any, entries: int = PROBLEMS_SENT) -> None:
        self._fingerprint = fingerprint
        self._payloads: collections.OrderedDict[str, Any] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._entries = entries

    def encode(
        self, job: Job, refs: dict[str, Any], sent: collections.OrderedDict[str, None]
    ) -> tuple[Any, ...]:
        """``job`` as it travels to a node; adds its problem to ``refs`` unless ``sent``
        (what that node was sent, updated here) says the node holds it."""
        if not isinstance(job, Submission):
            return encode_job(job, None)
        key = f"{job.problem.id}:{self._fingerprint(job.problem)}"
        with self._lock:
            if key in sent:
                sent.move_to_end(key)
                return encode_job(job, key)
        if key not in refs:
            refs[key] = self._payload(key, job.problem)
        with self._lock:
            sent[key] = None
            while len(sent) > self._entries:
                sent.popitem(last=False)
        return encode_job(job, key)

    def forget(self, sent: collections.OrderedDict[str, None]) -> None:
        """A node did not hold a problem it was sent: send it every problem again."""
        with self._lock:
            sent.clear()

    def _payload(self, key: str, problem: Problem) -> Any:
        with self._lock:
            payload = self._payloads.get(key)
            if payload is not None:
                self._payloads.move_to_end(key)
                return payload
        payload = pickle.dumps(problem, protocol=pickle.HIGHEST_PROTOCOL)
        if len(payload) > INLINE_MAX:
            import ray

            payload = ray.put(problem)
        with self._lock:
            self._payloads[key] = payload
            while len(self._payloads) > self._entries:
                self._payloads.popitem(last=False)
        return payload
