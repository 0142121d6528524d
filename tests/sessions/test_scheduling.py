"""Session steps on an executor share its slots in the scheduler's order (issue 15)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay import LocalExecutor, Runner
from assay.executor import RunJob
from assay.scheduler import HIGH, LOW, NORMAL
from assay.sessions import Session, SessionEnded, SessionLimits

SMALL = SessionLimits(cpu_s=60, memory_mb=256, processes=32, disk_mb=64)

SLEEP = "import time; time.sleep(0.4)"


@pytest.fixture
def one_slot(runner: Runner, tmp_path: Path) -> Iterator[LocalExecutor]:
    with LocalExecutor(runner, slots=1, state_dir=tmp_path) as ex:
        yield ex


def _batch(ex: LocalExecutor, n: int, priority: int) -> list[float]:
    """Submit ``n`` sleeping runs; returns the list their finish times are appended to."""
    done: list[float] = []
    ex.submit(
        [RunJob(SLEEP)] * n,
        priority=priority,
        caller="trainer",
        on_result=lambda _r: done.append(time.monotonic()),
    )
    return done


def _step_in_thread(s: Session, command: str) -> tuple[threading.Thread, list[float]]:
    finished: list[float] = []

    def go() -> None:
        s.exec(command)
        finished.append(time.monotonic())

    t = threading.Thread(target=go)
    t.start()
    return t, finished


def test_a_high_priority_step_overtakes_a_queued_low_batch(one_slot: LocalExecutor) -> None:
    with Session(one_slot, limits=SMALL, priority=HIGH) as s:
        done = _batch(one_slot, 4, LOW)
        time.sleep(0.1)  # the first run holds the only slot
        t, finished = _step_in_thread(s, "true")
        t.join(30)
        while len(done) < 4:
            time.sleep(0.05)
    # It waited for the run holding the slot at most, not for the three queued behind it.
    assert sum(f < finished[0] for f in done) <= 1, (done, finished)


def test_a_low_priority_step_waits_for_a_high_batch(one_slot: LocalExecutor) -> None:
    with Session(one_slot, limits=SMALL, priority=LOW) as s:
        done = _batch(one_slot, 3, HIGH)
        t, finished = _step_in_thread(s, "true")
        t.join(30)
    assert len(done) == 3 and finished[0] >= max(done), (done, finished)


def test_a_step_holds_a_step_slot_no_worker_and_an_idle_session_none(
    one_slot: LocalExecutor,
) -> None:
    with Session(one_slot, limits=SMALL) as s:
        assert one_slot.steps_running == 0
        t, _ = _step_in_thread(s, "sleep 1")
        deadline = time.monotonic() + 5
        while one_slot.steps_running == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert one_slot.steps_running == 1
        assert one_slot.busy == 0  # the step runs without holding the batch worker
        t.join(30)
        assert one_slot.steps_running == 0
        # The idle session takes nothing from a batch: both runs go through the one slot.
        results = one_slot.run([RunJob("print(1)"), RunJob("print(2)")])
        assert [r.verdict for r in results] == ["ok", "ok"], results
        assert s.exec("echo still here").stdout == b"still here\n"


def test_bad_priority_and_caller_are_refused(runner: Runner) -> None:
    from assay.errors import ValidationError

    with pytest.raises(ValidationError, match="priority"):
        Session(runner, priority=-1)
    with pytest.raises(ValidationError, match="caller"):
        Session(runner, caller="")


def test_steps_and_a_batch_of_one_class_share_the_slot(one_slot: LocalExecutor) -> None:
    # Same priority class: fair shares between the callers ("sessions" and "trainer"), so
    # neither a burst of steps nor the batch holds the slot until it is through.
    with Session(one_slot, limits=SMALL) as s:
        done = _batch(one_slot, 4, NORMAL)
        steps = [_step_in_thread(s, "sleep 0.4") for _ in range(4)]
        for t, _ in steps:
            t.join(60)
        while len(done) < 4:
            time.sleep(0.05)
    finished = sorted(f[0] for _, f in steps)
    assert min(finished) < max(done) and min(done) < max(finished), (done, finished)


def _sleeper(s: Session) -> threading.Thread:
    """A thread whose step sleeps 15 s (or ends early when its session is closed)."""

    def go() -> None:
        with contextlib.suppress(SessionEnded):
            s.exec("sleep 15")

    t = threading.Thread(target=go)
    t.start()
    return t


def test_sleeping_steps_do_not_hold_the_slots_from_a_plain_run(
    tmp_path: Path, runner: Runner
) -> None:
    # Issue 26: more sleeping steps than slots held every worker for their whole timeout,
    # and another caller's print(42) waited for them (22 s once).
    with LocalExecutor(runner, slots=2, state_dir=tmp_path) as ex:
        sessions = [Session(ex, limits=SMALL, caller=f"agent{i}") for i in range(4)]
        try:
            sleepers = [_sleeper(s) for s in sessions]
            deadline = time.monotonic() + 10
            while ex.steps_running < 2 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert ex.steps_running == 2  # every step slot holds a sleeper
            started = time.monotonic()
            results = ex.run([RunJob("print(42)")], caller="trainer")
            took = time.monotonic() - started
            assert results[0].verdict == "ok", results
            assert took < 5.0, took  # the sleepers have 15 s left
        finally:
            for s in sessions:
                s.close()
            for t in sleepers:
                t.join(30)


def test_one_callers_sleeping_steps_leave_step_slots_to_another(
    tmp_path: Path, runner: Runner
) -> None:
    with LocalExecutor(runner, slots=2, state_dir=tmp_path) as ex:
        hostile = [Session(ex, limits=SMALL, caller="hostile") for _ in range(3)]
        other = Session(ex, limits=SMALL, caller="other")
        try:
            sleepers = [_sleeper(s) for s in hostile]
            time.sleep(1.0)  # the hostile caller's steps are running or waiting
            started = time.monotonic()
            assert other.exec("echo hi").stdout == b"hi\n"
            assert time.monotonic() - started < 5.0
        finally:
            for s in [*hostile, other]:
                s.close()
            for t in sleepers:
                t.join(30)
