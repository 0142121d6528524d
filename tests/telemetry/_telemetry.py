"""Builders of execution records shaped exactly like the executor's (shared by these tests)."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

MakeRecord = Callable[..., dict[str, Any]]

ids = itertools.count()

#: 2024-05-01 12:00 UTC: a fixed noon, so "the same day" never straddles midnight in a test.
NOON = datetime(2024, 5, 1, 12, tzinfo=UTC).timestamp()


def record(**overrides: Any) -> dict[str, Any]:
    """A complete, valid record; every field can be overridden."""
    n = next(ids)
    code = overrides.pop("code", f"print({n})\n")
    ended = overrides.pop("ended_at", NOON)
    rec: dict[str, Any] = {
        "record_version": 1,
        "job_id": f"job-{n:06d}",
        "batch_id": "batch-1",
        "caller": "test",
        "kind": "judge",
        "problem_id": "p1",
        "language": "python",
        "toolchain": "cpython-3.11",
        "code_sha256": hashlib.sha256(code.encode()).hexdigest(),
        "code": code,
        "code_truncated": False,
        "limits": {
            "time_s": 2.0,
            "wall_s": 7.0,
            "memory_mb": 256,
            "processes": 64,
            "output_bytes": 1 << 20,
            "file_bytes": 1 << 20,
            "disk_mb": 128,
        },
        "priority": 0,
        "deadline_at": None,
        "outcome": "done",
        "verdict": "accepted",
        "reward": 1.0,
        "reason": "",
        "tests": [
            {
                "index": 0,
                "verdict": "accepted",
                "cpu_s": 0.01,
                "wall_s": 0.02,
                "peak_memory_bytes": 10 << 20,
                "message": "",
            }
        ],
        "passed": 1,
        "total": 1,
        "cpu_s": 0.01,
        "wall_s": 0.02,
        "peak_memory_bytes": 10 << 20,
        "exit_code": 0,
        "signal": None,
        "stdout": "ok\n",
        "stderr": "",
        "stdout_truncated": False,
        "stderr_truncated": False,
        "submitted_at": ended - 1.0,
        "started_at": ended - 0.5,
        "ended_at": ended,
        "queue_wait_s": 0.5,
        "attempt": 0,
        "cache_hit": False,
        "worker": "w0",
        "host": "h0",
        "source_job_id": f"job-{n:06d}",
        "session_id": None,
        "episode_id": None,
        "step": None,
        "step_reward": None,
    }
    rec.update(overrides)
    if "job_id" in overrides and "source_job_id" not in overrides:
        rec["source_job_id"] = overrides["job_id"]
    return rec
