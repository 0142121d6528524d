"""Checks of a session's arguments on the trusted side (paths, files, times)."""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from typing import Any

from ..errors import ValidationError
from .types import MAX_TTL_S, ExecStep, SessionLimits, check_time

__all__ = ["MAX_TTL_S", "check_time", "exec_message", "step_cost", "user_files", "work_path"]

#: The agent's own start-up files in /work (it removes them once loaded).
AGENT = ".assay_agent.py"
AGENT_PYC = ".assay_agent.pyc"
KERNEL = ".assay_kernel.py"


def step_cost(cpu_s: object, wall_s: float) -> float:
    """What a step cost its caller's fair share: its CPU time when the agent reports it
    (exec), else its wall time; the agent is inside the sandbox, so its figure is kept
    within [0, wall]. A step that waits (``sleep``) costs next to nothing."""
    if isinstance(cpu_s, bool) or not isinstance(cpu_s, int | float):
        return wall_s
    return min(max(float(cpu_s), 0.0), wall_s)


def user_files(files: Mapping[str, str | bytes] | None) -> list[tuple[str, bytes, int]]:
    out = []
    for path, content in (files or {}).items():
        if not isinstance(path, str):
            raise ValidationError("files", f"path {path!r} must be a string")
        if os.path.normpath(path.removeprefix("/work/")) in (AGENT, AGENT_PYC, KERNEL):
            raise ValidationError(f"files[{path!r}]", "this name is reserved for the session agent")
        if isinstance(content, str):
            content = content.encode()
        if not isinstance(content, bytes):
            raise ValidationError(f"files[{path!r}]", "content must be str or bytes")
        out.append((path, content, 0o644))
    return out


def opt_int(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]


def work_path(path: str, allow_root: bool = False) -> str:
    """Syntax checks on a workspace path (the agent resolves symlinks inside)."""
    if not isinstance(path, str) or "\x00" in path or not path:
        raise ValidationError("path", f"{path!r} must be a non-empty string without NUL")
    rel = path[len("/work/") :] if path.startswith("/work/") else path
    if rel in ("/work", "."):
        rel = "."
    norm = os.path.normpath(rel)
    if rel.startswith("/") or norm == ".." or norm.startswith("../"):
        raise ValidationError("path", f"{path!r} must stay inside /work")
    if norm == "." and not allow_root:
        raise ValidationError("path", f"{path!r} names the workspace itself, not a file")
    return norm


def exec_message(limits: SessionLimits, step: ExecStep) -> dict[str, Any]:
    """The agent's request for ``step`` in a session of ``limits`` (the per-step limits
    travel with it: the agent applies them to the step's processes)."""
    return {
        "op": "exec",
        "command": step.command,
        "timeout_s": step.timeout_s,
        "idle_timeout_s": step.idle_timeout_s,
        "output_bytes": limits.output_bytes,
        "cpu_s": limits.step_cpu_s,
        "memory_mb": limits.step_memory_mb,
        "stdin": base64.b64encode(step.stdin).decode(),
    }
