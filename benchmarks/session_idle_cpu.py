"""What a held session costs the machine while it waits: CPU of the whole machine (all
processes, /proc/stat) with N sessions open and idle, and with each running a sleeping step,
against the same window with no session open (the baseline: whatever else runs here).

A session's sandbox is one long run: its supervisor (and, on the gVisor tier, the exec
server inside the sandbox) watches it for hours, and a sleeping step is watched by the
agent. Each watcher's wake-ups are paid in host CPU, and a tenant holding many sessions
must not take the machine from another tenant's batch by waiting (issue 26). Ends with one
JSON line; cores are fractions of one CPU.

    .venv/bin/python benchmarks/session_idle_cpu.py [--sessions 4] [--seconds 5] [--isolation gvisor]
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from typing import Any

from assay import Runner
from assay.sandbox import SandboxConfig
from assay.sessions import Session


def _busy_s() -> float:
    """CPU seconds the whole machine has spent outside idle and iowait since boot."""
    with open("/proc/stat") as fh:
        ticks = [int(v) for v in fh.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def _cores(seconds: float) -> float:
    before = _busy_s()
    time.sleep(seconds)
    return (_busy_s() - before) / seconds


def measure(sessions: int = 4, seconds: float = 5.0, isolation: str = "default") -> dict[str, Any]:
    with Runner(config=SandboxConfig(isolation=isolation)) as runner:
        baseline = _cores(seconds)
        held = [Session(runner) for _ in range(sessions)]
        try:
            time.sleep(1.0)  # let the starts settle
            idle = _cores(seconds)
            steps = [
                threading.Thread(target=s.exec, args=(f"sleep {seconds + 3:.0f}",)) for s in held
            ]
            for t in steps:
                t.start()
            time.sleep(1.0)
            sleeping = _cores(seconds)
            for t in steps:
                t.join()
        finally:
            for s in held:
                s.close()
    return {
        "isolation": isolation,
        "sessions": sessions,
        "baseline_cores": round(baseline, 3),
        "idle_cores_per_session": round((idle - baseline) / sessions, 4),
        "sleeping_step_cores_per_session": round((sleeping - baseline) / sessions, 4),
        "load_1min": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=4, help="sessions held at once")
    ap.add_argument("--seconds", type=float, default=5.0, help="length of each measurement")
    ap.add_argument("--isolation", default="default", help="default or gvisor")
    args = ap.parse_args()
    print(json.dumps(measure(args.sessions, args.seconds, args.isolation)))


if __name__ == "__main__":
    main()
