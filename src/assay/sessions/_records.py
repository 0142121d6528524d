"""Execution records of a session's steps and verifications (principle 6).

Each ``exec`` and ``run_cell`` step, and each verification, is one record in the same
stream, schema and writer as judged runs (``assay.telemetry.Record``): ``kind`` says which
(``session_step``, ``session_cell``, ``session_verify``), ``session_id``, ``episode_id`` and
``step`` place it in its episode, ``code`` is the command or cell, outputs are capped as a
run's are, and a verification carries its verdict, reward and ``step_reward``. An episode is
audited, or replayed command by command, from its records alone.
"""

from __future__ import annotations

import hashlib
import logging
import socket
import time
from typing import Any, Protocol

from ..telemetry import RecordWriter
from .types import SessionLimits


class Recorded(Protocol):
    """What a record says of its session (``Session`` is one; no import of it here)."""

    records: RecordWriter | None
    id: str
    episode_id: str
    task_id: str | None
    caller: str
    priority: int
    steps: int
    limits: SessionLimits


log = logging.getLogger("assay.sessions")

#: Caps on what a record keeps of a command and of each output stream (as a run's record).
CODE_CAP = 64 * 1024
STREAM_CAP = 4 * 1024
_HOST = socket.gethostname()


def _text(data: str | bytes, cap: int) -> tuple[str, bool]:
    raw = data.encode() if isinstance(data, str) else data
    return raw[:cap].decode(errors="replace"), len(raw) > cap


def write(
    session: Recorded,
    kind: str,
    code: str,
    started_at: float,
    fields: dict[str, Any],
) -> None:
    """Write one record of ``session`` (``fields``: what the step or verification gave);
    a failing writer is logged, never raised into the step."""
    records = session.records
    if records is None:
        return
    try:
        records.write(_build(session, kind, code, started_at, fields))
    except Exception:
        log.exception("could not write the record of a step of session %s", session.id)


def _build(
    session: Recorded, kind: str, code: str, started_at: float, fields: dict[str, Any]
) -> dict[str, Any]:
    text, cut = _text(code, CODE_CAP)
    stdout, out_cut = _text(fields.pop("stdout", b""), STREAM_CAP)
    stderr, err_cut = _text(fields.pop("stderr", b""), STREAM_CAP)
    lim = session.limits
    job_id = f"{session.id}-{session.steps if kind != 'session_verify' else 'v'}-{time.time_ns()}"
    record: dict[str, Any] = {
        "record_version": 1,
        "job_id": job_id,
        "batch_id": session.episode_id,
        "caller": session.caller,
        "kind": kind,
        "problem_id": session.task_id,
        "language": "python" if kind == "session_cell" else "bash",
        "toolchain": "",
        "code_sha256": hashlib.sha256(code.encode()).hexdigest(),
        "code": text,
        "code_truncated": cut,
        "limits": {
            "time_s": lim.cpu_s,
            "wall_s": fields.pop("timeout_s", None),
            "memory_mb": lim.memory_mb,
            "processes": lim.processes,
            "output_bytes": lim.output_bytes,
            "file_bytes": lim.disk_mb << 20,
            "disk_mb": lim.disk_mb,
        },
        "priority": session.priority,
        "deadline_at": None,
        "outcome": "done",
        "verdict": None,
        "reward": None,
        "reason": "",
        "tests": [],
        "passed": 0,
        "total": 1,
        "cpu_s": 0.0,
        "wall_s": time.time() - started_at,
        "peak_memory_bytes": 0,
        "exit_code": None,
        "signal": None,
        "stdout": stdout,
        "stderr": stderr,
        "stdout_truncated": out_cut or bool(fields.pop("stdout_truncated", False)),
        "stderr_truncated": err_cut or bool(fields.pop("stderr_truncated", False)),
        "submitted_at": started_at,
        "started_at": started_at,
        "ended_at": time.time(),
        "queue_wait_s": 0.0,
        "attempt": 1,
        "cache_hit": False,
        "source_job_id": job_id,
        "worker": "",
        "host": _HOST,
        "session_id": session.id,
        "episode_id": session.episode_id,
        "step": session.steps,
        "step_reward": None,
    }
    record.update((k, v) for k, v in fields.items() if k in record)
    record["reason"] = str(record["reason"] or "")[:1000]
    return record


def verified(result: Any) -> dict[str, Any]:
    """A ``VerifyResult``'s record fields: verdict, rewards, tests passed, the reason."""
    return {
        "verdict": result.verdict,
        "reward": result.reward,
        "step_reward": result.step_reward,
        "passed": result.passed,
        "total": result.total,
        "reason": result.reason,
        "outcome": "done" if result.verdict != "sandbox_error" else "error",
    }
