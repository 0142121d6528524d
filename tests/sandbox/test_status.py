"""The one status rule of every tier (sandbox/_inside/status.py): the decision table, and
the wall backstop's "still computing" judgement.

The window measures the CPU rate a run would have alone: CPU time over the wall time it was
not waiting for a CPU (run-queue wait), so load neither hides a computing program nor makes
a sleeper look busy.
"""

from __future__ import annotations

import signal

import pytest

from assay.sandbox._inside.status import (
    COMPUTING_SHARE,
    COMPUTING_WINDOW_S,
    CpuWindow,
    cpu_check_after,
    decide,
    memory_error,
    on_course,
    stretched_wall,
)


def test_a_program_starved_by_load_counts_as_computing_flat_out() -> None:
    # 20 % of a core in bursts, waiting for a CPU the rest of the time: alone it would
    # compute flat out, and its last samples may show no progress at all.
    w = CpuWindow(0.0)
    cpu = waited = 0.0
    for i in range(1, 81):
        if i % 10 < 6:  # CPU arrives in bursts, then nothing for 0.2 s
            cpu += 0.0167
        waited = i * 0.05 - cpu
        w.add(i * 0.05, cpu, waited)
    w.add(4.0005, cpu, waited + 0.0005)  # the wall check right after a sample
    assert w.share() >= 0.9


def test_a_sleeper_does_not_count_as_computing() -> None:
    w = CpuWindow(0.0)
    w.add(0.05, 0.04, 0.0)  # start-up CPU, then sleep
    for i in range(2, 81):
        w.add(i * 0.05, 0.04, 0.0)
    assert w.share() < COMPUTING_SHARE


def test_load_does_not_make_a_sleeper_look_busy() -> None:
    # 5 % CPU alone (2.5 ms per 50 ms); under load each burst also waits 20 ms for a CPU.
    w = CpuWindow(0.0)
    cpu = waited = 0.0
    for i in range(1, 81):
        cpu += 0.0025
        waited += 0.02
        w.add(i * 0.05, cpu, waited)
    assert w.share() < 0.1  # ~0.083: its cycle without the waits is 30 ms, 2.5 ms computing


def test_a_program_that_computed_then_slept_stops_counting_within_two_windows() -> None:
    w = CpuWindow(0.0)
    cpu = 0.0
    for i in range(1, 41):  # computes flat out for 2 s
        cpu += 0.05
        w.add(i * 0.05, cpu, 0.0)
    at = 2.0
    while at < 2.0 + 2 * COMPUTING_WINDOW_S + 0.1:
        at += 0.05
        w.add(at, cpu, 0.0)
    assert w.share() < COMPUTING_SHARE


def test_the_window_never_shrinks_below_its_length() -> None:
    w = CpuWindow(0.0)
    for i in range(1, 200):
        w.add(i * 0.013, i * 0.001, 0.0)
        if i * 0.013 >= COMPUTING_WINDOW_S:
            assert w.last[0] - w.base[0] >= COMPUTING_WINDOW_S


_BASE = {
    "kill_reason": None,
    "reported": True,
    "failed": False,
    "oom": False,
    "exit_code": 0,
    "sig": None,
    "cpu_s": 0.1,
    "time_s": 1.0,
    "stderr_tail": b"",
}


@pytest.mark.parametrize(
    ("facts", "status"),
    [
        ({}, "ok"),
        ({"exit_code": 3}, "runtime_error"),
        ({"exit_code": None, "sig": int(signal.SIGSEGV)}, "runtime_error"),
        ({"cpu_s": 1.0}, "ok"),  # exactly the limit is within it
        ({"cpu_s": 1.001}, "time_limit"),  # over it, though it ended between two readings
        ({"kill_reason": "time"}, "time_limit"),
        ({"kill_reason": "wall", "exit_code": None, "sig": 9}, "time_limit"),
        ({"exit_code": None, "sig": int(signal.SIGXCPU)}, "time_limit"),
        ({"exit_code": None, "sig": int(signal.SIGXFSZ)}, "output_limit"),
        ({"kill_reason": "output", "exit_code": None, "sig": 9}, "output_limit"),
        ({"oom": True, "exit_code": None, "sig": 9}, "memory_limit"),
        ({"kill_reason": "memory", "exit_code": None, "sig": 9}, "memory_limit"),
        ({"exit_code": 1, "stderr_tail": b"Traceback ...\nMemoryError\n"}, "memory_limit"),
        ({"exit_code": 1, "stderr_tail": b"  x\nMemoryError: out\n"}, "memory_limit"),
        # A program that catches it and fails otherwise, or only mentions it, is not.
        ({"exit_code": 1, "stderr_tail": b"MemoryError\nValueError: x\n"}, "runtime_error"),
        ({"exit_code": 0, "stderr_tail": b"MemoryError\n"}, "ok"),
        ({"kill_reason": "stopped", "exit_code": None, "sig": 9}, "runtime_error"),
        ({"failed": True}, "sandbox_error"),
        ({"reported": False, "exit_code": None}, "sandbox_error"),
        # Over its CPU time is the program's doing even if our side failed afterwards.
        ({"failed": True, "cpu_s": 2.0}, "time_limit"),
    ],
)
def test_the_status_rule(facts: dict[str, object], status: str) -> None:
    assert decide(**{**_BASE, **facts}) == status  # type: ignore[arg-type]


def test_memory_error_reads_only_the_last_line() -> None:
    assert memory_error(b"Traceback (most recent call last):\n  ...\nMemoryError\n")
    assert not memory_error(b"print('MemoryError')\nSystemExit: 1\n")
    assert not memory_error(b"")


def test_the_stretch_is_for_the_default_backstop_only() -> None:
    assert stretched_wall(3.0, explicit=True) == 3.0
    assert stretched_wall(3.0, explicit=False) == 12.0


def test_on_course_needs_a_pace_that_reaches_the_limit_in_time() -> None:
    # 0.5 s of CPU left at a full core: needs 0.5 s, 1 s of stretch left.
    assert on_course(1.0, 0.5, 1.0, now=11.0, started=0.0, hard_wall=12.0)
    # The same at 10 % of a core needs 5 s: not on course.
    assert not on_course(0.1, 0.5, 1.0, now=11.0, started=0.0, hard_wall=12.0)
    assert not on_course(COMPUTING_SHARE / 2, 0.99, 1.0, now=1.0, started=0.0, hard_wall=12.0)


def test_the_cpu_clock_is_read_when_the_limit_could_first_be_crossed() -> None:
    # 10 s left on 2 CPUs: not before 5 s, but never later than the request's cap.
    assert cpu_check_after(0.0, 10.0, 2, 0.002, 0.5) == 0.5
    assert cpu_check_after(0.0, 10.0, 2, 0.002, 60.0) == 5.0
    # Near (or past) the limit: at the floor, so the run is stopped within it.
    assert cpu_check_after(0.999, 1.0, 1, 0.01, 0.5) == 0.01
    assert cpu_check_after(2.0, 1.0, 4, 0.002, 0.05) == 0.002
    assert cpu_check_after(0.0, 1.0, 0, 0.002, 5.0) == 1.0  # no CPU count: one
