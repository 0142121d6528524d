"""What travels through the broker: jobs to the workers, results back, as JSON.

JSON, not pickle: the broker is a network service, and whoever can write to it must not be
able to run code in a worker (outside any sandbox) or in the trainer by sending a crafted
object. Test values (a ``call`` test's arguments and expected value, options, metadata) go
through the judge's own value codec (:mod:`assay.judge.values`), which decodes strictly into
builtin types; program text, input and output are text or base64 bytes.

A job travels as ``{"k": "s"|"r", ...}`` (a submission or a plain run) plus whether it stops
at the first failure; a result as the fields of :class:`~assay.executor.JobResult` that are
not the producer's own bookkeeping (index and job id travel beside it).
"""

from __future__ import annotations

import base64
import json
from dataclasses import fields
from typing import Any

from ...errors import ValidationError
from ...judge import Judgement, Problem, Submission, TestCase, TestResult
from ...judge import values as codec
from ...types import ExecResult, Limits
from ..types import Job, JobResult, Outcome, RunJob

_LIMITS = tuple(f.name for f in fields(Limits))
_TEST_PLAIN = ("kind", "input", "expected", "compare", "name", "weight", "code")
_EXEC = tuple(f.name for f in fields(ExecResult) if f.name != "files")
_BYTES_EXEC = frozenset({"stdout", "stderr"})


class Malformed(ValueError):
    """A message that is not a well-formed job or result (written by something else)."""


def _blob(value: str | bytes) -> Any:
    """Text as itself, bytes as ``["b", base64]`` (the two stay distinct across the wire)."""
    if isinstance(value, str):
        return value
    return ["b", base64.b64encode(value).decode()]


def _unblob(data: Any) -> str | bytes:
    if isinstance(data, str):
        return data
    if isinstance(data, list) and len(data) == 2 and data[0] == "b" and isinstance(data[1], str):
        return base64.b64decode(data[1], validate=True)
    raise Malformed("expected text or bytes")


def _bytes(data: Any) -> bytes:
    value = _unblob(data)
    return value.encode() if isinstance(value, str) else value


def _problem(p: Problem) -> dict[str, Any]:
    tests = []
    for t in p.tests:
        row: dict[str, Any] = {name: getattr(t, name) for name in _TEST_PLAIN}
        row["options"] = codec.encode(t.options)
        row["expected_value"] = codec.encode(t.expected_value)
        tests.append(row)
    return {
        "id": p.id,
        "tests": tests,
        "limits": [getattr(p.limits, f) for f in _LIMITS],
        "checker": p.checker,
        "references": list(p.references),
        "metadata": codec.encode(p.metadata),
        "image": p.image,
        "network": p.network,
        "isolation": p.isolation,
    }


def _unproblem(d: dict[str, Any]) -> Problem:
    tests = [
        TestCase(
            **{name: row[name] for name in _TEST_PLAIN},
            options=codec.decode(row["options"]),
            expected_value=codec.decode(row["expected_value"]),
        )
        for row in d["tests"]
    ]
    return Problem(
        d["id"],
        tests,
        Limits(*d["limits"]),
        d["checker"],
        list(d["references"]),
        codec.decode(d["metadata"]),
        d["image"],
        d.get("network", "none"),
        d.get("isolation"),
    )


def encode_job(job: Job, stop_on_failure: bool) -> bytes:
    """``job`` as a message body; raises :class:`ValidationError` for a value the codec
    cannot carry (only plain builtin values can be test values)."""
    body: dict[str, Any]
    if isinstance(job, Submission):
        try:
            problem = _problem(job.problem)
        except ValidationError as exc:
            raise ValidationError("problem", f"cannot be sent to a worker: {exc}") from None
        body = {"k": "s", "p": problem, "c": _blob(job.code), "l": job.language}
    else:
        body = {
            "k": "r",
            "c": _blob(job.code),
            "l": job.language,
            "in": _blob(job.stdin),
            "lim": [getattr(job.limits, f) for f in _LIMITS],
            "files": [[path, _blob(data)] for path, data in job.files],
            "collect": list(job.collect),
            "cache": job.cache,
            "image": job.image,
            "iso": job.isolation,
        }
    body["stop"] = stop_on_failure
    return json.dumps(body, separators=(",", ":")).encode()


def decode_job(raw: bytes) -> tuple[Job, bool]:
    """The job of a message body and whether it stops at the first failure; raises
    :class:`Malformed` for anything else (the job is then answered as unrunnable)."""
    try:
        d = json.loads(raw)
        stop = d["stop"] is True
        if d["k"] == "s":
            return Submission(_unproblem(d["p"]), _unblob(d["c"]), d["l"]), stop
        if d["k"] == "r":
            job = RunJob(
                _unblob(d["c"]),
                d["l"],
                _unblob(d["in"]),
                Limits(*d["lim"]),
                tuple((str(p), _bytes(b)) for p, b in d["files"]),
                tuple(str(c) for c in d["collect"]),
                d["cache"] is True,
                d["image"],
                d["iso"],
            )
            return job, stop
    except Malformed:
        raise
    except (ValueError, KeyError, TypeError, IndexError, codec.BadValue) as exc:
        raise Malformed(f"malformed job: {type(exc).__name__}: {exc}"[:300]) from None
    raise Malformed("malformed job: unknown kind")


def _judgement(j: Judgement) -> dict[str, Any]:
    return {
        "v": j.verdict,
        "t": [
            [t.index, t.verdict, t.cpu_s, t.wall_s, t.peak_memory_bytes, t.message] for t in j.tests
        ],
        "r": j.reward,
        "why": j.reason,
        "judged": j.judged,
        "total": j.total,
    }


def _unjudgement(d: dict[str, Any]) -> Judgement:
    tests = [TestResult(*row) for row in d["t"]]
    return Judgement(d["v"], tests, d["r"], d["why"], d["judged"], d["total"])


def _exec(r: ExecResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        name: _blob(getattr(r, name)) if name in _BYTES_EXEC else getattr(r, name) for name in _EXEC
    }
    out["files"] = [[path, _blob(data)] for path, data in r.files.items()]
    return out


def _unexec(d: dict[str, Any]) -> ExecResult:
    kw: dict[str, Any] = {
        name: _bytes(d[name]) if name in _BYTES_EXEC else d[name] for name in _EXEC
    }
    return ExecResult(**kw, files={str(p): _bytes(b) for p, b in d["files"]})


def encode_result(r: JobResult) -> bytes:
    """A worker's result for one job (its index and id travel beside it)."""
    body = {
        "o": r.outcome,
        "v": r.verdict,
        "r": r.reward,
        "why": r.reason,
        "j": None if r.judgement is None else _judgement(r.judgement),
        "x": None if r.result is None else _exec(r.result),
        "a": r.attempts,
        "hit": r.cache_hit,
        "wait": r.queue_wait_s,
        "run": r.run_s,
        "w": r.worker,
    }
    return json.dumps(body, separators=(",", ":")).encode()


def decode_result(raw: bytes, index: int, job_id: str) -> JobResult:
    """The result a worker stored; a malformed one (written by something else) becomes a
    ``sandbox_error`` result with no reward, never a crash of the trainer's collector."""
    try:
        d = json.loads(raw)
        outcome: Outcome = d["o"]
        if outcome not in ("done", "deadline", "cancelled"):
            raise Malformed(f"unknown outcome {outcome!r}")
        return JobResult(
            index=index,
            job_id=job_id,
            outcome=outcome,
            verdict=d["v"],
            reward=None if d["r"] is None else float(d["r"]),
            reason=str(d["why"]),
            judgement=None if d["j"] is None else _unjudgement(d["j"]),
            result=None if d["x"] is None else _unexec(d["x"]),
            attempts=int(d["a"]),
            cache_hit=bool(d["hit"]),
            source_job_id=job_id,
            queue_wait_s=float(d["wait"]),
            run_s=float(d["run"]),
            worker=str(d["w"]),
        )
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        return JobResult(
            index=index,
            job_id=job_id,
            outcome="done",
            verdict="sandbox_error",
            reason=f"the worker's result could not be read: {exc}"[:300],
            source_job_id=job_id,
        )
