"""Host-side views of processes, for tests that kill parts of the sandbox and look for leftovers.

A process is identified by ``(pid, start time)`` so that a recycled pid is never mistaken for a
survivor, and a zombie counts as dead (it runs nothing; reaping it is its new parent's job).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from assay import defaults
from assay.sandbox.config import is_sandbox_uid

SANDBOX_UID = defaults.SANDBOX_UID


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name: [state, ppid, ...]."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            text = fh.read()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def start_time(pid: int) -> str | None:
    fields = _stat_fields(pid)
    return fields[19] if fields else None


def ppid_of(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[1]) if fields else None


def uid_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def is_running(pid: int, started: str | None = None) -> bool:
    """True while ``pid`` exists, is not a zombie, and (if given) has this start time."""
    fields = _stat_fields(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return False
    return started is None or fields[19] == started


def all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def descendants(root: int) -> set[int]:
    """Every live process below ``root`` (not ``root`` itself)."""
    children: dict[int, list[int]] = {}
    for pid in all_pids():
        parent = ppid_of(pid)
        if parent is not None:
            children.setdefault(parent, []).append(pid)
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def sandbox_program_with_child(root: int) -> bool:
    """A sandboxed program below ``root`` has forked: a uid-65534 process with a uid-65534 parent.

    Idle sandboxes (whatever the pool keeps warm) never have such a pair, so this is the signal
    that the test's own program is running, whatever the pool looks like.
    """
    for pid in descendants(root):
        uid = uid_of(pid)  # None: it exited since it was listed
        if uid is not None and is_sandbox_uid(uid):
            parent = ppid_of(pid)
            parent_uid = uid_of(parent) if parent is not None else None
            if parent_uid is not None and is_sandbox_uid(parent_uid):
                return True
    return False


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)


#: A Python program that forks once; parent and child both sleep (practically) forever.
SLEEPER_WITH_CHILD = """\
import os, time
if os.fork() == 0:
    time.sleep(10_000)
    os._exit(0)
time.sleep(10_000)
"""
