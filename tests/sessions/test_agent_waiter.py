"""The session agent's step end without ``pidfd_open`` (the sandbox's filter refuses it):
a thread waits for the step and makes a descriptor readable, so the step's loop sleeps in
``poll`` instead of waking every 5 ms to ask (which under gVisor cost a few percent of a
core per sleeping step)."""

from __future__ import annotations

import os
import select
import time

from assay.sessions._inside.agent import Waiter


def _step(sleep_s: float, code: int) -> int:
    pid = os.fork()
    if pid == 0:
        time.sleep(sleep_s)
        os._exit(code)
    return pid


def test_the_waiter_wakes_the_loop_when_the_step_ends() -> None:
    pid = _step(0.3, 7)
    waiter = Waiter.start(pid)
    assert waiter is not None
    poller = select.poll()
    poller.register(waiter.fd, select.POLLIN)
    try:
        assert waiter.poll() == (0, 0, None)  # still running
        started = time.monotonic()
        assert poller.poll(0) == []
        assert poller.poll(5000) != []  # one wake-up, at the end
        assert time.monotonic() - started < 4
        got, status, usage = waiter.poll()
        assert got == pid and os.waitstatus_to_exitcode(status) == 7
        assert usage.ru_utime >= 0
    finally:
        waiter.close()


def test_a_killed_step_is_joined() -> None:
    pid = _step(60, 0)
    waiter = Waiter.start(pid)
    assert waiter is not None
    try:
        os.kill(pid, 9)
        got, status, _ = waiter.join()
        assert got == pid and os.waitstatus_to_exitcode(status) == -9
    finally:
        waiter.close()
