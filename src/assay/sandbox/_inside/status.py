"""The one rule that turns what happened to a run into its status, for every tier.

The default tier's supervisor (``sandbox/_run.py``) and the gVisor tier's host side
(``sandbox/_gvcontainer.py``) both call :func:`decide` with the facts they measured; the
gVisor exec server, which enforces the wall backstop inside its sandbox, gets this module's
text shipped from the host (as it gets ``pyrun``) and uses :class:`CpuWindow`,
:func:`stretched_wall` and :func:`on_course`, so a still-computing program gets the same
stretch on both tiers. Same input, same status (DESIGN principle 4).

Pure functions of plain values, standard library only, and Python 3.9+ (an image's
interpreter runs the exec server).
"""

from __future__ import annotations

import math
import signal

#: How far past the default wall backstop a still-computing program may go (a multiple of
#: the backstop). An explicit ``wall_s`` is enforced as given.
WALL_STRETCH = 4.0
#: CPU share (of one core) below which a program is not computing at all.
COMPUTING_SHARE = 0.02
#: The share is measured over at least this much recent wall time. On a loaded host a
#: computing program gets the CPU in slices of a few ms with long gaps between them, so a
#: shorter window (one poll interval) can see zero CPU and take it for a sleeper.
COMPUTING_WINDOW_S = 0.5
#: How much of the end of stderr is searched for an uncaught ``MemoryError``.
MEMORY_ERROR_TAIL = 4096

#: Why the trusted side stopped a run: its CPU time, the wall backstop, its output, its
#: memory (where memory is polled rather than enforced by a cgroup), or the caller.
KILL_REASONS = ("time", "wall", "output", "memory", "stopped")


def decide(
    *,
    kill_reason: str | None,
    reported: bool,
    failed: bool,
    oom: bool,
    exit_code: int | None,
    sig: int | None,
    cpu_s: float,
    time_s: float,
    stderr_tail: bytes,
) -> str:
    """The status of one run.

    ``kill_reason``: why the trusted side killed it (one of :data:`KILL_REASONS`) or None;
    ``reported``: whether its end was observed (an exit record or a wait status);
    ``failed``: whether *our* side failed (setup, the slot, the transport); ``oom``: the
    kernel's memory accounting stopped it; ``cpu_s``: the CPU time the kernel charged it,
    against ``time_s``; ``stderr_tail``: the end of what it wrote to stderr.

    The order is the rule: the caller's stop, then the limits the trusted side enforced
    (output, CPU time — over the limit even if it ended between two readings — and the wall
    backstop), then our own failures, then memory, then the signals of the rlimits (SIGXCPU
    is CPU time, SIGXFSZ is a file-size limit: output), then the program's own exit.
    """
    if kill_reason == "stopped":
        return "runtime_error"  # killed at the caller's request
    if kill_reason == "output":
        return "output_limit"
    if kill_reason in ("time", "wall") or (reported and cpu_s > time_s):
        return "time_limit"
    if failed or not reported:
        return "sandbox_error"
    if oom or kill_reason == "memory":
        return "memory_limit"
    if sig == signal.SIGXCPU:
        return "time_limit"
    if sig == signal.SIGXFSZ:
        return "output_limit"
    if sig is not None or (exit_code is not None and exit_code != 0):
        if memory_error(stderr_tail):
            return "memory_limit"
        return "runtime_error"
    return "ok"


def memory_error(stderr: bytes) -> bool:
    """Whether a program that failed ended on an uncaught ``MemoryError``: the last line of
    a Python traceback. An allocation past the limit fails that way where the limit is an
    address-space rlimit, and is OOM-killed where it is a cgroup's: both are the memory
    limit. (A program that raises it itself only changes which failure it gets.)"""
    lines = stderr[-MEMORY_ERROR_TAIL:].rstrip().rsplit(b"\n", 1)
    last = lines[-1].strip() if lines else b""
    return last == b"MemoryError" or last.startswith(b"MemoryError:")


def stretched_wall(wall_s: float, explicit: bool) -> float:
    """The hard wall limit: an explicit ``wall_s`` as given; the default backstop may be
    stretched for a program still computing when it fires (slowed by a busy machine), so
    load cannot turn into a verdict."""
    return wall_s if explicit else wall_s * WALL_STRETCH


def cpu_check_after(cpu_s: float, time_s: float, ncpu: int, floor_s: float, cap_s: float) -> float:
    """Seconds until a run's CPU time must be read again: the earliest moment it could
    cross ``time_s`` (CPU grows at most ``ncpu`` seconds per wall second), at least
    ``floor_s`` and at most ``cap_s`` (the request's ``cpu_poll_s``: how far past its limit
    a run may go). A run far from its limit, a session's agent of hours, is read rarely;
    under gVisor each reading is a walk of the sandbox kernel's /proc, paid in host CPU."""
    return min(max((time_s - cpu_s) / max(1, ncpu), floor_s), cap_s)


def on_course(
    demand: float, cpu_s: float, time_s: float, now: float, started: float, hard_wall: float
) -> bool:
    """Whether a run past its wall backstop computes at a pace (``demand``: CPU seconds per
    wall second it would use alone) that reaches its CPU limit before ``hard_wall``: a
    program slowed by a busy host is, a mostly sleeping one (a few % of a CPU) is not, and
    is stopped at once rather than holding its slot for the whole stretch."""
    if demand < COMPUTING_SHARE:
        return False
    remaining = max(0.0, time_s - cpu_s)
    return now + remaining / demand <= started + hard_wall


class CpuWindow:
    """The CPU rate a run would have on an idle machine, over the last
    :data:`COMPUTING_WINDOW_S` to ``2 *`` that of wall time.

    From CPU time used and time spent runnable but waiting for a CPU (the scheduler's
    run-queue wait, ``/proc/<tid>/schedstat``, where the kernel keeps it; 0 elsewhere): what
    is left of the wall time is time the program chose to sleep or block, so
    ``cpu / (wall - wait)`` is its rate with no one else about.

    Two reference samples are kept: the newest one at least a window old is the base, so the
    measured span is never shorter than one window, whatever the poll timing.
    """

    __slots__ = ("base", "last", "mark")

    def __init__(self, started: float) -> None:
        self.base = (started, 0.0, 0.0)
        self.mark = (started, 0.0, 0.0)
        self.last = (started, 0.0, 0.0)

    def add(self, at: float, cpu: float, waited: float) -> None:
        self.last = (at, cpu, waited)
        if at - self.mark[0] >= COMPUTING_WINDOW_S:
            self.base, self.mark = self.mark, (at, cpu, waited)

    def share(self) -> float:
        """CPU seconds per wall second the run would use alone (inf: never sleeps)."""
        span = self.last[0] - self.base[0]
        if span <= 0:
            return 0.0
        cpu = self.last[1] - self.base[1]
        awake = span - (self.last[2] - self.base[2])
        if awake <= 0.05 * span:  # runnable all the time (or several busy threads)
            return math.inf if cpu > 0 else 0.0
        return cpu / awake
