"""The wall backstop's "still computing" judgement (sandbox/_run.py).

The window measures the CPU rate a run would have alone: CPU time over the wall time it was
not waiting for a CPU (run-queue wait), so load neither hides a computing program nor makes
a sleeper look busy.
"""

from __future__ import annotations

from assay.sandbox._run import COMPUTING_SHARE, COMPUTING_WINDOW_S, _CpuWindow


def test_a_program_starved_by_load_counts_as_computing_flat_out() -> None:
    # 20 % of a core in bursts, waiting for a CPU the rest of the time: alone it would
    # compute flat out, and its last samples may show no progress at all.
    w = _CpuWindow(0.0)
    cpu = waited = 0.0
    for i in range(1, 81):
        if i % 10 < 6:  # CPU arrives in bursts, then nothing for 0.2 s
            cpu += 0.0167
        waited = i * 0.05 - cpu
        w.add(i * 0.05, cpu, waited)
    w.add(4.0005, cpu, waited + 0.0005)  # the wall check right after a sample
    assert w.share() >= 0.9


def test_a_sleeper_does_not_count_as_computing() -> None:
    w = _CpuWindow(0.0)
    w.add(0.05, 0.04, 0.0)  # start-up CPU, then sleep
    for i in range(2, 81):
        w.add(i * 0.05, 0.04, 0.0)
    assert w.share() < COMPUTING_SHARE


def test_load_does_not_make_a_sleeper_look_busy() -> None:
    # 5 % CPU alone (2.5 ms per 50 ms); under load each burst also waits 20 ms for a CPU.
    w = _CpuWindow(0.0)
    cpu = waited = 0.0
    for i in range(1, 81):
        cpu += 0.0025
        waited += 0.02
        w.add(i * 0.05, cpu, waited)
    assert w.share() < 0.1  # ~0.083: its cycle without the waits is 30 ms, 2.5 ms computing


def test_a_program_that_computed_then_slept_stops_counting_within_two_windows() -> None:
    w = _CpuWindow(0.0)
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
    w = _CpuWindow(0.0)
    for i in range(1, 200):
        w.add(i * 0.013, i * 0.001, 0.0)
        if i * 0.013 >= COMPUTING_WINDOW_S:
            assert w.last[0] - w.base[0] >= COMPUTING_WINDOW_S
