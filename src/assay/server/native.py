"""Assay's own API: ``/v1/run``, ``/v1/judge`` and async batches with server-sent events."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import StreamingResponse

from ..errors import ValidationError
from ..executor import BatchHandle, JobResult
from ..judge import Problem, Submission, validate
from ..telemetry import RecordTest
from ..types import Limits
from . import _convert
from ._service import Kept, Service, Svc, Who, caller
from .models import (
    BatchCreated,
    BatchStatus,
    JudgeRequest,
    JudgeResponse,
    JudgeResult,
    ProblemModel,
    RunBody,
    RunResponse,
)
from .tenants import Tenant

router = APIRouter(prefix="/v1", tags=["native"])


@router.post("/run", response_model=RunResponse)
async def run(body: RunBody, request: Request, svc: Svc) -> RunResponse:
    """Run one program; the response is the ExecResult (plus fetched files, base64)."""
    s = svc.settings
    base = Limits(output_bytes=min(Limits().output_bytes, s.max_output_bytes))
    job = _convert.run_job(body, _convert.limits(body.limits, s, base, "limits"), s)
    jr = await svc.run_one(job, caller=caller(request))
    if jr.result is None:
        raise HTTPException(503, f"no result: {jr.reason}")
    result = jr.result
    return RunResponse(
        **result.to_json_dict(body.output_encoding),
        output_encoding=body.output_encoding,
        files={p: _convert.b64(d) for p, d in result.files.items()},
    )


def submissions(body: JudgeRequest, svc: Service) -> list[Submission]:
    """The request's submissions, each validated (errors name ``submissions[i]...``)."""
    s = svc.settings
    base = Limits(output_bytes=min(Limits().output_bytes, s.max_output_bytes))
    shared: Problem | None = None
    if body.problem is not None:
        shared = _convert.problem(body.problem, s, base, "problem")
    if body.submissions is None:
        if body.code is None:
            raise ValidationError("code", "give code (one submission) or submissions (many)")
        items: list[tuple[str, str, ProblemModel | None, str]] = [
            (body.code, body.language, None, "")
        ]
    else:
        if body.code is not None:
            raise ValidationError("code", "give either code or submissions, not both")
        if not body.submissions:
            raise ValidationError("submissions", "is empty")
        if len(body.submissions) > s.max_batch:
            raise ValidationError("submissions", f"more than {s.max_batch} submissions")
        items = [
            (x.code, x.language, x.problem, f"submissions[{i}].")
            for i, x in enumerate(body.submissions)
        ]
    out: list[Submission] = []
    for src, lang_name, pm, at in items:
        lang = _convert.language(lang_name, f"{at}language")
        _convert.code(src, s, f"{at}code")
        problem = shared if pm is None else _convert.problem(pm, s, base, f"{at}problem")
        if problem is None:
            raise ValidationError(f"{at}problem", "no problem given (here or in the request)")
        submission = Submission(problem, src, lang)
        try:  # the judge's own rules, once, with the request's field names
            validate(submission)
        except ValidationError as exc:
            where = f"{at}problem." if pm is not None else "problem."  # (or the shared one)
            field = f"{at}language" if exc.field == "language" else f"{where}{exc.field}"
            raise ValidationError(field, exc.message) from None
        out.append(submission)
    return out


def to_result(r: JobResult) -> JudgeResult:
    tests = r.judgement.tests if r.judgement is not None else []
    return JudgeResult(
        index=r.index,
        outcome=r.outcome,
        verdict=r.verdict,
        reward=r.reward,
        reason=r.reason,
        passed=r.judgement.passed if r.judgement is not None else 0,
        total=r.judgement.total if r.judgement is not None else 0,
        tests=[
            RecordTest(
                index=t.index,
                verdict=t.verdict,
                cpu_s=round(t.cpu_s, 6),
                wall_s=round(t.wall_s, 6),
                peak_memory_bytes=t.peak_memory_bytes,
                message=t.message,
            )
            for t in tests
        ],
        cache_hit=r.cache_hit,
        queue_wait_s=round(r.queue_wait_s, 6),
        run_s=round(r.run_s, 6),
    )


async def _submit(body: JudgeRequest, request: Request, svc: Service) -> BatchHandle:
    """Queue a judge request's submissions with its scheduling options."""
    return await svc.submit(
        submissions(body, svc),
        caller=caller(request),
        priority=body.priority,
        deadline_s=body.deadline_s,
        stop_on_failure=body.stop_on_failure,
    )


@router.post("/judge", response_model=JudgeResponse)
async def judge(body: JudgeRequest, request: Request, svc: Svc) -> JudgeResponse:
    """Judge one submission or many against inline tests; waits for every verdict."""
    handle = await _submit(body, request, svc)
    return JudgeResponse(results=[to_result(r) for r in await svc.results(handle)])


@router.post("/batches", response_model=BatchCreated, status_code=202)
async def create_batch(body: JudgeRequest, request: Request, svc: Svc, who: Who) -> BatchCreated:
    """Queue submissions and return at once; poll ``GET`` or follow ``/events``. The batch
    is the tenant's: its id answers 404 to every other (but an admin)."""
    if svc.closing:
        raise HTTPException(503, "shutting down")
    handle = await _submit(body, request, svc)
    svc.keep(handle, who)
    return BatchCreated(batch_id=handle.id, size=handle.size)


def _kept(svc: Service, batch_id: str, who: Tenant) -> Kept:
    kept = svc.find(batch_id, who)
    if kept is None:
        raise HTTPException(404, f"batch_id: no batch {batch_id!r}")
    return kept


@router.get("/batches/{batch_id}", response_model=BatchStatus)
async def get_batch(batch_id: str, svc: Svc, who: Who) -> BatchStatus:
    """Status and the results so far (in submission order)."""
    kept = _kept(svc, batch_id, who)
    handle = kept.handle
    done = sorted(list(kept.results), key=lambda r: r.index)
    return BatchStatus(
        batch_id=handle.id,
        status="done" if handle.done else "running",
        size=handle.size,
        finished=len(done),
        counts=handle.counts(),
        results=[to_result(r) for r in done],
    )


@router.get("/batches/{batch_id}/events", response_class=StreamingResponse)
async def batch_events(batch_id: str, request: Request, svc: Svc, who: Who) -> StreamingResponse:
    """Server-sent events: one ``result`` event per job as it finishes, then ``end``.

    Event ids count the batch's results in the order they finished (1, 2, ...), the same
    for every connection, so a client that reconnects with ``Last-Event-ID: n`` (as
    EventSource does by itself) gets the results after the n-th, then ``end``."""
    kept = _kept(svc, batch_id, who)
    handle = kept.handle
    start = _last_event_id(request.headers.get("last-event-id"), handle.size)
    loop = asyncio.get_running_loop()
    wake = asyncio.Event()

    def woken(_: JobResult) -> None:
        try:
            loop.call_soon_threadsafe(wake.set)
        except RuntimeError:  # the loop is gone: nobody is listening any more
            pass

    handle.add_callback(woken)

    async def events() -> AsyncIterator[bytes]:
        sent = start
        while sent < handle.size:
            wake.clear()
            while sent < len(kept.results):  # finished results, in the order they finished
                r = kept.results[sent]
                sent += 1
                data = to_result(r).model_dump_json()
                yield f"event: result\nid: {sent}\ndata: {data}\n\n".encode()
            if sent < handle.size:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), 1.0)
        end = json.dumps({"batch_id": handle.id, "counts": handle.counts()})
        yield f"event: end\ndata: {end}\n\n".encode()

    return StreamingResponse(
        events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
    )


def _last_event_id(header: str | None, size: int) -> int:
    """How many results the client already has (0 without the header)."""
    if header is None or not header.strip():
        return 0
    try:
        n = int(header.strip())
    except ValueError:
        n = -1
    if not 0 <= n <= size:
        raise ValidationError("Last-Event-ID", f"must be an event id of this stream (0 to {size})")
    return n


@router.delete("/batches/{batch_id}", response_model=BatchStatus)
async def cancel_batch(batch_id: str, svc: Svc, who: Who) -> BatchStatus:
    """Cancel: unfinished jobs get a ``cancelled`` result (reward null)."""
    _kept(svc, batch_id, who).handle.cancel()
    return await get_batch(batch_id, svc, who)
