"""Claim: a program that never uses CPU but never ends is stopped by the wall-clock backstop.

Sleeping, pausing, selecting on nothing, deadlocking on its own lock or blocking on a pipe
nobody writes to costs no CPU, so the CPU limit never fires; the wall backstop (``wall_s``,
by default ``3 * time_s + 1``) must end the run as ``time_limit``, within a moment of the
backstop and never much later.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from assay import Limits

BLOCKERS = {
    "sleep": "import time\ntime.sleep(10**6)\n",
    "pause": "import signal\nsignal.pause()\n",
    "event": "import threading\nthreading.Event().wait()\n",
    "own-pipe": "import os\nr, w = os.pipe()\nos.read(r, 1)\n",
    "select-nothing": "import select\nselect.select([], [], [])\n",
    "self-deadlock": "import threading\nlock = threading.Lock()\nlock.acquire()\nlock.acquire()\n",
}


def test_blocked_programs_hit_the_wall_backstop(runner, gvisor: bool) -> None:  # type: ignore[no-untyped-def]
    default_backstop = Limits(time_s=0.5)
    assert default_backstop.effective_wall_s == 2.5
    cases = [(name, code, default_backstop) for name, code in BLOCKERS.items()]
    cases.append(("sleep-explicit-wall", BLOCKERS["sleep"], Limits(time_s=5, wall_s=1.5)))

    def run(case: tuple[str, str, Limits]) -> tuple[str, Limits, float, object]:
        name, code, limits = case
        started = time.monotonic()
        result = runner.run(code, limits=limits)
        return name, limits, time.monotonic() - started, result

    # Sleepers cost no CPU: run them side by side to keep the test short.
    with ThreadPoolExecutor(len(cases)) as pool:
        outcomes = list(pool.map(run, cases))

    for name, limits, elapsed, result in outcomes:
        backstop = limits.effective_wall_s
        assert result.status == "time_limit", (name, result.status, result.stderr[-2000:])
        assert result.cpu_s < limits.time_s, (name, result.cpu_s)
        assert backstop - 0.05 <= result.wall_s <= backstop + 1.0, (name, result.wall_s)
        # Under gVisor the runs past its warm pool (2 sandboxes) first wait for a sandbox to
        # start (about a second, more when several start at once); wall_s above is the
        # backstop itself.
        assert elapsed <= backstop + (4.5 if gvisor else 1.5), (name, elapsed)
