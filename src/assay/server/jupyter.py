"""SandboxFusion's ``POST /run_jupyter``, served on a session.

The cells run one after another in the session's persistent Python interpreter, so a name
defined in one cell is there in the next, as in a notebook. ``cell_timeout`` (0: none but
the total) stops a cell; ``total_timeout`` bounds all of them, and a cell still running at
either is stopped, the cells after it are not run, and the answer says so
(``driver.status: TimeLimitExceeded``). An interpreter that dies (``os._exit``, a signal,
the session's memory limit) ends the run the same way with ``driver.status: Error`` and
how it died as the message. Each request gets its own session, closed when the
answer is ready; it counts against the session cap (429 beyond it).
"""

from __future__ import annotations

import functools
import time
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from ..errors import SandboxError, ValidationError
from ..sessions import CellResult, SessionBase, SessionEnded, SessionLimits, SessionRefused
from . import _convert
from ._callers import callers_of
from ._service import Svc, Who, caller_of
from .models import CommandRunResult, CommandRunStatus, RunStatus
from .sessions import call_off_loop, manager

router = APIRouter(tags=["sandboxfusion"])


class RunJupyterRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    cells: list[str]
    cell_timeout: float = 0
    total_timeout: float = 45
    kernel: str = "python3"
    files: dict[str, str | None] = Field(default_factory=dict)
    fetch_files: list[str] = Field(default_factory=list)


class CellRunResult(BaseModel):
    stdout: str
    stderr: str
    display: list[dict[str, Any]]
    error: list[dict[str, Any]]


class RunJupyterResponse(BaseModel):
    status: RunStatus
    message: str
    driver: CommandRunResult | None = None
    cells: list[CellRunResult] = []
    executor_pod_name: str | None = None
    files: dict[str, str] = {}


def _check(body: RunJupyterRequest, max_time_s: float) -> None:
    if body.kernel != "python3":
        raise ValidationError("kernel", f"only 'python3' is served, not {body.kernel!r}")
    if not 0 < body.total_timeout <= max_time_s * 10:
        raise ValidationError("total_timeout", f"must be in (0, {max_time_s * 10:g}] seconds")
    if not 0 <= body.cell_timeout <= body.total_timeout:
        raise ValidationError("cell_timeout", "must be in [0, total_timeout] (0: no own limit)")
    if len(body.cells) > 1000:
        raise ValidationError("cells", "at most 1000 cells")


def _cell(c: CellResult) -> CellRunResult:
    return CellRunResult(stdout=c.stdout, stderr=c.stderr, display=c.display, error=c.error)


def _run(session: SessionBase, body: RunJupyterRequest, fetch: list[str]) -> RunJupyterResponse:
    start = time.monotonic()
    cells: list[CellRunResult] = []
    status = CommandRunStatus.Finished
    failed = False
    died = ""
    for code in body.cells:
        left = body.total_timeout - (time.monotonic() - start)
        limit = min(left, body.cell_timeout) if body.cell_timeout > 0 else left
        if limit <= 0:
            status = CommandRunStatus.TimeLimitExceeded
            break
        result = session.run_cell(code, timeout_s=limit)
        if result.status == "died":  # os._exit, a signal, out of memory: the program's end
            cells.append(CellRunResult(stdout="", stderr=result.detail, display=[], error=[]))
            status, died = CommandRunStatus.Error, result.detail
            break
        if result.status not in ("ok", "error"):  # stopped at its timeout
            cells.append(CellRunResult(stdout="", stderr=result.status, display=[], error=[]))
            status = CommandRunStatus.TimeLimitExceeded
            break
        failed = failed or bool(result.error)
        cells.append(_cell(result))
    files: dict[str, str] = {}
    for path in fetch:
        try:
            files[path] = _convert.b64(session.read_file(path))
        except SessionRefused:
            continue  # a file the cells did not write is left out, as SandboxFusion does
    ok = status == CommandRunStatus.Finished and not failed
    return RunJupyterResponse(
        status=RunStatus.Success if ok else RunStatus.Failed,
        message=_message(status, failed, died),
        driver=CommandRunResult(
            status=status,
            execution_time=time.monotonic() - start,
            return_code=0 if status == CommandRunStatus.Finished else None,
        ),
        cells=cells,
        files=files,
    )


def _message(status: CommandRunStatus, failed: bool, died: str) -> str:
    if status == CommandRunStatus.Error:
        return died
    if status == CommandRunStatus.TimeLimitExceeded:
        return "time limit exceeded"
    return "a cell raised" if failed else ""


@router.post("/run_jupyter", response_model=RunJupyterResponse)
async def run_jupyter(
    body: RunJupyterRequest, request: Request, svc: Svc, who: Who
) -> RunJupyterResponse:
    """Run notebook cells in one Python interpreter whose state carries from cell to cell."""
    settings = svc.settings
    _check(body, settings.max_time_s)
    files = _convert.files(body.files, settings)
    fetch = _convert.fetch(body.fetch_files, settings)
    m = manager(request.app, svc.executor)
    ttl = body.total_timeout + 30.0
    limits = SessionLimits(
        cpu_s=body.total_timeout + 5.0,
        memory_mb=settings.default_memory_mb,
        disk_mb=256,
        output_bytes=settings.max_output_bytes,
    )
    try:
        who_calls = caller_of(request.scope, "sessions")
        async with callers_of(m).starts.hold(who_calls):  # (its sessions' caller)
            session = await call_off_loop(
                functools.partial(
                    m.create,
                    files=files,
                    limits=limits,
                    ttl_s=ttl,
                    idle_ttl_s=ttl,
                    caller=who_calls,
                    owner=who.name,
                )
            )
    except SandboxError as exc:
        return RunJupyterResponse(status=RunStatus.SandboxError, message=str(exc))
    try:
        return await call_off_loop(_run, session, body, fetch)
    except SessionEnded as exc:
        return RunJupyterResponse(status=RunStatus.Failed, message=str(exc))
    finally:
        await call_off_loop(session.close)
