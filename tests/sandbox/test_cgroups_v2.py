"""The cgroup v2 backend, against a fake cgroup2 tree (this host runs cgroup v1).

``FakeCgroupFS`` imitates the parts of cgroupfs the backend relies on: a new directory comes
with its interface files, ``rmdir`` removes them with it, and ``rmdir`` fails with EBUSY while
the cgroup has child cgroups or live processes. Interface files start empty where the backend
writes them first, because a plain file, unlike a cgroup file, keeps the tail of an older,
longer value when overwritten without truncation.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path
from typing import TypeAlias

import pytest

from assay.errors import ConfigError
from assay.sandbox import _cgroupfs, cgroups
from assay.sandbox.cgroups import CgroupLimits, CgroupV1, CgroupV2, _V2Run

StrPath: TypeAlias = "str | os.PathLike[str]"

ALL = "cpuset cpu io memory hugetlb pids rdma misc"

INTERFACE = {
    "cgroup.controllers": ALL,
    "cgroup.subtree_control": "",
    "cgroup.procs": "",
    "cgroup.events": "populated 0\nfrozen 0\n",
    "cpu.stat": "usage_usec 0\nuser_usec 0\nsystem_usec 0\n",
    "cpu.weight": "",
    "memory.max": "",
    "memory.swap.max": "",
    "memory.current": "0\n",
    "memory.peak": "",
    "memory.events": "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n",
    "pids.max": "",
    "pids.current": "0\n",
}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


class FakeCgroupFS:
    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self._mkdir = os.mkdir
        self._rmdir = os.rmdir
        self._mkdir(root)
        self._populate(root)
        monkeypatch.setattr(os, "mkdir", self.mkdir)
        monkeypatch.setattr(os, "rmdir", self.rmdir)

    def _mine(self, path: str | os.PathLike[str]) -> bool:
        return os.path.abspath(path).startswith(str(self.root) + os.sep)

    def _populate(self, path: Path) -> None:
        for name, text in INTERFACE.items():
            (path / name).write_text(text)

    def mkdir(self, path: StrPath, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        self._mkdir(path, mode, dir_fd=dir_fd)
        if dir_fd is None and self._mine(path):
            self._populate(Path(path))

    def rmdir(self, path: StrPath, *, dir_fd: int | None = None) -> None:
        if dir_fd is not None or not self._mine(path):
            return self._rmdir(path, dir_fd=dir_fd)
        p = Path(path)
        if not p.is_dir():
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(path))
        if any(e.is_dir() for e in p.iterdir()):
            raise OSError(errno.EBUSY, "Device or resource busy (child cgroups)", str(path))
        procs = (p / "cgroup.procs").read_text().split()
        if any(_alive(int(pid)) for pid in procs):
            raise OSError(errno.EBUSY, "Device or resource busy (live processes)", str(path))
        for f in p.iterdir():
            f.unlink()
        return self._rmdir(path)

    def cgroup(self, *parts: str) -> Path:
        """A prepared cgroup directory below the fake root."""
        path = self.root.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(path)
        return path


def _set(path: Path, name: str, text: str) -> None:
    (path / name).write_text(text)


@pytest.fixture
def fs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCgroupFS:
    return FakeCgroupFS(tmp_path / "cgroup", monkeypatch)


# -- the backend -----------------------------------------------------------------------------


def test_init_enables_controllers_and_creates_the_session(fs: FakeCgroupFS) -> None:
    backend = CgroupV2(str(fs.root / "assay"))
    assert backend.version == "v2"
    assert backend.session.startswith(_session_of(os.getpid()))
    session = fs.root / "assay" / backend.session
    assert session.is_dir()
    assert backend.session_dir == str(session)
    # Controllers are delegated top-down: the parent of "assay", "assay", and the session.
    for d in (fs.root, fs.root / "assay", session):
        enabled = (d / "cgroup.subtree_control").read_text().split()
        assert {"+memory", "+pids", "+cpu"} <= set(enabled), (d, enabled)
    backend.close()
    assert not session.exists()
    assert (fs.root / "assay").is_dir()  # shared by every supervisor: only the session goes


def test_init_skips_controllers_already_enabled(fs: FakeCgroupFS) -> None:
    _set(fs.root, "cgroup.subtree_control", "cpu memory pids\n")
    backend = CgroupV2(str(fs.root / "assay"))
    assert (fs.root / "cgroup.subtree_control").read_text() == "cpu memory pids\n"
    backend.close()


def test_init_refuses_a_tree_without_the_controllers(fs: FakeCgroupFS) -> None:
    _set(fs.root, "cgroup.controllers", "cpu io\n")
    with pytest.raises(ConfigError, match="memory"):
        CgroupV2(str(fs.root / "assay"))


def test_create_makes_a_fresh_armed_cgroup_per_run(fs: FakeCgroupFS) -> None:
    backend = CgroupV2(str(fs.root / "assay"))
    first = backend.create(CgroupLimits(memory_bytes=256 << 20, pids=32))
    second = backend.create(CgroupLimits(memory_bytes=64 << 20, pids=8))
    assert first.path != second.path
    for run, mem, pids in ((first, 256 << 20, 32), (second, 64 << 20, 8)):
        path = Path(run.path)
        assert path.parent == fs.root / "assay" / backend.session
        assert (path / "memory.max").read_text() == str(mem)
        assert (path / "memory.swap.max").read_text() == "0"
        assert (path / "pids.max").read_text() == str(pids)
        assert (path / "cpu.weight").read_text() == "100"  # equal CPU weight for every run
    assert first.destroy() and second.destroy()
    assert not Path(first.path).exists()
    backend.close()


# -- one run's cgroup -----------------------------------------------------------------------


def test_arm_writes_memory_swap_and_pids_limits(fs: FakeCgroupFS) -> None:
    path = fs.cgroup("run")
    run = _V2Run(str(path))
    run.arm(CgroupLimits(memory_bytes=123 << 20, pids=17))
    assert (path / "memory.max").read_text() == str(123 << 20)
    assert (path / "memory.swap.max").read_text() == "0"  # swap must not extend the limit
    assert (path / "pids.max").read_text() == "17"


def test_arm_without_swap_accounting(fs: FakeCgroupFS) -> None:
    path = fs.cgroup("run")
    (path / "memory.swap.max").unlink()  # kernel booted without swap accounting
    run = _V2Run(str(path))
    run.arm(CgroupLimits(memory_bytes=1 << 30, pids=64))
    assert (path / "memory.max").read_text() == str(1 << 30)
    assert not (path / "memory.swap.max").exists()


def test_cpu_seconds_subtracts_the_baseline_taken_when_armed(fs: FakeCgroupFS) -> None:
    path = fs.cgroup("run")
    _set(path, "cpu.stat", "usage_usec 5000000\nuser_usec 4000000\nsystem_usec 1000000\n")
    run = _V2Run(str(path))
    run.arm(CgroupLimits(memory_bytes=64 << 20, pids=8))
    assert run.cpu_seconds() == pytest.approx(0.0)
    _set(path, "cpu.stat", "usage_usec 7500000\nuser_usec 6000000\nsystem_usec 1500000\n")
    assert run.cpu_seconds() == pytest.approx(2.5)
    # Re-arming (a reused cgroup) takes a new baseline instead of stacking the old one.
    run.arm(CgroupLimits(memory_bytes=64 << 20, pids=8))
    assert run.cpu_seconds() == pytest.approx(0.0)
    _set(path, "cpu.stat", "usage_usec 7750000\n")
    assert run.cpu_seconds() == pytest.approx(0.25)


def test_cpu_seconds_without_baseline(fs: FakeCgroupFS) -> None:
    path = fs.cgroup("run")
    _set(path, "cpu.stat", "user_usec 1\nusage_usec 1250000\n")
    assert _V2Run(str(path)).cpu_seconds() == pytest.approx(1.25)


@pytest.mark.parametrize(
    ("events", "killed"),
    [
        ("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n", False),
        ("low 0\nhigh 3\nmax 12\noom 0\noom_kill 0\n", False),  # throttled, never killed
        ("low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\noom_group_kill 0\n", True),
        ("low 0\nhigh 0\nmax 5\noom 1\noom_kill 0\noom_group_kill 1\n", True),
    ],
    ids=["clean", "throttled", "oom_kill", "oom_group_kill"],
)
def test_oom_killed_reads_memory_events(fs: FakeCgroupFS, events: str, killed: bool) -> None:
    path = fs.cgroup("run")
    _set(path, "memory.events", events)
    assert _V2Run(str(path)).oom_killed() is killed


def test_peak_memory(fs: FakeCgroupFS) -> None:
    path = fs.cgroup("run")
    run = _V2Run(str(path))
    run.arm(CgroupLimits(memory_bytes=64 << 20, pids=8))
    _set(path, "memory.peak", "7340032\n")
    assert run.peak_memory_bytes() == 7340032
    (path / "memory.peak").unlink()  # kernels before 5.19 have no memory.peak
    _set(path, "memory.current", "4096\n")
    assert _V2Run(str(path)).peak_memory_bytes() == 4096


def test_procs_fd_is_write_only_on_cgroup_procs(fs: FakeCgroupFS) -> None:
    path = fs.cgroup("run")
    fds = _V2Run(str(path)).procs_fds()
    try:
        assert len(fds) == 1
        os.write(fds[0], b"12345")
        assert (path / "cgroup.procs").read_text() == "12345"
        with pytest.raises(OSError):
            os.read(fds[0], 1)
    finally:
        for fd in fds:
            os.close(fd)


# -- stale sessions --------------------------------------------------------------------------


def _dead_pid() -> int:
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    pid = int(proc.stdout)
    assert not os.path.exists(f"/proc/{pid}")
    return pid


def _session_of(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as fh:
        start = fh.read().rsplit(")", 1)[1].split()[19]
    return f"s{pid}-{start}"


def test_reclaim_stale_removes_dead_sessions_and_keeps_live_ones(fs: FakeCgroupFS) -> None:
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        backend = CgroupV2(str(fs.root / "assay"))
        parent = fs.root / "assay"
        dead = f"s{_dead_pid()}-12345-0"
        reused = f"s{live.pid}-1-0"  # a live pid, but another process's start time: pid reuse
        live_name = _session_of(live.pid) + "-0"
        # Session names of a release before the per-pool suffix must be handled the same way.
        old_dead = f"s{_dead_pid()}-12345"
        old_live = _session_of(live.pid)
        for name in (dead, reused, live_name, old_dead, old_live):
            fs.cgroup("assay", name)
            fs.cgroup("assay", name, "r0")
            fs.cgroup("assay", name, "r1")
        # A process left in a stale run cgroup is killed before the directory goes.
        _set(parent / dead / "r1", "cgroup.procs", f"{victim.pid}\n")
        for other in ("not-a-session", "sabc-1"):
            fs.cgroup("assay", other)

        assert backend.reclaim_stale() == 3

        assert victim.wait(timeout=10) == -9
        assert not (parent / dead).exists()
        assert not (parent / reused).exists()
        assert not (parent / old_dead).exists()
        assert (parent / old_live / "r0").is_dir()
        assert (parent / live_name / "r0").is_dir() and (parent / live_name / "r1").is_dir()
        assert (parent / backend.session).is_dir()  # our own session is live
        assert (parent / "not-a-session").is_dir() and (parent / "sabc-1").is_dir()
        assert backend.reclaim_stale() == 0
        backend.close()
        assert not (parent / backend.session).exists()
    finally:
        for p in (live, victim):
            p.kill()
            p.wait()


def test_session_name_is_pid_and_start_time() -> None:
    names = [_cgroupfs.session_name(), _cgroupfs.session_name()]
    assert len(set(names)) == 2, "two pools of one process need two sessions"
    for name in names:
        assert name == _session_of(os.getpid()) or name.startswith(_session_of(os.getpid()) + "-")
        assert not _cgroupfs._session_is_stale(name)


# -- detection on this host ------------------------------------------------------------------


def _v1_host() -> bool:
    with open("/proc/self/mountinfo") as fh:
        types = {line.partition(" - ")[2].split()[0] for line in fh}
    return "cgroup" in types and os.geteuid() == 0


@pytest.mark.skipif(not _v1_host(), reason="needs root on a cgroup v1 host")
def test_detect_picks_v1_on_this_host() -> None:
    assert CgroupV2.detect() is None  # the v2 mount here (if any) holds no controllers
    backend = cgroups.detect()
    try:
        assert isinstance(backend, CgroupV1)
        assert backend.version == "v1"
        assert (
            {"memory", "pids", "cpuacct"}
            <= set(backend.parents)
            <= {
                "memory",
                "pids",
                "cpuacct",
                "cpu",
            }
        )
        for parent in backend.parents.values():
            assert os.path.isdir(os.path.join(parent, backend.session))
    finally:
        if backend is not None:
            backend.close()
