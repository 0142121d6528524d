"""The slot's init takes plain arm orders in C (launcher.c's ``assay_serve``) and leaves
every other order to its Python steps: runs go on alike whichever steps took their order."""

from __future__ import annotations

import time

import pytest
from _proctree import is_running, wait_until

from assay import Runner, SandboxConfig, defaults
from assay.sandbox import Sandbox
from assay.sandbox._inside import wire
from assay.sandbox._slots import SlotHandle, _pid_of


def _minflt(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[7])


def test_an_order_between_runs_goes_to_the_python_steps_and_runs_go_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sandbox = Sandbox(SandboxConfig(), pool_size=1)
    with Runner(sandbox) as runner:
        assert runner.run("print(1)").stdout == b"1\n"
        (slot,) = sandbox._idle[False, False]
        arm = sandbox._arm
        left: list[SlotHandle] = []

        def keep(s: SlotHandle, idle: bool = False) -> None:
            left.append(s)

        monkeypatch.setattr(sandbox, "_arm", keep)
        assert runner.run("print(2)").stdout == b"2\n"
        assert left == [slot]
        monkeypatch.setattr(sandbox, "_arm", arm)
        # A late kill order (its run is over): not an arm order, so C leaves it unread and
        # the Python steps drop it; the arm order after it then goes through them too.
        time.sleep(0.1)
        wire.send_raw(slot.sock, wire.KILL)
        arm(slot, False)
        for i in range(3, 8):
            r = runner.run(f"print({i})")
            assert r.status == "ok" and r.stdout == f"{i}\n".encode(), r


def test_a_slot_serves_its_runs_to_the_last_and_its_init_writes_few_pages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Retired after SLOT_MAX_RUNS runs (the init's loop ends when the supervisor hangs up),
    and the init writes almost nothing between runs while it shares its pages with each
    program process (each page it writes is a fault, copied while that process lives): its
    loop over arm orders is C's."""
    monkeypatch.setattr(defaults, "SLOT_MAX_RUNS", 40)
    sandbox = Sandbox(SandboxConfig(), pool_size=1)
    inits: set[int] = set()
    with Runner(sandbox) as runner:
        for i in range(100):
            r = runner.run(f"print({i})")
            assert r.status == "ok" and r.stdout == f"{i}\n".encode(), r
            idle = list(sandbox._idle[False, False])
            if not idle:  # retired after its last run: the next run starts a new slot
                continue
            assert idle[0].pidfd is not None
            init = _pid_of(idle[0].pidfd)
            if i == 10:
                before = _minflt(init)
            elif i == 30:
                assert init in inits
                faults = (_minflt(init) - before) / 20
            inits.add(init)
    assert len(inits) == 3  # runs 1-40, 41-80, 81-100
    # Each init ends once the supervisor hangs up (after its last run, or at the close).
    wait_until(lambda: not any(is_running(init) for init in inits), 30)
    assert not [init for init in inits if is_running(init)]
    # ~12 here (the Python loop wrote ~128 per run)
    assert faults < 40, faults
