"""The agent's replies to steps, turned into results on the trusted side.

A reply is untrusted data (the agent runs as the sandbox's user): every field is converted
with bounds, and a reply that cannot be is the caller's to treat as a broken session.
"""

from __future__ import annotations

import base64
from typing import Any, cast

from ..errors import SessionFault, SessionRefused
from ._args import opt_int
from .types import STEP_REASONS, CellResult, StepReason, StepResult


def step_result(reply: dict[str, Any]) -> StepResult:
    """An ``exec`` reply as a ``StepResult`` (``ValueError``/``TypeError`` if malformed)."""
    reason = reply.get("reason")
    return StepResult(
        exit_code=opt_int(reply.get("exit_code")),
        signal=opt_int(reply.get("signal")),
        stdout=base64.b64decode(reply.get("stdout", "")),
        stderr=base64.b64decode(reply.get("stderr", "")),
        stdout_truncated=bool(reply.get("stdout_truncated")),
        stderr_truncated=bool(reply.get("stderr_truncated")),
        timed_out=bool(reply.get("timed_out")),
        reason=_reason(reason),
        cpu_s=float(reply.get("cpu_s", 0.0)),
        wall_s=float(reply.get("wall_s", 0.0)),
        peak_memory_bytes=int(reply.get("peak_memory_bytes", 0)),
    )


def not_started(fault: SessionFault) -> StepResult:
    """The answer to a step the session could not start (``reason`` names why; stderr
    says it in words): an answer about the session, not an error blaming the request."""
    reason: StepReason = "pids_limit" if fault.kind == "pids_limit" else "cannot_start"
    return StepResult(
        exit_code=None,
        signal=None,
        stdout=b"",
        stderr=f"assay: {fault}\n".encode(),
        stdout_truncated=False,
        stderr_truncated=False,
        timed_out=False,
        reason=reason,
        cpu_s=0.0,
        wall_s=0.0,
        peak_memory_bytes=0,
    )


def refusal(reply: dict[str, Any]) -> SessionFault:
    """A failed reply: raises ``SessionRefused`` if the agent refused the request (a path
    out of /work, no such file); returns the ``SessionFault`` if the session's own state
    failed it (the caller ends the session if it must, then raises it)."""
    why = str(reply.get("error", "refused"))[:1000]
    if "fault" not in reply:
        raise SessionRefused(why)
    return SessionFault(str(reply["fault"])[:40], why)


def cell_result(reply: dict[str, Any]) -> CellResult:
    return CellResult(
        status=str(reply.get("status", "error")),
        stdout=str(reply.get("stdout", "")),
        stderr=str(reply.get("stderr", "")),
        display=[d for d in reply.get("display", []) if isinstance(d, dict)],
        error=[e for e in reply.get("error", []) if isinstance(e, dict)],
        restarted=bool(reply.get("restarted")),
        detail=str(reply.get("detail", ""))[:2000],
    )


def _reason(value: object) -> StepReason | None:
    return cast("StepReason", value) if value in STEP_REASONS else None
