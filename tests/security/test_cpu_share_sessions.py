"""Claim: a run's share of the CPU does not grow with the processes or sessions it makes.

Attack (red-team finding 1): a program forks many children, each after ``setsid()``. Without a
CPU group per run every new session is an autogroup of its own, so two such programs took
most of this 2-core machine from a concurrent victim, which came back ``time_limit`` (wall
4-11 s) for 0.5 s of CPU under a 1 s limit. Each run now has its own CPU cgroup with equal
weight: the victim's verdict is the same alone and beside the attackers.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from assay import Limits, Runner, Sandbox, probe_host

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="per-run CPU cgroups need root")

ATTACKER = """
import os, time
for _ in range(24):
    if os.fork() == 0:
        os.setsid()
        while True:
            pass
time.sleep(30)
"""

# ~0.5 s of CPU on this machine, measured by the sandbox (cpu_s), whatever the load.
VICTIM = """
import time
t = time.process_time()
while time.process_time() - t < 0.5:
    pass
print("done")
"""


def test_cpu_weights_are_in_force_on_this_host() -> None:
    report = probe_host()
    assert report.cpu_weights, "no per-run CPU weight: the cpu controller is not in use"


def test_sessions_do_not_steal_cpu_from_a_concurrent_run() -> None:
    victim_limits = Limits(time_s=1)
    attacker_limits = Limits(time_s=60, wall_s=12, processes=64)
    with Runner(Sandbox(pool_size=4)) as runner:
        alone = runner.run(VICTIM, limits=victim_limits)
        assert alone.status == "ok", (alone.status, alone.stderr[-500:])

        started = threading.Barrier(3)
        results = {}

        def attack(i: int) -> None:
            started.wait()
            results[i] = runner.run(ATTACKER, limits=attacker_limits)

        threads = [threading.Thread(target=attack, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        started.wait()
        time.sleep(1.0)  # the attackers' 48 spinning sessions are up
        verdicts = [runner.run(VICTIM, limits=victim_limits) for _ in range(3)]
        for t in threads:
            t.join()
    assert all(r.status == "time_limit" for r in results.values()), results
    for beside in verdicts:
        assert beside.status == alone.status, (beside.status, beside.wall_s, beside.cpu_s)
        assert beside.stdout == b"done\n"
