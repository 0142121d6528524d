"""Agent sessions over HTTP: ``/v1/sessions`` (create, exec, files, fork, close).

Every call on a session runs on a worker thread (a step blocks until it ends or times out).
An ended session answers 410 with the reason it ended (``closed``, ``ttl``, ``idle_ttl``,
``cpu_limit``, ``memory_limit``, ``crashed``) for as long as the service remembers it, then
404. The session cap is ``ASSAY_SERVER_MAX_SESSIONS`` (429 beyond it) and the sum of the open
sessions' memory limits ``ASSAY_SERVER_SESSION_MEMORY_MB``.
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from ..errors import UnknownSession, ValidationError
from ..sessions import Session, SessionEnded, SessionLimits, SessionManager, SessionRefused
from ..sessions.verify import attach
from ..tasks import AgentTask, tar_of
from . import _convert
from ._service import PRIORITIES, Svc, Who, caller_of
from .models import Priority, ProcessOutput
from .tenants import Tenant

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])
_lock = threading.Lock()


_DEFAULT = SessionLimits()


class SessionLimitsModel(BaseModel):
    """A session's limits (``SessionLimits``, whose defaults these are; it checks them)."""

    model_config = ConfigDict(extra="forbid")
    cpu_s: float = Field(default=_DEFAULT.cpu_s, description="CPU seconds of the whole session")
    memory_mb: int = Field(default=_DEFAULT.memory_mb, description="memory of all its processes")
    processes: int = Field(default=_DEFAULT.processes, description="processes at any moment")
    disk_mb: int = Field(default=_DEFAULT.disk_mb, description="size of /work and /tmp")
    output_bytes: int = Field(default=_DEFAULT.output_bytes, description="cap per stream per step")
    step_cpu_s: float | None = Field(default=None, description="CPU seconds of each step's process")
    step_memory_mb: int | None = Field(default=None, description="data MiB of each step's process")


class CreateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    files: dict[str, str | None] = Field(default_factory=dict, description="path -> base64")
    limits: SessionLimitsModel | None = None
    ttl_s: float = 3600.0
    idle_ttl_s: float = 600.0
    priority: Priority = Field(
        "normal", description="scheduling class of the session's steps against batch jobs"
    )
    caller: str = Field(
        "sessions",
        min_length=1,
        max_length=200,
        description="fair-share group of its steps (ignored with API tokens: the tenant is)",
    )
    task: dict[str, Any] | None = Field(None, description="an agent task (native format)")
    gated: bool = False
    image: str | None = Field(
        None, description="task image (id or name, `assay image list`); unknown: 422"
    )


class VerifyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    diagnosis: dict[str, Any] | None = None


class ExecRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: str
    timeout_s: float = 30.0
    idle_timeout_s: float | None = None
    stdin: str = ""


class ExecResponse(ProcessOutput):
    timed_out: bool
    reason: str | None


def manager(app: FastAPI, executor: object) -> SessionManager:
    """The app's session manager (made on first use, on the executor's sandbox pool)."""
    with _lock:
        found: SessionManager | None = getattr(app.state, "session_manager", None)
        if found is None:
            budget = os.environ.get("ASSAY_SERVER_SESSION_MEMORY_MB")
            found = SessionManager(
                executor,
                max_sessions=int(os.environ.get("ASSAY_SERVER_MAX_SESSIONS") or 256),
                memory_budget_mb=int(budget) if budget else None,
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


async def _on(m: SessionManager, who: Tenant, session_id: str, fn: str, *args: Any) -> Any:
    """Call ``fn`` of ``who``'s session ``session_id`` off the event loop; errors become
    answers (another tenant's session is unknown: 404)."""
    try:
        session = m.get(session_id, who.owner)
        return await asyncio.to_thread(getattr(session, fn), *args)
    except SessionEnded as exc:
        return _gone(exc)
    except UnknownSession as exc:
        return _unknown(exc)
    except SessionRefused as exc:
        return JSONResponse({"field": "path", "message": f"path: {exc}"}, 400)


@router.post("")
async def create(
    body: CreateRequest, request: Request, svc: Svc, m: Manager, who: Who
) -> dict[str, Any]:
    """A new session: ``/work`` seeded from ``files``; ``limits`` hold for the whole session.
    It is the tenant's: its id answers 404 to every other (but an admin)."""
    files = _convert.files(body.files, svc.settings)
    try:
        limits = SessionLimits(**(body.limits or SessionLimitsModel()).model_dump())
    except TypeError as exc:
        raise ValidationError("limits", str(exc)) from None
    task = _task(body.task)
    if task is not None and files:
        raise ValidationError("files", "give files or a task, not both")
    tar = tar_of(task.files) if task is not None else None
    image = _convert.image(body.image)
    session = await asyncio.to_thread(
        m.create,
        files=files,
        limits=limits,
        ttl_s=body.ttl_s,
        idle_ttl_s=body.idle_ttl_s,
        priority=PRIORITIES[body.priority],
        caller=caller_of(request.scope, body.caller),
        tar=tar,
        image=image,
        owner=who.name,
    )
    if task is not None:
        attach(session, task, gated=body.gated)
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
    result = await _on(m, who, session_id, "verify", body.diagnosis)
    return result if isinstance(result, JSONResponse) else result.to_dict()


@router.get("/{session_id}/rewards")
async def rewards(session_id: str, m: Manager, who: Who) -> Any:
    """The episode's final reward and its step rewards (gated ones paid or zeroed)."""
    result = await _on(m, who, session_id, "episode_rewards")
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
    answer = await _on(m, who, session_id, "close")
    return answer if isinstance(answer, JSONResponse) else Response(status_code=204)


@router.post("/{session_id}/exec", response_model=ExecResponse)
async def exec_(session_id: str, body: ExecRequest, svc: Svc, m: Manager, who: Who) -> Any:
    """One shell step (cwd and exported variables carry over from the previous step)."""
    stdin = _convert.stdin(body.stdin, svc.settings)
    step = await _on(
        m, who, session_id, "exec", body.command, body.timeout_s, body.idle_timeout_s, stdin
    )
    if isinstance(step, JSONResponse):
        return step
    out = step.to_dict()
    out["stdout"] = step.stdout.decode(errors="replace")
    out["stderr"] = step.stderr.decode(errors="replace")
    return out


@router.post("/{session_id}/fork")
async def fork(session_id: str, m: Manager, who: Who) -> Any:
    """A new session with a copy of this one's workspace (processes are not copied), owned
    by the same tenant."""
    try:
        child: Session = await asyncio.to_thread(m.fork, session_id, who.owner)
    except SessionEnded as exc:
        return _gone(exc)
    except UnknownSession as exc:
        return _unknown(exc)
    return child.info()


@router.get("/{session_id}/files")
async def list_files(session_id: str, m: Manager, who: Who, dir: str = Query(".")) -> Any:
    """The entries of directory ``dir`` of the workspace."""
    entries = await _on(m, who, session_id, "list_files", dir)
    return entries if isinstance(entries, JSONResponse) else {"entries": entries}


@router.put(
    "/{session_id}/files/{path:path}", status_code=204, response_class=Response, response_model=None
)
async def put_file(session_id: str, path: str, request: Request, m: Manager, who: Who) -> Any:
    """Write the raw request body to ``path`` (directories are made as needed)."""
    data = await request.body()
    answer = await _on(m, who, session_id, "write_file", path, data)
    return answer if isinstance(answer, JSONResponse) else Response(status_code=204)


@router.get("/{session_id}/files/{path:path}")
async def get_file(session_id: str, path: str, m: Manager, who: Who) -> Any:
    """The raw bytes of ``path``."""
    data = await _on(m, who, session_id, "read_file", path)
    if isinstance(data, JSONResponse):
        return data
    return Response(data, media_type="application/octet-stream")


@router.delete(
    "/{session_id}/files/{path:path}", status_code=204, response_class=Response, response_model=None
)
async def delete_file(session_id: str, path: str, m: Manager, who: Who) -> Any:
    """Delete a file or a directory tree."""
    answer = await _on(m, who, session_id, "delete_file", path)
    return answer if isinstance(answer, JSONResponse) else Response(status_code=204)
