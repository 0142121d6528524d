"""Per-run control groups: memory (swap counted), pids and CPU, on cgroup v1 or v2.

One interface, two kernels' worth of files. Every run gets a fresh cgroup under a session
directory named after the supervisor process (``s<pid>-<start time>``), so a supervisor
killed with SIGKILL leaves a directory that the next start recognises as stale and removes.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from ..errors import ConfigError

CGROUP_FS = "/sys/fs/cgroup"
V1_CONTROLLERS = ("memory", "pids", "cpuacct")


@dataclass(frozen=True, slots=True)
class CgroupLimits:
    memory_bytes: int
    pids: int


class RunCgroup(Protocol):
    """The cgroup of one run, seen by the trusted supervisor."""

    path: str

    def procs_fds(self) -> list[int]:
        """Write-only fds of ``cgroup.procs``, one per hierarchy, for the child to join."""

    def arm(self, limits: CgroupLimits) -> None:
        """Set the run's limits and zero its counters, just before the program starts."""

    def cpu_seconds(self) -> float: ...

    def peak_memory_bytes(self) -> int: ...

    def oom_killed(self) -> bool: ...

    def kill_all(self) -> None: ...

    def destroy(self) -> bool:
        """Remove the cgroup; False when the kernel still holds it (retried later)."""


class CgroupBackend(Protocol):
    version: str
    base: str

    def create(self, limits: CgroupLimits) -> RunCgroup: ...

    def reclaim_stale(self) -> int: ...

    def close(self) -> None: ...


# -- helpers ----------------------------------------------------------------------------------


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


# -- v1 ---------------------------------------------------------------------------------------


class _V1Run:
    def __init__(self, dirs: dict[str, str], memsw: bool) -> None:
        self.dirs = dirs
        self.path = dirs["memory"]
        self.memsw = memsw
        mem = dirs["memory"]
        self._limit = os.path.join(mem, "memory.limit_in_bytes")
        self._memsw_limit = os.path.join(mem, "memory.memsw.limit_in_bytes")
        self._pids = os.path.join(dirs["pids"], "pids.max")
        self._cpu = os.path.join(dirs["cpuacct"], "cpuacct.usage")
        self._peak = os.path.join(mem, "memory.max_usage_in_bytes")
        self._memsw_peak = os.path.join(mem, "memory.memsw.max_usage_in_bytes")
        self._written: CgroupLimits | None = None  # a new cgroup starts unlimited

    def arm(self, limits: CgroupLimits) -> None:
        """Limits are written only when they change (runs mostly share them); the counters
        are zeroed every time, since the armed program process already ran in here."""
        last = self._written
        if last is None or last.memory_bytes != limits.memory_bytes:
            value = str(limits.memory_bytes)
            pairs = [(self._limit, value)]
            if self.memsw:
                # memsw must stay >= mem: raise memsw first, lower it last.
                pairs.append((self._memsw_limit, value))
                if last is not None and limits.memory_bytes > last.memory_bytes:
                    pairs.reverse()
            for path, val in pairs:
                _write(path, val)
        if last is None or last.pids != limits.pids:
            _write(self._pids, str(limits.pids))
        self._written = limits
        _write(self._cpu, "0")
        _write(self._peak, "0")
        if self.memsw:
            _write(self._memsw_peak, "0")

    def procs_fds(self) -> list[int]:
        return [
            os.open(os.path.join(d, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC)
            for d in self.dirs.values()
        ]

    def cpu_seconds(self) -> float:
        return int(_read(self._cpu)) / 1e9

    def peak_memory_bytes(self) -> int:
        return int(_read(self._memsw_peak if self.memsw else self._peak))

    def oom_killed(self) -> bool:
        for line in _read(os.path.join(self.dirs["memory"], "memory.oom_control")).splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value) > 0
        return int(_read(os.path.join(self.dirs["memory"], "memory.failcnt"))) > 0

    def kill_all(self) -> None:
        _kill_procs(os.path.join(self.dirs["pids"], "cgroup.procs"))

    def destroy(self) -> bool:
        return all([_rmdir_retry(d) for d in self.dirs.values()])


class CgroupV1:
    version = "v1"

    def __init__(self, mounts: dict[str, str]) -> None:
        self.mounts = mounts
        self.parents = {c: os.path.join(m, "assay") for c, m in mounts.items()}
        self.base = self.parents["memory"]
        self.session = session_name()
        self._counter = itertools.count()
        for parent in self.parents.values():
            os.makedirs(os.path.join(parent, self.session), exist_ok=True)
        self._memsw = os.path.exists(
            os.path.join(self.parents["memory"], "memory.memsw.limit_in_bytes")
        )

    @classmethod
    def detect(cls) -> CgroupV1 | None:
        mounts: dict[str, str] = {}
        for root, point, fstype, opts in _mountinfo():
            if fstype != "cgroup":
                continue
            for c in V1_CONTROLLERS:
                if c in opts.split(","):
                    own = _own_cgroup(c)
                    rel = os.path.relpath(own, root) if own.startswith(root) else "."
                    mounts.setdefault(c, os.path.normpath(os.path.join(point, rel)))
        if not all(c in mounts for c in V1_CONTROLLERS):
            return None
        if not all(os.access(m, os.W_OK) for m in mounts.values()):
            return None
        return cls(mounts)

    def create(self, limits: CgroupLimits) -> RunCgroup:
        name = f"r{next(self._counter)}"
        dirs = {c: os.path.join(p, self.session, name) for c, p in self.parents.items()}
        for d in dirs.values():
            os.mkdir(d)
        return _V1Run(dirs, self._memsw)  # limits are written when a run is armed

    def reclaim_stale(self) -> int:
        n = 0
        for parent in self.parents.values():
            try:
                entries = list(os.scandir(parent))
            except FileNotFoundError:
                continue
            for entry in entries:
                if entry.is_dir() and _session_is_stale(entry.name):
                    for sub in os.scandir(entry.path):
                        if sub.is_dir():
                            _kill_procs(os.path.join(sub.path, "cgroup.procs"))
                    _rmdir_tree(entry.path)
                    n += 1
        return n

    def close(self) -> None:
        for parent in self.parents.values():
            _rmdir_tree(os.path.join(parent, self.session))


# -- v2 ---------------------------------------------------------------------------------------


class _V2Run:
    def __init__(self, path: str) -> None:
        self.path = path
        self._cpu_base = 0.0

    def arm(self, limits: CgroupLimits) -> None:
        _write(os.path.join(self.path, "memory.max"), str(limits.memory_bytes))
        swap = os.path.join(self.path, "memory.swap.max")
        if os.path.exists(swap):
            _write(swap, "0")
        _write(os.path.join(self.path, "pids.max"), str(limits.pids))
        self._cpu_base = 0.0
        self._cpu_base = self.cpu_seconds()
        peak = os.path.join(self.path, "memory.peak")
        with contextlib.suppress(OSError):  # resettable since Linux 6.12
            _write(peak, "0")

    def procs_fds(self) -> list[int]:
        return [os.open(os.path.join(self.path, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC)]

    def cpu_seconds(self) -> float:
        for line in _read(os.path.join(self.path, "cpu.stat")).splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) / 1e6 - self._cpu_base
        return 0.0

    def peak_memory_bytes(self) -> int:
        peak = os.path.join(self.path, "memory.peak")
        if os.path.exists(peak):
            return int(_read(peak))
        return int(_read(os.path.join(self.path, "memory.current")))

    def oom_killed(self) -> bool:
        for line in _read(os.path.join(self.path, "memory.events")).splitlines():
            key, _, value = line.partition(" ")
            if key in ("oom_kill", "oom_group_kill") and int(value) > 0:
                return True
        return False

    def kill_all(self) -> None:
        kill = os.path.join(self.path, "cgroup.kill")
        if os.path.exists(kill):
            with contextlib.suppress(OSError):
                _write(kill, "1")
        _kill_procs(os.path.join(self.path, "cgroup.procs"))

    def destroy(self) -> bool:
        return _rmdir_retry(self.path)


class CgroupV2:
    version = "v2"
    CONTROLLERS = ("memory", "pids", "cpu")

    def __init__(self, parent: str) -> None:
        self.parent = parent
        self.base = parent
        self.session = session_name()
        self._counter = itertools.count()
        self._enable(os.path.dirname(parent))
        os.makedirs(parent, exist_ok=True)
        self._enable(parent)
        self.session_dir = os.path.join(parent, self.session)
        os.makedirs(self.session_dir, exist_ok=True)
        self._enable(self.session_dir)
        self._swap = None

    def _enable(self, path: str) -> None:
        available = set(_read(os.path.join(path, "cgroup.controllers")).split())
        missing = [c for c in self.CONTROLLERS if c not in available]
        if missing:
            raise ConfigError(f"cgroup v2 at {path} lacks controllers {missing}")
        enabled = set(_read(os.path.join(path, "cgroup.subtree_control")).split())
        todo = [c for c in self.CONTROLLERS if c not in enabled]
        if todo:
            _write(os.path.join(path, "cgroup.subtree_control"), " ".join("+" + c for c in todo))

    @classmethod
    def detect(cls, override: str | None = None) -> CgroupV2 | None:
        mount = None
        for _root, point, fstype, _opts in _mountinfo():
            if fstype == "cgroup2":
                mount = point
                break
        if mount is None:
            return None
        if override:
            return cls(override)
        controllers = set(_read(os.path.join(mount, "cgroup.controllers")).split())
        if not set(cls.CONTROLLERS) <= controllers:
            return None  # hybrid host: the controllers live in v1 hierarchies
        if os.access(mount, os.W_OK) and os.geteuid() == 0:
            return cls(os.path.join(mount, "assay"))
        # Unprivileged: use our own delegated cgroup; move ourselves into a leaf first
        # (cgroup v2 forbids processes in a cgroup that distributes controllers).
        own = os.path.join(mount, _own_cgroup("").lstrip("/"))
        if not os.access(os.path.join(own, "cgroup.procs"), os.W_OK):
            return None
        leaf = os.path.join(own, "assay-supervisor")
        os.makedirs(leaf, exist_ok=True)
        _write(os.path.join(leaf, "cgroup.procs"), "0")
        return cls(os.path.join(own, "assay"))

    def create(self, limits: CgroupLimits) -> RunCgroup:
        path = os.path.join(self.session_dir, f"r{next(self._counter)}")
        os.mkdir(path)
        run = _V2Run(path)
        run.arm(limits)
        return run

    def reclaim_stale(self) -> int:
        n = 0
        for entry in os.scandir(self.parent):
            if entry.is_dir() and _session_is_stale(entry.name):
                for sub in os.scandir(entry.path):
                    if sub.is_dir():
                        _V2Run(sub.path).kill_all()
                _rmdir_tree(entry.path)
                n += 1
        return n

    def close(self) -> None:
        _rmdir_tree(self.session_dir)


def detect(override: str | None = None) -> CgroupBackend | None:
    """The cgroup backend this host offers to us, or None."""
    try:
        v2 = CgroupV2.detect(override)
    except (OSError, ConfigError):
        v2 = None
    if v2 is not None:
        return v2
    try:
        return CgroupV1.detect()
    except OSError:
        return None
