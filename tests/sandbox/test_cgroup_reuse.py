"""Reuse of run cgroups (cgroup v1): a clean run's cgroup serves later runs; anything else
is removed, and nothing of one run shows in the next one's measurements."""

from __future__ import annotations

import collections
import threading
import time

import pytest

from assay import Limits, Runner
from assay.sandbox._slots import CgroupPool
from assay.sandbox.cgroups import CgroupLimits

MiB = 1 << 20


def _record_cgroups(runner: Runner) -> collections.Counter[str]:
    pool = runner.sandbox._cg_pool
    if pool is None or runner.sandbox.cgroups is None:
        pytest.skip("no cgroups on this host")
    if runner.sandbox.cgroups.version != "v1":
        pytest.skip("cgroups are reused on v1 only")
    seen: collections.Counter[str] = collections.Counter()
    get = pool.get

    def recording_get():  # type: ignore[no-untyped-def]
        cg = get()
        seen[cg.path] += 1
        return cg

    pool.get = recording_get  # type: ignore[method-assign]
    return seen


def test_clean_runs_share_cgroups_and_measure_only_themselves() -> None:
    with Runner() as runner:
        seen = _record_cgroups(runner)
        heavy = runner.run("x = bytearray(80 * 1024 * 1024)\nsum(range(3_000_000))")
        assert heavy.status == "ok", heavy.stderr
        assert heavy.peak_memory_bytes > 80 * MiB
        light = []
        for _ in range(30):
            r = runner.run("print(1)")
            assert r.status == "ok", r.stderr
            light.append(r)
        assert sum(seen.values()) > len(seen), f"no cgroup was reused: {seen}"
        # A reused cgroup carries at most CGROUP_REUSE_MAX_BYTES of an earlier run.
        assert max(r.peak_memory_bytes for r in light) < 8 * MiB
        assert max(r.cpu_s for r in light) < 0.2


def test_a_cgroup_that_saw_an_oom_kill_is_never_reused() -> None:
    with Runner() as runner:
        runner.sandbox.warm_up(1, 0)  # its slot's calibration run (sandbox.py) over first
        seen = _record_cgroups(runner)
        pool = runner.sandbox._cg_pool
        assert pool is not None
        released: list[str] = []
        release = pool.release

        def recording_release(cg, reuse):  # type: ignore[no-untyped-def]
            released.append(cg.path)
            return release(cg, reuse)

        pool.release = recording_release  # type: ignore[method-assign]
        bomb = runner.run("x = bytearray(400 * 1024 * 1024)", limits=Limits(memory_mb=64))
        assert bomb.status == "memory_limit"
        (bomb_path,) = released
        before = collections.Counter(seen)
        for _ in range(20):
            r = runner.run("print(1)")
            assert r.status == "ok" and r.peak_memory_bytes < 8 * MiB
        handed = seen - before  # what the 20 runs' slots were given
        assert sum(handed.values()) > len(handed), "no cgroup was reused"
        assert bomb_path not in handed, "an OOM-killed run's cgroup served again"


class FakeCgroup:
    def __init__(self, name: str, recyclable: bool | Exception) -> None:
        self.path = name
        self._recyclable = recyclable
        self.destroyed = threading.Event()

    def recyclable(self, max_bytes: int) -> bool:
        if isinstance(self._recyclable, Exception):
            raise self._recyclable
        return self._recyclable

    def destroy(self) -> bool:
        self.destroyed.set()
        return True

    def kill_all(self) -> None:
        pass


class FakeBackend:
    version = "fake"
    base = "/fake"

    def __init__(self, limit: int = 1 << 30) -> None:
        self.made = 0
        self.limit = limit  # cgroups it can make (then the kernel refuses more)

    def create(self, limits: CgroupLimits) -> FakeCgroup:
        if self.made >= self.limit:
            raise OSError("no more cgroups")
        self.made += 1
        return FakeCgroup(f"new{self.made}", True)


def _wait(cond, timeout: float = 5.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.01)
    return False


def test_pool_reuses_only_what_the_cgroup_says_is_clean() -> None:
    backend = FakeBackend(limit=1)  # one made: room in the pool for the used ones
    pool = CgroupPool(backend, CgroupLimits(memory_bytes=MiB, pids=8), spare=1)  # type: ignore[arg-type]
    try:
        assert _wait(lambda: len(pool._ready) >= 1)
        clean = FakeCgroup("clean", True)
        dirty = FakeCgroup("dirty", False)
        broken = FakeCgroup("broken", OSError("gone"))
        pool.release(clean, reuse=True)  # type: ignore[arg-type]
        pool.release(dirty, reuse=True)  # type: ignore[arg-type]
        pool.release(broken, reuse=True)  # type: ignore[arg-type]
        assert dirty.destroyed.wait(5) and broken.destroyed.wait(5)
        assert _wait(lambda: any(cg is clean for cg in pool._ready))
        assert not clean.destroyed.is_set()
        handed = [pool.get() for _ in range(len(pool._ready))]
        assert clean in handed
        # A run that did not end cleanly is removed without looking.
        killed = FakeCgroup("killed", True)
        pool.release(killed, reuse=False)  # type: ignore[arg-type]
        assert killed.destroyed.wait(5)
    finally:
        pool.close()


def test_a_used_cgroup_wakes_the_pool_only_when_ready_ones_run_low() -> None:
    """Used cgroups are checked in batches: a release wakes the pool's thread (a thread
    switch, each way, on every run) only when fewer than ``spare`` are ready."""
    pool = CgroupPool(FakeBackend(), CgroupLimits(memory_bytes=MiB, pids=8), spare=2)  # type: ignore[arg-type]
    try:
        assert _wait(lambda: len(pool._ready) >= pool.keep)  # filled past spare: slack
        wakes: list[int] = []
        notify = pool._cv.notify

        def counting_notify(n: int = 1) -> None:
            wakes.append(n)
            notify(n)

        pool._cv.notify = counting_notify  # type: ignore[method-assign]
        used = [FakeCgroup(f"used{i}", True) for i in range(2)]
        for cg in used:
            pool.release(cg, reuse=True)  # type: ignore[arg-type]
        assert wakes == []  # plenty are ready: nothing needs doing before runs take them
        while len(pool._ready) > pool.spare:
            pool.get()
        assert wakes == []  # still `spare` ready
        pool.get()
        assert wakes == [1]  # fewer than `spare` left: now the used ones are checked
        assert _wait(lambda: all(any(r is cg for r in pool._ready) for cg in used))
        assert not any(cg.destroyed.is_set() for cg in used)
    finally:
        pool.close()


class _GatedBackend(FakeBackend):
    """Makes cgroups only while ``gate`` is set: a creation the kernel holds up."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.waiting = threading.Event()

    def create(self, limits: CgroupLimits) -> FakeCgroup:
        self.waiting.set()
        self.gate.wait(10)
        return super().create(limits)


def test_the_pool_is_settled_only_when_its_thread_waits_with_nothing_to_do() -> None:
    """``settled`` is what a count of the process's descriptors waits for: a cgroup half
    made (its creation held up in the kernel) holds descriptors no list of the pool shows."""
    backend = _GatedBackend()
    pool = CgroupPool(backend, CgroupLimits(memory_bytes=MiB, pids=8), spare=2)  # type: ignore[arg-type]
    try:
        assert backend.waiting.wait(5)
        time.sleep(0.2)
        assert not pool.settled()  # held up in the first creation, nothing ready yet
        backend.gate.set()
        assert _wait(pool.settled)
        assert len(pool._ready) == pool.keep
        pool.release(FakeCgroup("used", True), reuse=False)  # type: ignore[arg-type]
        assert _wait(pool.settled)
    finally:
        backend.gate.set()
        pool.close()
