"""Backends: what actually executes a job for the executor.

:class:`SandboxBackend` judges submissions and runs programs in Assay's sandbox;
:class:`InMemoryBackend` calls a Python function instead (for tests, and to measure the
executor's own overhead). Both describe jobs the same way, so the scheduler sees the same
keys, sizes and estimates whichever backend runs them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any, Literal, Protocol

from .. import languages
from ..errors import ValidationError
from ..judge import Judge, Judgement, Problem, Submission, TestCase, combine, validate
from ..reward import RewardFn
from ..runner import Runner
from ..types import Limits
from .types import Execution, Job, RunJob


@dataclass(frozen=True, slots=True)
class JobInfo:
    """What the scheduler and the records need to know about a job."""

    kind: Literal["judge", "run"]
    language: str
    problem_id: str | None
    limits: Limits
    #: Units of work (tests for a submission, 1 for a run); estimates scale with it.
    size: int
    #: Runtime-estimate keys, most specific first.
    estimate_keys: tuple[str, ...]
    #: Hash of everything that can change the outcome.
    cache_key: str
    toolchain: str
    code: bytes


class Backend(Protocol):
    def describe(self, job: Job) -> JobInfo:
        """Validate ``job`` (raising :class:`ValidationError`) and describe it."""

    def split(self, job: Job, parts: int) -> list[tuple[list[int], Job]] | None:
        """``job`` as up to ``parts`` independent jobs over disjoint tests, or None."""

    def merge(
        self, job: Job, parts: list[tuple[list[int], Execution]], stop_on_failure: bool = False
    ) -> Execution:
        """One execution from the executions of :meth:`split`'s parts (with
        ``stop_on_failure``, as if the tests had run in order and stopped at the first
        failure)."""

    def execute(self, job: Job, stop_on_failure: bool) -> Execution: ...


class _Fingerprints:
    """Problem content hashes, computed once per problem object (problems are immutable)."""

    def __init__(self, entries: int = 4096) -> None:
        self._data: OrderedDict[int, tuple[Problem, str]] = OrderedDict()
        self._lock = threading.Lock()
        self._entries = entries

    def __call__(self, problem: Problem) -> str:
        with self._lock:
            hit = self._data.get(id(problem))
            if hit is not None and hit[0] is problem:
                self._data.move_to_end(id(problem))
                return hit[1]
        body = {
            "tests": [[getattr(t, f) for f in _TEST_FIELDS] for t in problem.tests],
            "checker": problem.checker,
            "limits": _limits(problem.limits),
        }
        if problem.image is not None:  # keys of problems without one stay as they were
            body["image"] = problem.image
        if problem.network != "none":
            body["network"] = problem.network
        if problem.isolation is not None:
            body["isolation"] = problem.isolation
        digest = hashlib.sha256(_canonical(body)).hexdigest()
        with self._lock:
            self._data[id(problem)] = (problem, digest)
            while len(self._data) > self._entries:
                self._data.popitem(last=False)
        return digest


_TEST_FIELDS = tuple(f.name for f in fields(TestCase))
_LIMIT_FIELDS = tuple(f.name for f in fields(Limits))


def _limits(limits: Limits) -> dict[str, Any]:
    # Not dataclasses.asdict: it deep-copies, and this runs for every job of every batch.
    return {f: getattr(limits, f) for f in _LIMIT_FIELDS}


def _canon(o: Any) -> Any:
    """A JSON-able form that is equal for equal values: dict keys of any (mixed) types are
    sorted by their own canonical text, and list/tuple/set/bytes stay distinguishable."""
    if o is None or isinstance(o, str | bool):
        return o
    if isinstance(o, int):
        # JSON writes ints in decimal, which Python refuses past 4300 digits (HumanEval+
        # expects some that long): big ones are written in hex, which has no such limit.
        return o if -(1 << 63) <= o < (1 << 63) else {"x": format(o, "x")}
    if isinstance(o, float):
        return {"f": repr(o)}
    if isinstance(o, bytes):
        return {"b": o.hex()}
    if isinstance(o, dict):
        items = [(_canon(k), _canon(v)) for k, v in o.items()]
        items.sort(key=lambda kv: json.dumps(kv[0]))
        return {"d": items}
    if isinstance(o, list | tuple):
        return {type(o).__name__[0]: [_canon(x) for x in o]}
    if isinstance(o, set | frozenset):
        return {"s": sorted((_canon(x) for x in o), key=json.dumps)}
    return {"r": repr(o)}


def _canonical(value: Any) -> bytes:
    return json.dumps(_canon(value)).encode()


def _code_bytes(code: str | bytes) -> bytes:
    return code.encode() if isinstance(code, str) else code


class _Describer:
    def __init__(self, toolchain: Callable[[str], str]) -> None:
        self._toolchain = toolchain
        self._fingerprint = _Fingerprints()

    def __call__(self, job: Job) -> JobInfo:
        if isinstance(job, Submission):
            validate(job)
            lang = languages.get(job.language).name
            toolchain = self._toolchain(lang)
            code = _code_bytes(job.code)
            key = hashlib.sha256(
                b"judge\0%s\0%s\0%s\0" % (lang.encode(), toolchain.encode(), code)
                + self._fingerprint(job.problem).encode()
            ).hexdigest()
            pid = job.problem.id
            return JobInfo(
                "judge",
                lang,
                pid,
                job.problem.limits,
                len(job.problem.tests),
                (f"{pid}|{lang}", f"per-test|{lang}", "per-test"),
                key,
                toolchain,
                code,
            )
        if isinstance(job, RunJob):
            if not isinstance(job.limits, Limits):
                raise ValidationError("limits", "must be an assay.Limits")
            if not isinstance(job.code, str | bytes) or not isinstance(job.stdin, str | bytes):
                raise ValidationError("code", "code and stdin must be str or bytes")
            lang = languages.get(job.language).name
            toolchain = self._toolchain(lang)
            code = _code_bytes(job.code)
            # Plain values only (bytes, str, numbers and tuples of them), whose repr is exact
            # and unambiguous: cheaper than the canonical JSON form, run for every job.
            body = repr(
                (
                    _code_bytes(job.stdin),
                    tuple(getattr(job.limits, f) for f in _LIMIT_FIELDS),
                    tuple((str(p), _code_bytes(d)) for p, d in job.files),
                    tuple(str(c) for c in job.collect),
                    job.image,
                    job.isolation,
                )
            ).encode()
            key = hashlib.sha256(
                b"run\0%s\0%s\0%s\0" % (lang.encode(), toolchain.encode(), code) + body
            ).hexdigest()
            return JobInfo(
                "run", lang, None, job.limits, 1, (f"run|{lang}", "run"), key, toolchain, code
            )
        raise ValidationError("job", f"expected a Submission or a RunJob, got {type(job).__name__}")


def _split(job: Job, parts: int) -> list[tuple[list[int], Job]] | None:
    if not isinstance(job, Submission) or parts < 2 or len(job.problem.tests) < 2:
        return None
    p = job.problem
    n = len(p.tests)
    parts = min(parts, n)
    bounds = [round(i * n / parts) for i in range(parts + 1)]
    out: list[tuple[list[int], Job]] = []
    for a, b in itertools.pairwise(bounds):
        indices = list(range(a, b))
        sub = replace(p, tests=p.tests[a:b])
        out.append((indices, Submission(sub, job.code, job.language)))
    return out


class _Common:
    """Describing, splitting and merging: the same whatever executes the jobs."""

    def __init__(self, toolchain: Callable[[str], str]) -> None:
        self._describe = _Describer(toolchain)

    def describe(self, job: Job) -> JobInfo:
        return self._describe(job)

    def split(self, job: Job, parts: int) -> list[tuple[list[int], Job]] | None:
        return _split(job, parts)

    def merge(
        self, job: Job, parts: list[tuple[list[int], Execution]], stop_on_failure: bool = False
    ) -> Execution:
        assert isinstance(job, Submission)
        judged = [(idx, ex.judgement) for idx, ex in parts if ex.judgement is not None]
        if len(judged) != len(parts):
            bad = next(ex for _, ex in parts if ex.judgement is None)
            return Execution("sandbox_error", None, bad.reason)
        judgement = combine(judged, len(job.problem.tests), stop_on_failure=stop_on_failure)
        overheads = [ex.overhead_s for _, ex in parts if ex.overhead_s is not None]
        return self._finish(job, judgement, sum(overheads) if overheads else None)

    def _finish(self, job: Submission, judgement: Judgement, overhead: float | None) -> Execution:
        return Execution(
            judgement.verdict, judgement.reward, judgement.reason, judgement, overhead_s=overhead
        )


class SandboxBackend(_Common):
    """Judges submissions and runs programs in the sandbox of ``runner``."""

    def __init__(self, runner: Runner, reward: RewardFn | None = None) -> None:
        super().__init__(lambda lang: languages.get(lang).toolchain())
        self.runner = runner
        self.judge = Judge(runner)
        self.reward = reward

    def execute(self, job: Job, stop_on_failure: bool) -> Execution:
        started = time.perf_counter()
        if isinstance(job, RunJob):
            result = self.runner.run(
                job.code,
                job.language,
                job.stdin,
                job.limits,
                dict(job.files) or None,
                collect=job.collect,
                image=job.image,
                isolation=job.isolation,
            )
            elapsed = time.perf_counter() - started
            return Execution(
                result.status,
                None,
                f"exit code {result.exit_code}" if result.status == "ok" else result.status,
                result=result,
                overhead_s=max(0.0, elapsed - result.wall_s),
            )
        judgement = self.judge.judge(job, stop_on_failure)
        elapsed = time.perf_counter() - started
        overhead = max(0.0, elapsed - sum(t.wall_s for t in judgement.tests))
        return self._finish(job, judgement, overhead)

    def _finish(self, job: Submission, judgement: Judgement, overhead: float | None) -> Execution:
        reward, reason = judgement.reward, judgement.reason
        if self.reward is not None:
            r = self.reward(judgement, job.problem, submission=job)
            reward, reason = r.value, (f"{judgement.reason}; reward: {r.reason}").strip("; ")
        return Execution(
            judgement.verdict, reward, reason, judgement=judgement, overhead_s=overhead
        )


class InMemoryBackend(_Common):
    """Runs jobs by calling ``fn(job)``: no sandbox. For tests and overhead measurements."""

    def __init__(self, fn: Callable[[Job], Execution]) -> None:
        super().__init__(lambda lang: "in-memory")
        self.fn = fn

    def execute(self, job: Job, stop_on_failure: bool) -> Execution:
        return self.fn(job)
