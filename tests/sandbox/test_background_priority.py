"""A slot's work between runs at idle priority, its runs' processes never.

After a run's exit record the slot's init resets the slot and forks and arms the next
program process as SCHED_IDLE, and at the hand-over both go back to SCHED_OTHER
(launcher.c's ``assay_background_idle``): only where a process can come back from
SCHED_IDLE, which the init tries in a child first. A program must never run at idle
priority: its wall time would then depend on what else the host runs.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import pytest
from _proctree import wait_until

from assay import Runner, SandboxConfig
from assay.sandbox import Sandbox
from assay.sandbox._slots import SlotHandle, _pid_of
from assay.sandbox.cgroups import RunCgroup

POLICY_PY = "import os\nprint(os.sched_getscheduler(0))\n"
# bash's own /proc/self/stat (a redirect of a builtin): the policy is field 41, the 39th
# after the command name.
POLICY_SH = 'read -r s < /proc/self/stat; set -- ${s##*) }; echo "${39}"\n'
CAP_SYS_NICE = 23


def _can_come_back_from_idle() -> bool:
    """What the slot's init can do here (this test runs the supervisor as root, with no
    user namespace): leave SCHED_IDLE again, with CAP_SYS_NICE or a high RLIMIT_NICE."""
    if os.geteuid() != 0:
        pytest.skip("the supervisor runs as root in this test")
    with open("/proc/self/status") as fh:
        caps = next(line for line in fh if line.startswith("CapEff:"))
    import resource

    return bool(int(caps.split()[1], 16) >> CAP_SYS_NICE & 1) or (
        resource.getrlimit(resource.RLIMIT_NICE)[0] >= 20
    )


def test_programs_run_at_normal_priority_whatever_the_slot_did_before() -> None:
    sandbox = Sandbox(SandboxConfig(background_idle=True), pool_size=2)
    with Runner(sandbox) as runner:
        with ThreadPoolExecutor(2) as pool:
            py = list(pool.map(lambda _: runner.run(POLICY_PY), range(40)))
            sh = list(pool.map(lambda _: runner.run(POLICY_SH, "bash"), range(10)))
        slots = [s for kind in sandbox._idle.values() for s in kind]
    for r in py + sh:
        assert r.status == "ok", r
        assert r.stdout == f"{os.SCHED_OTHER}\n".encode(), r.stdout
    assert slots and all(s.background_idle == _can_come_back_from_idle() for s in slots)


class IdleSlot(NamedTuple):
    runner: Runner
    slot: SlotHandle
    init: int  # the slot's init's host pid
    arm: Callable[[SlotHandle, bool], None]  # the pool's own ``Sandbox._arm``


@pytest.fixture
def idle_slot(monkeypatch: pytest.MonkeyPatch) -> Iterator[IdleSlot]:
    """A pool's one slot, run twice and not armed again after the second run, whose arm
    order allowed idling (no other run went on): its init waits for an arm order at idle
    priority."""
    if not _can_come_back_from_idle():
        pytest.skip("no CAP_SYS_NICE here: the slot's init never goes to idle priority")
    sandbox = Sandbox(SandboxConfig(background_idle=True), pool_size=1)
    with Runner(sandbox) as runner:
        assert runner.run("pass").status == "ok"
        (slot,) = sandbox._idle[False, False]
        init = _pid_of(slot.pidfd) if slot.pidfd is not None else -1
        # Armed (the hand-over done): the init waits for the program at normal priority.
        assert wait_until(lambda: os.sched_getscheduler(init) == os.SCHED_OTHER, 10)
        left: list[tuple[SlotHandle, bool]] = []
        arm = sandbox._arm

        def keep(s: SlotHandle, idle: bool = False) -> None:
            left.append((s, idle))

        monkeypatch.setattr(sandbox, "_arm", keep)
        assert runner.run("pass").status == "ok"
        assert left == [(slot, True)]  # no other run going on: its next one may idle after
        # The record sent: the reset and the wait for an arm order at idle priority.
        assert wait_until(lambda: os.sched_getscheduler(init) == os.SCHED_IDLE, 10)
        monkeypatch.setattr(sandbox, "_arm", arm)
        yield IdleSlot(runner, slot, init, arm)


def test_the_slot_init_idles_between_a_record_and_the_next_hand_over(
    idle_slot: IdleSlot,
) -> None:
    runner, slot, init, arm = idle_slot
    time.sleep(0.2)
    assert os.sched_getscheduler(init) == os.SCHED_IDLE
    arm(slot, False)
    assert wait_until(lambda: os.sched_getscheduler(init) == os.SCHED_OTHER, 10)
    r = runner.run(POLICY_PY)
    assert r.status == "ok" and r.stdout == f"{os.SCHED_OTHER}\n".encode(), r
    # Its arm order said not to idle: after this run the init stays at normal priority.
    time.sleep(0.2)
    assert os.sched_getscheduler(init) == os.SCHED_OTHER


def test_a_caller_waiting_for_an_idle_slot_brings_it_back_to_normal_priority(
    idle_slot: IdleSlot, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner, slot, init, arm = idle_slot
    # The init held still (as if other work starved it), its arm order sent: a caller
    # waiting for the slot brings it back to normal priority, and again while it waits.
    boosts: list[SlotHandle] = []
    real_boost = SlotHandle.boost

    def boost(s: SlotHandle) -> None:
        boosts.append(s)
        real_boost(s)

    monkeypatch.setattr(SlotHandle, "boost", boost)
    os.kill(init, signal.SIGSTOP)
    try:
        arm(slot, True)
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(slot.wait_armed, 30.0)
            assert wait_until(lambda: len(boosts) >= 2, 10)
            assert os.sched_getscheduler(init) == os.SCHED_OTHER
            assert not waiting.done()
            os.kill(init, signal.SIGCONT)
            assert waiting.result(30)
    finally:
        os.kill(init, signal.SIGCONT)
    r = runner.run(POLICY_PY)
    assert r.status == "ok" and r.stdout == f"{os.SCHED_OTHER}\n".encode(), r


def test_runs_beyond_the_cpus_keep_the_slots_work_at_normal_priority(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With as many runs going on as CPUs, a released slot's next arm order does not allow
    idling: runs wait for slots then, and idle-priority work would starve under them."""
    sandbox = Sandbox(SandboxConfig(background_idle=True), pool_size=4)
    orders: list[bool] = []
    real_arm = SlotHandle.arm

    def arm(s: SlotHandle, cg: RunCgroup | None, idle: bool = False) -> None:
        orders.append(idle)
        real_arm(s, cg, idle)

    monkeypatch.setattr(SlotHandle, "arm", arm)
    monkeypatch.setattr(sandbox, "_ncpu", 2)
    with Runner(sandbox) as runner:
        sandbox.warm_up(4, 0)
        orders.clear()
        with ThreadPoolExecutor(4) as pool:  # they end one by one, 0.3 s apart
            rs = list(
                pool.map(
                    lambda i: runner.run(f"import time; time.sleep({0.3 * (i + 1)})"), range(4)
                )
            )
        assert all(r.status == "ok" for r in rs), rs
    # Released with 3, 2, 1 and 0 runs still going on, on 2 CPUs.
    assert orders == [False, False, True, True]


def test_the_python_steps_never_idle() -> None:
    """Without the C library (a host with no compiler) the init's steps are Python's, which
    have no hand-over back from idle priority: the init stays at normal priority."""
    sandbox = Sandbox(SandboxConfig(launcher=False, background_idle=True), pool_size=1)
    with Runner(sandbox) as runner:
        for _ in range(3):
            r = runner.run(POLICY_PY)
            assert r.status == "ok" and r.stdout == f"{os.SCHED_OTHER}\n".encode(), r
        (slot,) = sandbox._idle[False, False]
        assert not slot.background_idle
        assert slot.pidfd is not None
        assert os.sched_getscheduler(_pid_of(slot.pidfd)) == os.SCHED_OTHER


def test_on_by_default_and_off_when_turned_off() -> None:
    """On by default (``SandboxConfig.background_idle``); turned off, the slot's init never
    goes to idle priority."""
    assert SandboxConfig().background_idle
    sandbox = Sandbox(SandboxConfig(background_idle=False), pool_size=1)
    with Runner(sandbox) as runner:
        for _ in range(3):
            assert runner.run("pass").status == "ok"
        (slot,) = sandbox._idle[False, False]
        assert not slot.background_idle
        assert slot.pidfd is not None
        init = _pid_of(slot.pidfd)
        assert init is not None
        time.sleep(0.1)  # the reset after the last record, done by now
        assert os.sched_getscheduler(init) == os.SCHED_OTHER


def test_a_boost_leaves_the_id_of_an_init_that_ended_alone() -> None:
    """The init's host id is read once, when the slot is ready: after the init has ended,
    that id may be another process's, whose policy a boost must not change."""
    other = subprocess.Popen(["sleep", "30"])
    ended = subprocess.Popen(["true"])
    slot = SlotHandle(socket.socketpair()[0], None, launcher=False)  # type: ignore[arg-type]
    try:
        os.sched_setscheduler(other.pid, os.SCHED_BATCH, os.sched_param(0))
        slot.pidfd = os.pidfd_open(ended.pid)
        ended.wait()
        slot.init_pid = other.pid  # as if the ended init's id had been reused
        slot.boost()
        assert os.sched_getscheduler(other.pid) == os.SCHED_BATCH
        # While the init lives the id is its own: boosted.
        os.close(slot.pidfd)
        slot.pidfd = os.pidfd_open(other.pid)
        slot.boost()
        assert os.sched_getscheduler(other.pid) == os.SCHED_OTHER
    finally:
        other.kill()
        other.wait()
        slot.close()
