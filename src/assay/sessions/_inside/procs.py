"""The session agent's process keeping (stdlib only): killing a step's process group, and
the guard that keeps the session under its PID limit.

Shipped between workspace.py and agent.py as one file (``sessions._agentfile``), in place
of the agent's import of it.
"""

from __future__ import annotations

import errno
import os
import signal
import threading
import time
from collections.abc import Iterator


def kill_group(pid: int) -> None:
    """SIGKILL process group ``pid``, again while it has live members: a process forked
    while the first signal was delivered (a fork bomb's) would otherwise survive it.

    Zombies are members too (``killpg`` succeeds on them) but already dead: the loop ends
    when no member is alive, not when the group is reaped (the step's own shell is reaped
    by its caller, orphans by the sandbox's init), so a step stops at its timeout.
    """
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            return
        if not _live_members(pid):
            return
        time.sleep(0.001)


def _live_members(pgid: int) -> bool:
    """Whether process group ``pgid`` has a member that is not a zombie (from /proc)."""
    return any(True for _ in _members(pgid))


def most_cpu(pgid: int) -> float:
    """The most CPU seconds any live member of process group ``pgid`` has used (user and
    system, all its threads): what ``RLIMIT_CPU`` counts, per process."""
    # After the command's name: ..., utime (12th field), stime (13th).
    ticks = [int(f[11]) + int(f[12]) for f in _members(pgid) if len(f) > 12]
    return max(ticks, default=0) / os.sysconf("SC_CLK_TCK")


def _members(pgid: int) -> Iterator[list[bytes]]:
    """The /proc stat fields (after the command's name: state, ppid, pgrp, ...) of each
    live (not zombie) member of process group ``pgid``."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                fields = fh.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            yield fields


#: errno values of a session out of a resource (processes, memory, descriptors).
EXHAUSTED = frozenset({errno.EAGAIN, errno.ENOMEM, errno.EMFILE, errno.ENFILE})


def exhausted(exc: Exception) -> bool:
    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, RuntimeError) and "thread" in str(exc):
        return True  # "can't start new thread": the PID limit
    return isinstance(exc, OSError) and exc.errno in EXHAUSTED


class Fault(Exception):
    """The session's own state stops a request (not the request's fault): ``kind`` names
    why, e.g. ``pids_limit``; the trusted side ends the session with that reason."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Guard:
    """Keeps the session under its process limit: what finished steps left running
    (their process groups) is killed, newest first, when the session reaches the limit.

    A step's background processes (a server it started) live on after it; a fork bomb's
    do too, and would fill the session's PID limit so that no later step could start.
    A watcher thread and every step's start check the count; the groups of steps still
    running are never touched here (their own timeouts end them).
    """

    def __init__(self, limit: int, poll_s: float) -> None:
        self.limit = limit
        self.poll_s = poll_s
        self.groups: list[int] = []  # process groups of finished steps, oldest first
        self.lock = threading.Lock()

    def start(self) -> None:
        if self.limit > 0:
            threading.Thread(target=self._watch, daemon=True, name="guard").start()

    def left(self, pgid: int) -> None:
        with self.lock:
            if pgid in self.groups:
                self.groups.remove(pgid)
            self.groups.append(pgid)

    def _count(self) -> int:
        """Tasks of the session as its PID limit counts them: processes (PID 1, the
        sandbox's init, is not one of them) and the agent's own threads (other processes'
        threads are not counted: a step that cannot fork is the backstop, see ``fork``)."""
        procs = sum(1 for name in os.listdir("/proc") if name.isdigit())
        return procs - 2 + len(os.listdir(f"/proc/{os.getpid()}/task"))

    def _full(self) -> bool:
        return self.limit > 0 and self._count() >= self.limit - 1

    def relieve(self, force: bool = False) -> bool:
        """If the session is at its limit (or ``force``: a fork just failed), kill finished
        steps' groups, newest first, until it is not; returns whether any was killed."""
        killed = False
        while (force and not killed) or self._full():
            with self.lock:
                if not self.groups:
                    return killed
                pgid = self.groups.pop()
            kill_group(pgid)
            killed = True
            # The killed processes are reaped by the sandbox's init: give it a moment.
            deadline = time.monotonic() + 0.5
            while self._full() and time.monotonic() < deadline:
                time.sleep(0.005)
        return killed

    def fork(self) -> int:
        """``os.fork`` for a step; at the limit, what earlier steps left is killed first."""
        self.relieve()
        try:
            return os.fork()
        except BlockingIOError:
            if not self.relieve(force=True):
                raise
        return os.fork()

    def _prune(self) -> bool:
        """Forget finished steps' groups that have no member left; whether any is left (a
        session whose steps left nothing running costs the watcher no /proc listing)."""
        with self.lock:
            groups = list(self.groups)
        gone = []
        for pgid in groups:
            try:
                os.killpg(pgid, 0)
            except OSError:
                gone.append(pgid)
        with self.lock:
            self.groups = [g for g in self.groups if g not in gone]
            return bool(self.groups)

    def _watch(self) -> None:
        while True:
            time.sleep(self.poll_s)
            try:
                if self._prune():
                    self.relieve()
            except Exception:  # a /proc entry that vanished mid-read: try again next time
                continue


#: Set up by ``main`` from the agent's arguments (the session's process limit).
GUARD = Guard(0, 1.0)
