"""Low-level cgroupfs helpers shared by the v1 and v2 backends."""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import signal
import time
from collections.abc import Iterable, Iterator


def _read(path: str) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 65536).decode()
    finally:
        os.close(fd)


def _write(path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


class _Fds:
    """Cgroup files kept open for the life of one run's cgroup.

    Opening a cgroupfs file takes the kernel's cgroup locks, which the background pool
    contends for while it creates and removes cgroups; a run touches the same few files
    several times, so each is opened once (off the run's path where possible) and then read
    with ``pread`` and written with ``pwrite``.
    """

    __slots__ = ("_fds",)

    def __init__(self) -> None:
        self._fds: dict[tuple[str, int], int] = {}

    def fd(self, path: str, flags: int) -> int:
        key = (path, flags)
        fd = self._fds.get(key)
        if fd is None:
            fd = self._fds[key] = os.open(path, flags | os.O_CLOEXEC)
        return fd

    def read(self, path: str, flags: int = os.O_RDONLY) -> str:
        return os.pread(self.fd(path, flags), 65536, 0).decode()

    def write(self, path: str, value: str, flags: int = os.O_WRONLY) -> None:
        os.pwrite(self.fd(path, flags), value.encode(), 0)

    def close(self) -> None:
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)


def _proc_start_time(pid: int) -> str | None:
    try:
        stat = _read(f"/proc/{pid}/stat")
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


_sessions = itertools.count()


def session_name() -> str:
    """``s<pid>-<start time>-<n>``: unique per backend, and tells whether its owner lives."""
    pid = os.getpid()
    return f"s{pid}-{_proc_start_time(pid)}-{next(_sessions)}"


def _session_is_stale(name: str) -> bool:
    parts = name[1:].split("-")
    if not name.startswith("s") or len(parts) < 2 or not parts[0].isdigit():
        return False
    return _proc_start_time(int(parts[0])) != parts[1]


def _kill_procs(procs_file: str) -> None:
    for _ in range(100):
        try:
            pids = [int(x) for x in _read(procs_file).split()]
        except OSError:
            return
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.002)


def _rmdir_tree(path: str) -> bool:
    """Remove a cgroup directory and its child cgroups (bottom-up)."""
    ok = True
    try:
        entries = list(os.scandir(path))
    except FileNotFoundError:
        return True
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            ok = _rmdir_tree(entry.path) and ok
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError:
        ok = False
    return ok


def _rmdir_retry(path: str, tries: int = 40) -> bool:
    for i in range(tries):
        try:
            os.rmdir(path)
            return True
        except FileNotFoundError:
            return True
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                return False
            time.sleep(0.0005 * (i + 1))
    return False


def _mountinfo() -> Iterator[tuple[str, str, str, str]]:
    """(mount root, mount point, fs type, super options) of every mount."""
    for line in _read("/proc/self/mountinfo").splitlines():
        left, _, right = line.partition(" - ")
        parts = left.split()
        fstype, _source, superopts = ([*right.split(), "", "", ""])[:3]
        yield parts[3], parts[4], fstype, superopts


def _own_cgroup(hierarchy: str) -> str:
    """This process's cgroup path in a v1 hierarchy (by controller) or v2 (``""``)."""
    for line in _read("/proc/self/cgroup").splitlines():
        _id, controllers, path = line.split(":", 2)
        if hierarchy == "" and _id == "0" and controllers == "":
            return path
        if hierarchy and hierarchy in controllers.split(","):
            return path
    return "/"


def _subdirs(path: str) -> list[str]:
    """The child cgroups of ``path``; none if it is gone (another supervisor starting at the
    same time reclaimed the same stale session first)."""
    try:
        return [e.path for e in os.scandir(path) if e.is_dir()]
    except FileNotFoundError:
        return []


def _unique(paths: Iterable[str]) -> list[str]:
    """``paths`` without repeats, in order (co-mounted v1 controllers share a directory)."""
    return list(dict.fromkeys(paths))
