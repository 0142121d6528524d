"""Agent sessions over HTTP: ``/v1/sessions`` (create, exec, files, fork, close).

Every call on a session runs on a worker thread (a step blocks until it ends or times out).
An ended session answers 410 with the reason it ended (``closed``, ``ttl``, ``idle_ttl``,
``cpu_limit``, ``memory_limit``, ``crashed``) for as long as the service remembers it, then
404. The session cap is ``ASSAY_SERVER_MAX_SESSIONS`` (429 beyond it) and the sum of the open
sessions' memory limits ``ASSAY_SERVER_SESSION_MEMORY_MB``.
"""

from __future__ import annotations

import asyncio
import functools
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import ValidationError as PydanticError
from starlette.types import Scope, Send

from .. import defaults
from ..errors import UnknownSession, ValidationError
from ..sessions import (
    Download,
    DownloadFailed,
    DownloadTooLarge,
    Session,
    SessionBase,
    SessionEnded,
    SessionFault,
    SessionManager,
    SessionRefused,
)
from ..sessions.awaited import awaitable, exec_awaited
from ..sessions.verify import attach, limits_for
from ..tasks import AgentTask
from ..tasks.workspace import workspace_tar
from ..types import encode_output
from . import _convert
from ._callers import callers_of
from ._service import PRIORITIES, Service, Svc, Who, caller_of
from ._session_models import (
    CellRequest,
    CreateRequest,
    ExecRequest,
    ExecResponse,
    SessionLimitsModel,
    VerifyRequest,
    exec_step,
    session_limits,
)
from .settings import Settings
from .tenants import SCOPE_KEY, Tenant

T = TypeVar("T")
router = APIRouter(prefix="/v1/sessions", tags=["sessions"])
_lock = threading.Lock()


def manager(app: FastAPI, executor: object) -> SessionManager:
    """The app's session manager (made on first use, on the executor's sandbox pool, with
    the service's ``max_sessions`` and ``session_memory_mb``)."""
    with _lock:
        found: SessionManager | None = getattr(app.state, "session_manager", None)
        if found is None:
            settings: Settings = app.state.service.settings
            found = SessionManager(
                executor,
                max_sessions=settings.max_sessions,
                memory_budget_mb=settings.session_memory_mb,
            )
            app.state.session_manager = found
        return found


def shutdown(app: FastAPI) -> None:
    """Close every session (the service is stopping)."""
    found: SessionManager | None = getattr(app.state, "session_manager", None)
    if found is not None:
        found.close_all()


async def _manager(request: Request, svc: Svc) -> SessionManager:
    return manager(request.app, svc.executor)


Manager = Annotated[SessionManager, Depends(_manager)]


def _gone(exc: SessionEnded) -> JSONResponse:
    return JSONResponse(
        {"field": "session", "message": str(exc), "reason": exc.reason, "detail": exc.detail},
        410,
    )


def _unknown(exc: UnknownSession) -> JSONResponse:
    return JSONResponse({"field": "session", "message": f"session: {exc}"}, 404)


#: Threads that run session calls (steps, files, creates): their own pool, not the event
#: loop's default one (a few threads, which ``/v1/run`` waits on too): sleeping steps used
#: to take every thread of it, and another caller's ``print(42)`` waited for them.
_POOL = ThreadPoolExecutor(defaults.SERVER_SESSION_THREADS, thread_name_prefix="assay-session")


async def call_off_loop(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` on the session pool, awaited."""
    return await asyncio.get_running_loop().run_in_executor(_POOL, functools.partial(fn, *args))


async def _on(
    m: SessionManager,
    who: Tenant,
    session_id: str,
    call: Callable[[SessionBase], T],
    awaited: Callable[[Session], Awaitable[T]] | None = None,
) -> T | JSONResponse:
    """``call(session)`` on ``who``'s session ``session_id``, off the event loop, within its
    caller's share of the pool (``_callers``), or ``awaited(session)`` on the loop where the
    session can be awaited (``sessions.awaited``: no thread per step); errors become answers
    (another tenant's session is unknown: 404)."""
    try:
        session = m.get(session_id, who.owner)
        async with callers_of(m).calls.hold(session.caller):
            if awaited is not None and isinstance(session, Session) and awaitable(session):
                return await awaited(session)
            return await call_off_loop(call, session)
    except SessionEnded as exc:
        return _gone(exc)
    except UnknownSession as exc:
        return _unknown(exc)
    except SessionRefused as exc:
        return JSONResponse({"field": "path", "message": f"path: {exc}"}, 400)
    except SessionFault as exc:  # the session's own state, never the request's fault
        return JSONResponse({"field": None, "message": f"session: {exc}", "reason": exc.kind}, 503)


@router.post("")
async def create(
    body: CreateRequest, request: Request, svc: Svc, m: Manager, who: Who
) -> dict[str, Any]:
    """A new session: ``/work`` seeded from ``files``; ``limits`` hold for the whole session.
    It is the tenant's: its id answers 404 to every other (but an admin)."""
    files = _convert.files(body.files, svc.settings)
    limits = session_limits(body.limits or SessionLimitsModel(), svc.settings)
    task = _task(body.task)
    if task is not None and files:
        raise ValidationError("files", "give files or a task, not both")
    tar = workspace_tar(task) if task is not None else None
    if tar is not None and body.limits is None:  # sized for the task's workspace
        limits = limits_for(tar)
    where = _convert.placement(body.image, body.isolation)
    bounds = callers_of(m)
    who_calls = caller_of(request.scope, body.caller)
    async with bounds.calls.hold(who_calls), bounds.starts.hold(who_calls):
        session = await call_off_loop(
            functools.partial(
                m.create,
                files=files,
                limits=limits,
                ttl_s=body.ttl_s,
                idle_ttl_s=body.idle_ttl_s,
                priority=PRIORITIES[body.priority],
                caller=who_calls,
                tar=tar,
                image=where.image,
                isolation=where.isolation,
                owner=who.name,
                episode_id=body.episode_id,
                loopback=body.loopback,
            )
        )
    if task is not None:
        attach(session, task, gated=body.gated)
        session.task_id = task.task_id
    return session.info()


def _task(row: dict[str, Any] | None) -> AgentTask | None:
    """A task from a request: files or archive only (a ``repo`` path would read the
    service's own disk)."""
    if row is None:
        return None
    if row.get("repo") is not None:
        raise ValidationError("task.repo", "not accepted over HTTP: send files or archive")
    try:
        return AgentTask.from_dict(row)
    except ValidationError as exc:
        raise ValidationError(f"task.{exc.field}", exc.message) from None


@router.post("/{session_id}/verify")
async def verify(session_id: str, body: VerifyRequest, m: Manager, who: Who) -> Any:
    """Run the session's hidden tests on a snapshot of its workspace: ``{passed, total,
    verdict, newly_passing, newly_failing, protected_edits, step_reward, reward, ...}``."""
    result = await _on(m, who, session_id, lambda s: s.verify(body.diagnosis))
    return result if isinstance(result, JSONResponse) else result.to_dict()


@router.get("/{session_id}/rewards")
async def rewards(session_id: str, m: Manager, who: Who) -> Any:
    """The episode's final reward and its step rewards (gated ones paid or zeroed)."""
    result = await _on(m, who, session_id, lambda s: s.episode_rewards())
    return result if isinstance(result, JSONResponse) else result.to_dict()


@router.get("/{session_id}")
async def info(session_id: str, m: Manager, who: Who) -> Any:
    """State, age, idle time, limits and step count."""
    try:
        return m.get(session_id, who.owner).info()
    except SessionEnded as exc:
        return _gone(exc)
    except UnknownSession as exc:
        return _unknown(exc)


@router.delete("/{session_id}", status_code=204, response_class=Response, response_model=None)
async def close(session_id: str, m: Manager, who: Who) -> Any:
    """End the session: its processes, files, mounts and cgroup are gone when this answers."""
    answer = await _on(m, who, session_id, lambda s: s.close())
    return answer if isinstance(answer, JSONResponse) else Response(status_code=204)


@router.post("/{session_id}/exec", response_model=ExecResponse)
async def exec_(session_id: str, body: ExecRequest, svc: Svc, m: Manager, who: Who) -> Any:
    """One shell step (cwd and exported variables carry over from the previous step)."""
    return await _step(m, who, session_id, body, svc.settings)


async def _step(
    m: SessionManager, who: Tenant, session_id: str, body: ExecRequest, settings: Settings
) -> JSONResponse:
    """The exec route's answer (the route's and :func:`exec_fast`'s one implementation)."""
    step = exec_step(body, settings)
    result = await _on(
        m,
        who,
        session_id,
        lambda s: s.step(step),
        lambda s: exec_awaited(s, step, off_loop=call_off_loop),
    )
    if isinstance(result, JSONResponse):
        return result
    out = result.to_dict()
    out["stdout"] = encode_output(result.stdout, body.output_encoding)
    out["stderr"] = encode_output(result.stderr, body.output_encoding)
    out["output_encoding"] = body.output_encoding
    # Already the ExecResponse shape (the model documents it): answered as it is, without
    # FastAPI validating it through the model again on every step.
    return JSONResponse(out)


_EXEC_PATH = re.compile(r"/v1/sessions/([^/]+)/exec")


async def exec_fast(scope: Scope, headers: dict[bytes, bytes], body: bytes, send: Send) -> bool:
    """``POST /v1/sessions/{id}/exec`` without the framework: the same model and
    :func:`_step`, for the call an agent makes on every turn. FastAPI's route scan and
    dependency layers cost ~1.5 ms per step (measured with ``benchmarks/sessions.py
    --only remote``), most of the remote client's overhead. Returns False, having sent
    nothing, for anything but a valid step request of a running service: the route then
    answers it with its usual errors. Once the step has started, this answers it."""
    found = _EXEC_PATH.fullmatch(scope["path"])
    if found is None or not headers.get(b"content-type", b"").startswith(b"application/json"):
        return False
    app = scope.get("app")
    svc = getattr(getattr(app, "state", None), "service", None)
    who = scope.get(SCOPE_KEY)
    if app is None or not isinstance(svc, Service) or svc.closing or not isinstance(who, Tenant):
        return False
    try:
        req = ExecRequest.model_validate_json(body)
    except PydanticError:  # the route answers with FastAPI's field errors: nothing ran
        return False
    try:
        answer = await _step(manager(app, svc.executor), who, found[1], req, svc.settings)
    except Exception as exc:
        # What the app's exception handlers answer (a 422 naming the field, a full queue's
        # 429 with Retry-After) is answered the same here; anything else is a 500 as on
        # the route. Never a second try: the step may have run.
        handlers = app.exception_handlers
        # The first handler along the exception's classes, but Exception's (a 500).
        own = [c for c in type(exc).__mro__ if c in handlers and c not in (Exception, object)]
        if not own:
            raise
        answer = await handlers[own[0]](Request(scope), exc)
    await send(
        {"type": "http.response.start", "status": answer.status_code, "headers": answer.raw_headers}
    )
    await send({"type": "http.response.body", "body": answer.body})
    return True


@router.post("/{session_id}/fork")
async def fork(session_id: str, m: Manager, who: Who) -> Any:
    """A new session with a copy of this one's workspace (processes are not copied), owned
    by the same tenant."""
    try:
        caller = m.get(session_id, who.owner).caller
        bounds = callers_of(m)
        async with bounds.calls.hold(caller), bounds.starts.hold(caller):
            child = await call_off_loop(m.fork, session_id, who.owner)
    except SessionEnded as exc:
        return _gone(exc)
    except SessionRefused as exc:  # the tier cannot (gVisor passes no descriptors): ours
        return JSONResponse({"field": "session", "message": f"fork: {exc}"}, 501)
    except UnknownSession as exc:
        return _unknown(exc)
    return child.info()


@router.get("/{session_id}/files")
async def list_files(session_id: str, m: Manager, who: Who, dir: str = Query(".")) -> Any:
    """The entries of directory ``dir`` of the workspace."""
    entries = await _on(m, who, session_id, lambda s: s.list_files(dir))
    return entries if isinstance(entries, JSONResponse) else {"entries": entries}


@router.put(
    "/{session_id}/files/{path:path}", status_code=204, response_class=Response, response_model=None
)
async def put_file(session_id: str, path: str, request: Request, m: Manager, who: Who) -> Any:
    """Write the raw request body to ``path`` (directories are made as needed)."""
    data = await request.body()
    answer = await _on(m, who, session_id, lambda s: s.write_file(path, data))
    return answer if isinstance(answer, JSONResponse) else Response(status_code=204)


@router.get("/{session_id}/files/{path:path}")
async def get_file(session_id: str, path: str, svc: Svc, m: Manager, who: Who) -> Any:
    """The raw bytes of ``path``, streamed (413 past the download cap)."""
    cap = svc.settings.max_download_bytes
    media = "application/octet-stream"
    return await _download(m, who, session_id, media, "path", lambda s: s.open_file(path, cap))


@router.get("/{session_id}/tar")
async def get_tar(
    session_id: str,
    svc: Svc,
    m: Manager,
    who: Who,
    dir: str = Query("."),
    gzip: bool = Query(False),
) -> Any:
    """A tar of directory ``dir`` of the workspace, streamed (413 when its files hold more
    than the download cap)."""
    kind = "application/gzip" if gzip else "application/x-tar"
    cap = svc.settings.max_download_bytes
    return await _download(m, who, session_id, kind, "dir", lambda s: s.open_tar(dir, gzip, cap))


async def _download(
    m: SessionManager,
    who: Tenant,
    session_id: str,
    media: str,
    field: str,
    opened: Callable[[SessionBase], Download],
) -> Any:
    """A download as a streamed response: chunks of a pipe the agent writes into, so the
    service holds one chunk of it at a time, whatever its size (issue 26). ``field`` names
    the request's argument a download too large is blamed on."""
    try:
        download = await _on(m, who, session_id, opened)
    except DownloadTooLarge as exc:
        return JSONResponse({"field": field, "message": f"{field}: {exc}", "limit": exc.limit}, 413)
    except DownloadFailed as exc:
        return JSONResponse({"field": "session", "message": f"session: {exc}"}, 500)
    if isinstance(download, JSONResponse):
        return download
    headers = {"Content-Length": str(download.size)} if field == "path" else {}
    return StreamingResponse(_chunks(download), media_type=media, headers=headers)


async def _chunks(download: Download) -> AsyncIterator[bytes]:
    """The download's chunks, each read on the session pool (a stalled agent holds one of
    its threads, never one of the event loop's own); closed however the response ends."""
    it = iter(download)
    done = object()
    try:
        while (chunk := await call_off_loop(next, it, done)) is not done:
            assert isinstance(chunk, bytes)
            yield chunk
    finally:
        await call_off_loop(download.close)


@router.delete(
    "/{session_id}/files/{path:path}", status_code=204, response_class=Response, response_model=None
)
async def delete_file(session_id: str, path: str, m: Manager, who: Who) -> Any:
    """Delete a file or a directory tree."""
    answer = await _on(m, who, session_id, lambda s: s.delete_file(path))
    return answer if isinstance(answer, JSONResponse) else Response(status_code=204)


@router.post("/{session_id}/cell")
async def run_cell(session_id: str, body: CellRequest, m: Manager, who: Who) -> Any:
    """One notebook cell in the session's persistent Python interpreter: ``{status, stdout,
    stderr, display, error, restarted, detail}`` (``status`` ``died``: ``detail`` says how)."""
    cell = await _on(m, who, session_id, lambda s: s.run_cell(body.code, body.timeout_s))
    return cell if isinstance(cell, JSONResponse) else cell.to_dict()


@router.put("/{session_id}/tar", status_code=204, response_class=Response, response_model=None)
async def put_tar(
    session_id: str, request: Request, m: Manager, who: Who, dir: str = Query(".")
) -> Any:
    """Unpack the tar in the request body (regular files and directories) into ``dir``."""
    data = await request.body()
    answer = await _on(m, who, session_id, lambda s: s.upload_tar(data, dir))
    return answer if isinstance(answer, JSONResponse) else Response(status_code=204)
