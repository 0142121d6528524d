"""Claim: a mostly sleeping program cannot hold its slot past the wall backstop.

Attack (red-team finding 6): 5% CPU and 95% sleep kept a run alive for 4x its wall limit,
because anything above ~2% of a CPU counted as "still computing" and earned the stretch that
protects CPU-bound programs on a busy host. The stretch is now given only to a run on course
to reach its CPU limit within it.
"""

from __future__ import annotations

from assay import Limits

SLEEPY = """
import time
while True:
    t = time.process_time()
    while time.process_time() - t < 0.003:
        pass
    time.sleep(0.097)
"""


def test_mostly_sleeping_program_is_stopped_at_the_wall_backstop(runner, gvisor: bool) -> None:  # type: ignore[no-untyped-def]
    # ~3-5% of a CPU with the interpreter's own overhead: at that pace the 1 s CPU limit is
    # 20+ s away, past the 16 s the stretch allows, so the stretch is refused. (A program
    # using more than 1/16 of a CPU would reach its CPU limit within the stretch and keep it.)
    limits = Limits(time_s=1)  # wall backstop 4 s; the stretch would allow 16 s
    result = runner.run(SLEEPY, limits=limits)
    assert result.status == "time_limit", result.status
    assert result.wall_s < limits.effective_wall_s + 1.5, result.wall_s
    # gVisor counts CPU in 10 ms ticks, so each 3 ms spin is charged as more: still far
    # below the 1 s limit (the wall ended it, not the CPU).
    assert result.cpu_s < (0.9 if gvisor else 0.5), result.cpu_s
