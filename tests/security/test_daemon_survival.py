"""Claim: no process of a run outlives it, however it detaches.

The program double-forks a ``setsid`` daemon that ignores the usual termination signals and
then sleeps, writes marker files and spins; variants close their stdio, keep the output pipes
open, or keep changing pid (fork, parent exits) to dodge a kill. The main program exits at
once. Once ``run()`` has returned, no process of the run may exist on the host (none carrying
the name every process of the run inherits; no process of the sandbox uid beyond the pool's
idle, armed program processes), and later runs, on the very same slot, must see neither the
daemon nor anything it would have written.
"""

from __future__ import annotations

import json
import time

import pytest

from assay import Limits

DAEMON = r"""
import os, signal, sys, time

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_IGN)
        STYLE
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            HOP
            time.sleep(0.01)
        for path in ("/tmp/daemon-was-here", "/work/daemon-was-here", "/dev/shm/daemon-was-here"):
            with open(path, "w") as fh:
                fh.write(str(os.getpid()))
        while True:
            pass
    os._exit(0)
os.wait()
print("main done", flush=True)
"""

STYLES = {
    "detached": ("os.closerange(0, 3)", "pass"),
    "holding-pipes": ("pass", "pass"),
    "pid-hopping": ("os.closerange(0, 3)", "os.fork() and os._exit(0)"),
}

LATER = r"""
import json, os
seen = {
    "procs": [int(d) for d in os.listdir("/proc") if d.isdigit() and int(d) != os.getpid()],
    "files": sorted(os.listdir("/tmp") + os.listdir("/work") + os.listdir("/dev/shm")),
}
print(json.dumps(seen))
"""


@pytest.mark.parametrize("style", STYLES.values(), ids=STYLES.keys())
def test_daemon_does_not_survive_the_run(pool_runner, host, style: tuple[str, str]) -> None:  # type: ignore[no-untyped-def]
    setup, hop = style
    tag = host.new_tag()
    code = host.tagged(DAEMON.replace("STYLE", setup).replace("HOP", hop), tag)
    result = pool_runner.run(code, limits=Limits(time_s=2, wall_s=5))

    survivors = host.leftovers(pool_runner, tag)
    assert survivors == [], f"processes survived the run: {survivors}"
    assert result.status == "ok", (result.status, result.stderr[-2000:])
    assert result.stdout == b"main done\n", result.stdout

    time.sleep(0.6)  # long past the moment the daemon would have written its markers
    assert host.leftovers(pool_runner, tag) == []
    for _ in range(2):  # with one slot, these run in the daemon's slot
        later = pool_runner.run(LATER, limits=Limits(time_s=2))
        assert later.status == "ok", (later.status, later.stderr[-2000:])
        seen = json.loads(later.stdout)
        assert seen == {"procs": [], "files": ["main.py"]}, f"the daemon left traces: {seen}"
