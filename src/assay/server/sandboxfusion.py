"""SandboxFusion-compatible endpoints: ``POST /run_code`` and ``POST /submit``.

Clients written for SandboxFusion (veRL's ``sandbox_fusion`` reward, for one) work unchanged.
Mapping choices:

- ``run_timeout`` is the CPU limit (Assay's verdict, load-independent). The wall clock is
  only the default backstop against sleepers, as on every other route: 3 x ``run_timeout``
  + 1 s, which a program still computing when it fires (slowed by a busy host) may run past
  up to 4 x that, so load never turns into a verdict. (It was ``run_timeout`` itself, which
  stopped a program within its CPU budget that had waited for a CPU or for I/O.) A client
  with its own request timeout should allow for the backstop: veRL's is ``compile_timeout +
  run_timeout + 10`` s, longer than the backstop for ``run_timeout`` below 10.
  ``memory_limit_MB`` is enforced by the cgroup (-1: the server default).
- ``compile_timeout`` is validated but builds use each language's own compile limits
  (the compile cache shares one artefact between requests with different timeouts).
- ``files`` / ``fetch_files`` paths must be relative and stay in the work dir (422 else).
  Runs with ``fetch_files`` go through the executor like any other (queue, 429, records,
  cache: the fetched paths are part of the job's key).
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel
from starlette.types import Scope, Send

from ..errors import ValidationError
from ..executor import JobResult, RunJob
from ..judge import Problem, Submission, TestCase
from ..types import ExecResult, Limits
from . import _convert
from ._service import Service, Svc, caller, caller_of
from .models import (
    CommandRunResult,
    CommandRunStatus,
    EvalResult,
    EvalTestCase,
    RunCodeRequest,
    RunCodeResponse,
    RunStatus,
    SubmitRequest,
    unknown_fields,
)
from .settings import Settings

router = APIRouter(tags=["sandboxfusion"])
log = logging.getLogger("assay.server")
_POD = os.environ.get("MY_POD_NAME")


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _return_code(r: ExecResult) -> int | None:
    if r.exit_code is not None:
        return r.exit_code
    return -r.signal if r.signal else None


def to_response(r: ExecResult, lang: str, files: dict[str, bytes] | None = None) -> RunCodeResponse:
    """An ExecResult in SandboxFusion's words."""
    compiled = lang in _convert.COMPILED
    ok_build = CommandRunResult(
        status=CommandRunStatus.Finished, return_code=0, stdout="", stderr=""
    )
    out = {p: _convert.b64(d) for p, d in (files or r.files).items()}
    if r.status == "compile_error":
        stopped = r.stderr.rstrip().endswith(b"compiler stopped: time_limit")
        build = CommandRunResult(
            status=CommandRunStatus.TimeLimitExceeded if stopped else CommandRunStatus.Finished,
            execution_time=r.wall_s,
            return_code=_return_code(r) if not stopped else None,
            stdout=_text(r.stdout),
            stderr=_text(r.stderr),
        )
        return RunCodeResponse(
            status=RunStatus.Failed,
            message="compile_error",
            compile_result=build,
            executor_pod_name=_POD,
            files=out,
        )
    if r.status == "sandbox_error":
        run = CommandRunResult(
            status=CommandRunStatus.Error,
            execution_time=r.wall_s,
            stdout=_text(r.stdout),
            stderr=_text(r.stderr),
        )
        return RunCodeResponse(
            status=RunStatus.SandboxError,
            message=_text(r.stderr) or "sandbox error",
            run_result=run,
            executor_pod_name=_POD,
        )
    tle = r.status == "time_limit"
    run = CommandRunResult(
        status=CommandRunStatus.TimeLimitExceeded if tle else CommandRunStatus.Finished,
        execution_time=r.wall_s,
        return_code=None if tle else _return_code(r),
        stdout=_text(r.stdout),
        stderr=_text(r.stderr),
    )
    ok = r.status == "ok" and (r.exit_code or 0) == 0
    return RunCodeResponse(
        status=RunStatus.Success if ok else RunStatus.Failed,
        message="" if ok else r.status,
        compile_result=ok_build if compiled else None,
        run_result=run,
        executor_pod_name=_POD,
        files=out,
    )


def _sandbox_error(message: str) -> RunCodeResponse:
    return RunCodeResponse(status=RunStatus.SandboxError, message=message, executor_pod_name=_POD)


def log_unknown(body: BaseModel, route: str) -> None:
    """SandboxFusion's routes are lenient (as SandboxFusion is), but a field they ignore is
    most often a typo (``run_timout``): say so in the log."""
    unknown = unknown_fields(body)
    if unknown:
        log.warning("%s: ignored unknown field(s): %s", route, ", ".join(unknown))


def _run_job(body: RunCodeRequest, s: Settings) -> RunJob:
    """The job a /run_code request asks for; ValidationError names a bad field."""
    log_unknown(body, "/run_code")
    _convert.seconds(body.compile_timeout, s, "compile_timeout")
    t = _convert.seconds(body.run_timeout, s, "run_timeout")
    mem = _convert.memory_mb(body.memory_limit_MB, s, "memory_limit_MB")
    limits = Limits(time_s=t, memory_mb=mem, output_bytes=s.max_output_bytes)
    return _convert.run_job(body, limits, s)


def _answer(jr: JobResult, lang: str) -> RunCodeResponse:
    if jr.result is None:
        return _sandbox_error(jr.reason or "no result")
    return to_response(jr.result, lang)


@router.post("/run_code", response_model=RunCodeResponse)
async def run_code(body: RunCodeRequest, request: Request, svc: Svc) -> RunCodeResponse:
    """Run one program (SandboxFusion's request and response, field for field)."""
    job = _run_job(body, svc.settings)
    return _answer(await svc.run_one(job, caller=caller(request)), job.language)


async def run_code_fast(scope: Scope, headers: dict[bytes, bytes], body: bytes, send: Send) -> bool:
    """``POST /run_code`` without the framework: the same models, conversions and service,
    for the request shape trainers send thousands of times a step. FastAPI's routing,
    dependency and response-validation layers cost about as much CPU per request as a
    sandboxed ``print(1)``, all of it on the event loop.

    ``headers`` are the request's, as a dict of lower-cased names. Returns False, having
    sent nothing, for anything but a valid request the service accepts (bad JSON or
    fields, queue full, no service yet): the regular route then answers it, with its usual
    errors. Once the job is queued, this answers it.
    """
    if not headers.get(b"content-type", b"").startswith(b"application/json"):
        return False
    svc = getattr(getattr(scope.get("app"), "state", None), "service", None)
    if not isinstance(svc, Service) or svc.closing:
        return False
    try:
        req = RunCodeRequest.model_validate(json.loads(body))
        job = _run_job(req, svc.settings)
        handle = await svc.submit([job], caller=caller_of(scope))
    except Exception:  # bad JSON or fields, queue full: nothing was queued
        return False
    (jr,) = await svc.results(handle)
    data = _answer(jr, job.language).model_dump_json(by_alias=True).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})
    return True


# -- /submit -----------------------------------------------------------------------------------


def _row(body: SubmitRequest) -> dict[str, Any]:
    data = body.config.provided_data
    if data is None:
        raise ValidationError(
            "config.provided_data", "this server judges inline data only (no dataset tables)"
        )
    if isinstance(data, list):
        rows = [r for r in data if str(r.get("id")) == str(body.id)]
        if len(rows) != 1:
            raise ValidationError("config.provided_data", f"no single row with id {body.id!r}")
        return rows[0]
    return data


def _tests(row: dict[str, Any], limits: Limits) -> Problem:
    """CommonOJ rows (``test: [{input: {stdin}, output: {stdout}}]``) or APPS-style rows
    (``input_output`` / ``test`` as ``{inputs, outputs[, fn_name]}``)."""
    where = "config.provided_data"
    raw = row.get("test", row.get("input_output"))
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"{where}.test", f"not valid JSON: {exc.msg}") from None
        except RecursionError:  # the client's input, not a fault of the service
            raise ValidationError(f"{where}.test", "not valid JSON: nested too deeply") from None
    if isinstance(raw, dict):
        return _convert.label_problem(raw, f"{where}.test", limits)
    if not isinstance(raw, list) or not raw:
        raise ValidationError(f"{where}.test", "needs a non-empty list of stdio cases")
    tests: list[TestCase] = []
    for i, case in enumerate(raw):
        try:
            stdin, stdout = case["input"]["stdin"], case["output"]["stdout"]
            if not isinstance(stdin, str) or not isinstance(stdout, str):
                raise TypeError
        except (KeyError, TypeError):
            raise ValidationError(
                f"{where}.test[{i}]", "needs {input: {stdin: str}, output: {stdout: str}}"
            ) from None
        tests.append(TestCase(kind="stdio", input=stdin, expected=stdout, name=f"test-{i}"))
    return Problem(str(row.get("id", "provided")), tests, limits=limits)


_TEST_STATUS = {
    "accepted": (RunStatus.Success, CommandRunStatus.Finished),
    "time_limit": (RunStatus.Failed, CommandRunStatus.TimeLimitExceeded),
    "sandbox_error": (RunStatus.SandboxError, CommandRunStatus.Error),
}


@router.post("/submit", response_model=EvalResult)
async def submit(body: SubmitRequest, request: Request, svc: Svc) -> EvalResult:
    """Judge a completion against a problem given inline in ``config.provided_data``."""
    log_unknown(body, "/submit")
    s = svc.settings
    if body.config.language is None:
        raise ValidationError("config.language", "is required")
    if body.config.custom_extract_logic:
        raise ValidationError("config.custom_extract_logic", "is not supported")
    lang = _convert.language(body.config.language, "config.language")
    _convert.code(body.completion, s, "completion")
    t = 10.0 if body.config.run_timeout is None else body.config.run_timeout
    _convert.seconds(t, s, "config.run_timeout")
    limits = Limits(time_s=t, memory_mb=s.default_memory_mb)
    problem = _tests(_row(body), limits)
    src, kind = _convert.extract_code(body.completion, lang)
    handle = await svc.submit([Submission(problem, src, lang)], caller=caller(request))
    (jr,) = await svc.results(handle)
    tests: list[EvalTestCase] = []
    verdicts = [t.verdict for t in jr.judgement.tests] if jr.judgement else []
    for i, tr in enumerate(jr.judgement.tests if jr.judgement else []):
        status, run_status = _TEST_STATUS.get(
            tr.verdict, (RunStatus.Failed, CommandRunStatus.Finished)
        )
        info = RunCodeResponse(
            status=status,
            message="" if tr.verdict == "accepted" else tr.verdict,
            run_result=CommandRunResult(
                status=run_status, execution_time=tr.wall_s, stderr=tr.message or None
            ),
            executor_pod_name=_POD,
        )
        tests.append(
            EvalTestCase(
                passed=tr.verdict == "accepted",
                exec_info=info,
                test_info={"index": i, "verdict": verdicts[i]},
            )
        )
    return EvalResult(
        id=body.id,
        accepted=jr.verdict == "accepted",
        extracted_code=src,
        tests=tests,
        extracted_type=kind,  # type: ignore[arg-type]
        extra={"verdict": jr.verdict, "reward": jr.reward, "reason": jr.reason},
    )
