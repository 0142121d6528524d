"""The session API's request and answer models, and the checks that turn a request into
the session layer's own typed values (``SessionLimits``, ``ExecStep``), done once here."""

from __future__ import annotations

import base64
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .. import defaults
from ..errors import ValidationError
from ..sessions import ExecStep, SessionLimits
from ..types import OutputEncoding
from . import _convert
from .models import Priority, ProcessOutput, _Environment
from .settings import Settings

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


class CreateRequest(_Environment):
    model_config = ConfigDict(extra="forbid")
    files: dict[str, str | None] = Field(default_factory=dict, description="path -> base64")
    limits: SessionLimitsModel | None = None
    ttl_s: float = defaults.SESSION_TTL_S
    idle_ttl_s: float = defaults.SESSION_IDLE_TTL_S
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
    episode_id: str | None = Field(
        None, min_length=1, max_length=200, description="the episode its records belong to"
    )
    loopback: bool = Field(
        True, description="127.0.0.1 inside the session (its own network namespace) works"
    )


class VerifyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    diagnosis: dict[str, Any] | None = None


class ExecRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: str
    idle_timeout_s: float | None = None
    stdin: str = ""
    timeout_s: float = defaults.SESSION_STEP_TIMEOUT_S
    output_encoding: OutputEncoding = Field(
        "utf-8", description="stdout/stderr in the answer: utf-8 (lossy) or base64 (exact bytes)"
    )
    stdin_encoding: OutputEncoding = Field(
        "utf-8", description="how `stdin` is given: utf-8 text or base64 (any bytes)"
    )


class ExecResponse(ProcessOutput):
    timed_out: bool
    reason: str | None


class CellRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    code: str
    timeout_s: float = defaults.SESSION_STEP_TIMEOUT_S


def session_limits(model: SessionLimitsModel, settings: Settings) -> SessionLimits:
    """A session's limits, each within the service's caps like the run API's (422 naming
    the field): a session cannot ask for what ``/v1/run`` would refuse."""
    caps: dict[str, float] = {
        "cpu_s": settings.max_session_cpu_s,
        "memory_mb": settings.max_memory_mb,
        "processes": settings.max_processes,
        "disk_mb": settings.max_session_disk_mb,
        "output_bytes": settings.max_output_bytes,
        "step_cpu_s": min(model.cpu_s, settings.max_session_cpu_s),
        "step_memory_mb": settings.max_memory_mb,
    }
    for name, cap in caps.items():
        value = getattr(model, name)
        if isinstance(value, int | float) and value > cap:
            raise ValidationError(f"limits.{name}", f"at most {cap:g}, got {value:g}")
    try:
        return SessionLimits(**model.model_dump())
    except TypeError as exc:
        raise ValidationError("limits", str(exc)) from None


def exec_step(body: ExecRequest, settings: Settings) -> ExecStep:
    """The step an exec request asks for, checked here once (422 naming the field)."""
    if body.stdin_encoding == "base64":
        try:
            stdin = base64.b64decode(body.stdin, validate=True)
        except ValueError:
            raise ValidationError("stdin", "not base64 (stdin_encoding is base64)") from None
        if len(stdin) > settings.max_stdin_bytes:
            raise ValidationError("stdin", f"more than {settings.max_stdin_bytes} bytes")
    else:
        stdin = _convert.stdin(body.stdin, settings)
    return ExecStep(body.command, body.timeout_s, body.idle_timeout_s, stdin)
