"""Checks of a session's arguments on the trusted side (paths, files, times)."""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError

if TYPE_CHECKING:
    from .types import SessionLimits

#: The agent's own start-up files in /work (it removes them once loaded).
AGENT = ".assay_agent.py"
AGENT_PYC = ".assay_agent.pyc"
KERNEL = ".assay_kernel.py"
#: A session's longest TTL, and the longest wall limit of a run (``Limits.wall_s``).
MAX_TTL_S = 4 * 3600.0


def check_time(field: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(field, f"must be a number, got {value!r}")
    if not 0 < value <= MAX_TTL_S:
        raise ValidationError(field, f"must be in (0, {MAX_TTL_S:.0f}] seconds, got {value!r}")
    return float(value)


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


def exec_message(
    limits: SessionLimits,
    command: str,
    timeout_s: float,
    idle_timeout_s: float | None,
    stdin: str | bytes,
) -> tuple[dict[str, Any], float]:
    """The agent's exec request for a session of ``limits`` (arguments checked) and the
    step's timeout."""
    if not isinstance(command, str) or not command.strip():
        raise ValidationError("command", "must be a non-empty string")
    if len(command) > 100_000:
        raise ValidationError("command", "at most 100,000 characters")
    timeout = check_time("timeout_s", timeout_s)
    idle = None if idle_timeout_s is None else check_time("idle_timeout_s", idle_timeout_s)
    data = stdin.encode() if isinstance(stdin, str) else stdin
    if not isinstance(data, bytes):
        raise ValidationError("stdin", "must be str or bytes")
    msg = {
        "op": "exec",
        "command": command,
        "timeout_s": timeout,
        "idle_timeout_s": idle,
        "output_bytes": limits.output_bytes,
        "cpu_s": limits.step_cpu_s,
        "memory_mb": limits.step_memory_mb,
        "stdin": base64.b64encode(data).decode(),
    }
    return msg, timeout
