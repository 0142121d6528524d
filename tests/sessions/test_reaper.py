"""The reaper ends sessions past their TTL or idle TTL, and only those."""

from __future__ import annotations

import time
from pathlib import Path

from assay import LocalExecutor, Runner
from assay.executor import RunJob
from assay.sessions import Session, SessionLimits

SMALL = SessionLimits(cpu_s=60, memory_mb=256, processes=32, disk_mb=64)


def test_a_step_waiting_for_a_slot_is_not_idle(runner: Runner, tmp_path: Path) -> None:
    """On an executor a step waits in the queue for a slot; a session whose step waits longer
    than its idle TTL is in use, not idle, and the reaper must leave it (the soak found
    sessions reaped so mid-episode when the queue was long)."""
    with LocalExecutor(runner, slots=1, state_dir=tmp_path) as ex:
        with Session(ex, limits=SMALL, idle_ttl_s=1.0) as s:
            holder = ex.submit([RunJob("import time; time.sleep(3)")], caller="trainer")
            time.sleep(0.3)  # the run holds the only slot for 3 s, past the idle TTL
            step = s.exec("echo still here")
            assert step.stdout == b"still here\n"
            assert not s.ended, s.end_reason
            assert [r.verdict for r in holder] == ["ok"]
