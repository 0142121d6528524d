"""Claim: CPU time is counted over every thread, so spinning in parallel cannot hide.

A program whose main thread only waits while many other threads spin uses CPU faster than
wall time passes (``cpu_s`` can exceed ``wall_s`` on a multi-core host). The verdict must count
all of it, from the cgroup, not the main thread's clock and not wall time: the run ends as
``time_limit`` once the *sum* reaches ``time_s``, before the threads' own work is done. Both
native threads (C, pthreads) and Python threads that leave the GIL are tried.
"""

from __future__ import annotations

import pytest

from assay import Limits

# Every worker spins for 0.5 s of its own CPU; 8 of them need 4 s, far above the 1 s budget.
# The main thread only joins, so it uses next to no CPU itself.
C_THREADS = r"""
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <time.h>
static double own_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}
static void *spin(void *arg) { volatile unsigned long n = 0; while (own_cpu() < 0.5) n++; return arg; }
int main(void) {
    pthread_t t[8];
    for (int i = 0; i < 8; i++) pthread_create(&t[i], 0, spin, 0);
    for (int i = 0; i < 8; i++) pthread_join(t[i], 0);
    printf("all threads finished\n");
    return 0;
}
"""

# hashlib releases the GIL on large buffers, so these threads really run in parallel.
PY_THREADS = r"""
import hashlib, threading, time
data = b"x" * (1 << 20)
def spin():
    while time.thread_time() < 0.5:
        hashlib.sha256(data).digest()
threads = [threading.Thread(target=spin) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("all threads finished")
"""

CASES = {"c-pthreads": ("c", C_THREADS), "python-threads": ("python", PY_THREADS)}


@pytest.mark.parametrize(("language", "code"), CASES.values(), ids=CASES.keys())
def test_parallel_threads_hit_time_limit(runner, language: str, code: str, gvisor: bool) -> None:  # type: ignore[no-untyped-def]
    # A generous wall backstop: only the CPU limit may end the run, however busy the host.
    limits = Limits(time_s=1, wall_s=10, processes=32)
    result = runner.run(code, language=language, limits=limits)

    assert b"all threads finished" not in result.stdout, "threads' CPU was not charged"
    assert result.status == "time_limit", (result.status, result.stderr[-2000:])
    assert result.cpu_s >= limits.time_s, result.cpu_s
    # Under gVisor the CPU is read every 10 ms by the exec server inside the sandbox, which
    # competes with the program for the CPU on a loaded host (1.59 s once in CI); its
    # RLIMIT_CPU hard limit, one second past the budget, bounds the overshoot.
    slack = 1.1 if gvisor else 0.5
    assert result.cpu_s < limits.time_s + slack, f"overshot the CPU budget: {result.cpu_s}"
    assert result.wall_s <= limits.effective_wall_s + 0.5, result.wall_s
