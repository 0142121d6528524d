"""Same input, same verdict: a busy host must not flip a verdict (DESIGN principle 4).

A program that needs about half a CPU second, under a one-second CPU limit, is `ok` on an idle
host and still `ok` while eight CPU hogs compete with it on every core, and the CPU time it
is charged barely changes (time limits are judged on CPU time, not wall time).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import time

import pytest

from assay import Limits, Runner

TARGET_CPU_S = 0.5
HOGS = 8
# Each figure is the median of this many runs: this VM's CPU speed alone varies by ~+-20 %
# from one run to the next (turbo, neighbours), and one outlier must not decide the test.
REPEAT = 3
# A deterministic workload: no allocation growth, no I/O, the same instructions every time.
WORKLOAD = """\
def work(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) % 1000003
    return x
print(work({n}))
"""


RUNS: list[str] = []  # every run's status, CPU and wall time, for the failure message


def _cpu(runner: Runner, n: int) -> tuple[str, float, bytes]:
    r = runner.run(WORKLOAD.format(n=n), limits=Limits(time_s=1))
    RUNS.append(f"{r.status} {r.cpu_s:.3f} s CPU {r.wall_s:.2f} s wall")
    return r.status, r.cpu_s, r.stdout


def _measure(runner: Runner, n: int) -> tuple[list[str], float, set[bytes]]:
    """Statuses, median CPU seconds and distinct outputs of REPEAT runs."""
    runs = [_cpu(runner, n) for _ in range(REPEAT)]
    return [s for s, _, _ in runs], statistics.median(c for _, c, _ in runs), {o for *_, o in runs}


def _calibrate(runner: Runner) -> int:
    """Iterations that take ~TARGET_CPU_S of CPU in the sandbox on this host (idle)."""
    n = 200_000
    while True:
        status, cpu, _ = _cpu(runner, n)
        assert status == "ok", status
        if cpu >= 0.1:
            break
        n *= 4
    typical = statistics.median([cpu, _cpu(runner, n)[1], _cpu(runner, n)[1]])
    return max(1, int(n * TARGET_CPU_S / typical))


def _weigh(hogs: list[subprocess.Popen[bytes]]) -> str | None:
    """Put the hogs in a CPU cgroup of their own that outweighs the sandbox's (root only):
    where the test runs in a cgroup of its own (a CI runner's slice) or without autogroups,
    eight hogs beside Assay's cgroup would weigh as one task or one group, and not load the
    run at all. The cgroup's path (to remove), or None where it cannot be made."""
    for root, knob, value in (
        ("/sys/fs/cgroup/cpu", "cpu.shares", str(1024 * HOGS * 4)),
        ("/sys/fs/cgroup", "cpu.weight", "10000"),
    ):
        path = os.path.join(root, f"assay-test-hogs-{os.getpid()}")
        try:
            os.makedirs(path, exist_ok=True)
            with open(os.path.join(path, knob), "w") as fh:
                fh.write(value)
            for h in hogs:
                with open(os.path.join(path, "cgroup.procs"), "w") as fh:
                    fh.write(str(h.pid))
            return path
        except OSError:
            for h in hogs:  # back where they were: a half-made group is removed below
                with (
                    contextlib.suppress(OSError),
                    open(os.path.join(root, "cgroup.procs"), "w") as fh,
                ):
                    fh.write(str(h.pid))
            with contextlib.suppress(OSError):
                os.rmdir(path)
    return None


@pytest.mark.slow
@pytest.mark.alone  # its hogs outweigh every cgroup: no other test may share the machine
def test_cpu_time_verdict_is_independent_of_load(runner: Runner) -> None:
    RUNS.clear()
    n = _calibrate(runner)
    alone_status, alone_cpu, alone_out = _measure(runner, n)
    assert alone_status == ["ok"] * REPEAT
    assert len(alone_out) == 1

    # Each hog in its own session: with sched_autogroup (Debian's default) a session is one
    # scheduling group, so eight hogs sharing a session would weigh no more than one.
    hogs = [
        subprocess.Popen(
            [sys.executable, "-c", "while True: pass"],
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        for _ in range(HOGS)
    ]
    weighed = _weigh(hogs)
    try:
        time.sleep(0.3)  # let the hogs occupy every core
        assert all(h.poll() is None for h in hogs)
        started = time.monotonic()
        busy_status, busy_cpu, busy_out = _measure(runner, n)
        busy_wall = (time.monotonic() - started) / REPEAT
        assert all(h.poll() is None for h in hogs), "the hogs should still be running"
    finally:
        for h in hogs:
            h.kill()
        for h in hogs:
            h.wait()
        if weighed is not None:
            with contextlib.suppress(OSError):
                os.rmdir(weighed)

    assert busy_status == ["ok"] * REPEAT, (
        f"load flipped the verdict: {busy_status} with {busy_cpu:.3f} s CPU "
        f"(alone: {alone_cpu:.3f} s), {busy_wall:.2f} s wall per run; runs: {RUNS}"
    )
    assert busy_out == alone_out
    # CPU time itself is not load-free on shared cores (hyperthread and cache contention
    # inflated it by up to ~50 % here), so the claim is about the verdict: the program stays
    # inside its 1 s budget with margin, and it is not charged for the hogs' time (that would
    # be ~9x). Beside a busy test suite (make test runs two workers) even the "alone" runs
    # share the CPU: busy/alone ratios of 0.82 to 1.45 were measured over 8 runs, hence 2x.
    assert busy_cpu <= 2.0 * alone_cpu and busy_cpu < 1.0, (
        f"CPU time under load {busy_cpu:.3f} s vs {alone_cpu:.3f} s alone; runs: {RUNS}"
    )
    assert busy_wall > 2 * alone_cpu, (
        f"the hogs did not compete for the CPU ({busy_wall:.2f} s wall per run under load); "
        f"runs: {RUNS}"
    )
    assert 0.3 <= alone_cpu <= 0.8, (
        f"calibration missed the ~0.5 s target: {alone_cpu:.3f} s; runs: {RUNS}"
    )
