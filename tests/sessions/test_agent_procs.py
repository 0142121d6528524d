"""The agent's reading of a step's CPU (``_inside/procs.most_cpu``): what RLIMIT_CPU counts,
per process, for the processes of one process group, read from /proc."""

from __future__ import annotations

import os
import signal
import time

from assay.sessions._inside.procs import most_cpu


def _spinner(pgid: int) -> int:
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, pgid)
        while True:
            pass
    return pid


def _leader() -> int:
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        time.sleep(60)
        os._exit(0)
    os.setpgid(pid, pid)
    return pid


def test_the_busiest_process_of_the_group_is_read() -> None:
    leader, other = _leader(), _leader()
    started = time.monotonic()
    spinner = _spinner(leader)
    try:
        busy = most_cpu(leader)
        while busy < 0.3 and time.monotonic() - started < 30:  # (slower on a busy host)
            time.sleep(0.05)
            busy = most_cpu(leader)
        assert busy >= 0.3, busy
        # One process, so at most one CPU second per second (and a tick of rounding).
        assert busy <= time.monotonic() - started + 0.02, busy
        assert most_cpu(other) < 0.1  # another group's processes do not count
    finally:
        for group in (leader, other):
            os.killpg(group, signal.SIGKILL)
        for pid in (spinner, leader, other):
            os.waitpid(pid, 0)
    assert most_cpu(leader) == 0  # a group with no live member used nothing now
