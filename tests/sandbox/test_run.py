"""The wall backstop's "still computing" judgement (sandbox/_run.py)."""

from __future__ import annotations

from assay.sandbox._run import COMPUTING_SHARE, COMPUTING_WINDOW_S, _CpuWindow


def test_a_program_starved_by_load_still_counts_as_computing() -> None:
    # 20 % of a core in 5 ms slices, sampled every 50 ms: the last few samples can show no
    # progress at all (the case that once turned a busy host into a wall-clock kill).
    w = _CpuWindow(0.0)
    cpu = 0.0
    for i in range(1, 81):
        at = i * 0.05
        if i % 10 < 6:  # CPU arrives in bursts, then nothing for 0.2 s
            cpu += 0.0167
        w.add(at, cpu)
    w.add(4.0005, cpu)  # the wall check comes right after a sample: no new CPU
    assert w.share() >= 0.15
    assert w.share() >= COMPUTING_SHARE


def test_a_sleeper_does_not_count_as_computing() -> None:
    w = _CpuWindow(0.0)
    w.add(0.05, 0.04)  # start-up CPU, then sleep
    for i in range(2, 81):
        w.add(i * 0.05, 0.04)
    assert w.share() < COMPUTING_SHARE


def test_a_program_that_computed_then_slept_stops_counting_within_two_windows() -> None:
    w = _CpuWindow(0.0)
    cpu = 0.0
    for i in range(1, 41):  # computes flat out for 2 s
        cpu += 0.05
        w.add(i * 0.05, cpu)
    at = 2.0
    while at < 2.0 + 2 * COMPUTING_WINDOW_S + 0.1:
        at += 0.05
        w.add(at, cpu)
    assert w.share() < COMPUTING_SHARE


def test_the_window_never_shrinks_below_its_length() -> None:
    w = _CpuWindow(0.0)
    for i in range(1, 200):
        w.add(i * 0.013, i * 0.001)
        if i * 0.013 >= COMPUTING_WINDOW_S:
            assert w.last[0] - w.base[0] >= COMPUTING_WINDOW_S
