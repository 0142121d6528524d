"""Claim: a fork bomb is held by the run's pids limit and leaves no process behind.

A program that forks without end must see ``fork()`` fail with EAGAIN once ``Limits.processes``
tasks exist (never more live processes than that), must end with an ordinary verdict (here
``time_limit``, since every process spins), never ``sandbox_error``, and once ``run()`` has
returned no process of the run may remain on the host: none of its processes (recognised by a
name they all inherit), and no process of the sandbox uid beyond the pool's idle, armed
program processes (none at all for a pool without idle slots). The next run on the same slot sees no trace of the bomb.
"""

from __future__ import annotations

import json
import time

from assay import Limits

PROCESSES = 16

FORK_BOMB = r"""
import errno, os, time

def bomb():
    while True:
        try:
            os.fork()
        except OSError:
            pass

first_error = None
children = 0
while True:
    try:
        pid = os.fork()
    except OSError as exc:
        first_error = exc.errno
        break
    if pid == 0:
        bomb()
    children += 1

time.sleep(0.1)  # let every child keep trying
live = sum(1 for d in os.listdir("/proc") if d.isdigit())
print(f"errno={errno.errorcode.get(first_error)} children={children} live={live}", flush=True)
bomb()
"""

AFTER = r"""
import json, os
others = [int(d) for d in os.listdir("/proc") if d.isdigit() and int(d) != os.getpid()]
print(json.dumps(others))
"""


def test_fork_bomb_is_contained(pool_runner, host) -> None:  # type: ignore[no-untyped-def]
    limits = Limits(time_s=2, memory_mb=128, processes=PROCESSES)
    started = time.monotonic()
    tag = host.new_tag()
    result = pool_runner.run(host.tagged(FORK_BOMB, tag), limits=limits)
    elapsed = time.monotonic() - started

    # Checked at once: "once the run returns", not after some grace period.
    survivors = host.leftovers(pool_runner, tag)
    assert survivors == [], f"processes survived the run: {survivors}"

    assert result.status == "time_limit", (result.status, result.stderr[-2000:])
    assert elapsed < limits.effective_wall_s + 2, f"run took {elapsed:.2f}s"

    report = result.stdout.decode().splitlines()[0]
    fields = dict(item.split("=") for item in report.split())
    assert fields["errno"] == "EAGAIN", report
    assert int(fields["children"]) < PROCESSES, report
    assert int(fields["live"]) <= PROCESSES, report

    after = pool_runner.run(AFTER, limits=Limits(time_s=1))
    assert after.status == "ok", after
    assert json.loads(after.stdout) == [], f"the next run sees other processes: {after.stdout!r}"
