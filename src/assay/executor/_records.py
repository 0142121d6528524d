"""Turning a finished job into the execution record that telemetry stores."""

from __future__ import annotations

import logging
import socket
import time
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from ..telemetry import NullWriter, RecordWriter
from .backend import JobInfo
from .types import JobResult

if TYPE_CHECKING:
    from ._jobs import Sub

log = logging.getLogger("assay.executor")

#: Caps on what a record keeps of the code and of each output stream.
CODE_CAP = 64 * 1024
STREAM_CAP = 4 * 1024
MESSAGE_CAP = 300

_HOST = socket.gethostname()


def _text(data: bytes, cap: int) -> tuple[str, bool]:
    return data[:cap].decode(errors="replace"), len(data) > cap


def build(
    info: JobInfo,
    result: JobResult,
    *,
    batch_id: str,
    caller: str,
    priority: int,
    deadline_at: float | None,
    submitted_at: float,
    started_at: float | None,
    ended_at: float,
) -> dict[str, Any]:
    code, code_truncated = _text(info.code, CODE_CAP)
    ex = result.result
    judgement = result.judgement
    stdout, out_cut = _text(ex.stdout, STREAM_CAP) if ex is not None else ("", False)
    stderr, err_cut = _text(ex.stderr, STREAM_CAP) if ex is not None else ("", False)
    tests = (
        [
            {
                "index": t.index,
                "verdict": t.verdict,
                "cpu_s": t.cpu_s,
                "wall_s": t.wall_s,
                "peak_memory_bytes": t.peak_memory_bytes,
                "message": t.message[:MESSAGE_CAP],
            }
            for t in judgement.tests
        ]
        if judgement is not None
        else []
    )
    if ex is not None:
        cpu, wall, peak = ex.cpu_s, ex.wall_s, ex.peak_memory_bytes
    elif judgement is not None:
        cpu = sum(t.cpu_s for t in judgement.tests)
        wall = sum(t.wall_s for t in judgement.tests)
        peak = max((t.peak_memory_bytes for t in judgement.tests), default=0)
    else:
        cpu, wall, peak = 0.0, 0.0, 0
    return {
        "record_version": 1,
        "job_id": result.job_id,
        "batch_id": batch_id,
        "caller": caller,
        "kind": info.kind,
        "problem_id": info.problem_id,
        "language": info.language,
        "toolchain": info.toolchain,
        "code_sha256": _sha(info.code),
        "code": code,
        "code_truncated": code_truncated,
        "limits": {f.name: getattr(info.limits, f.name) for f in fields(info.limits)},
        "priority": priority,
        "deadline_at": deadline_at,
        "outcome": result.outcome,
        "verdict": result.verdict,
        "reward": result.reward,
        "reason": result.reason[:1000],
        "tests": tests,
        "passed": sum(t["verdict"] == "accepted" for t in tests),
        "total": info.size if info.kind == "judge" else 1,
        "cpu_s": cpu,
        "wall_s": wall,
        "peak_memory_bytes": peak,
        "exit_code": ex.exit_code if ex is not None else None,
        "signal": ex.signal if ex is not None else None,
        "stdout": stdout,
        "stderr": stderr,
        "stdout_truncated": out_cut or (ex.stdout_truncated if ex is not None else False),
        "stderr_truncated": err_cut or (ex.stderr_truncated if ex is not None else False),
        "submitted_at": submitted_at,
        "started_at": started_at,
        "ended_at": ended_at,
        "queue_wait_s": result.queue_wait_s,
        "attempt": result.attempts,
        "cache_hit": result.cache_hit,
        "source_job_id": result.source_job_id or result.job_id,
        "worker": result.worker,
        "host": _HOST,
        "session_id": None,
        "episode_id": None,
        "step": None,
        "step_reward": None,
    }


def log_fields(batch_id: str, caller: str, result: JobResult) -> dict[str, Any]:
    """The ``extra`` of the executor's per-job log line: ids and outcome, never code or output."""
    return {
        "event": "job_done",
        "job_id": result.job_id,
        "batch_id": batch_id,
        "caller": caller,
        "outcome": result.outcome,
        "verdict": result.verdict,
        "attempts": result.attempts,
        "cache_hit": result.cache_hit,
        "queue_wait_s": round(result.queue_wait_s, 6),
        "run_s": round(result.run_s, 6),
        "worker": result.worker,
    }


def _sha(code: bytes) -> str:
    import hashlib

    return hashlib.sha256(code).hexdigest()


def write(
    records: RecordWriter, sub: Sub, info: JobInfo, result: JobResult, started_at: float | None
) -> None:
    """Write the record of ``result`` for batch entry ``sub``; a failing writer is logged,
    never raised into the worker that delivered the result."""
    if isinstance(records, NullWriter):
        return  # records are off: do not build what nobody keeps
    try:
        records.write(
            build(
                info,
                result,
                batch_id=sub.handle.id,
                caller=sub.caller,
                priority=sub.priority,
                deadline_at=sub.deadline_at,
                submitted_at=sub.submitted_at,
                started_at=started_at,
                ended_at=time.time(),
            )
        )
    except Exception:
        log.exception("could not write the execution record of job %s", result.job_id)
