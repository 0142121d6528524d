"""A run cannot choose the pages its slot's later program processes fault in before their
requests (sandbox.py's calibration): only the slot's first run, the supervisor's own
``print(1)``, reports them. Were a run's report taken, it could name every page its process
shares with the slot's init, and each later run would copy them all (~8 MiB of memory
charged to it, and the time). The attack: a run that passes the calibration's argument and
writes a byte of every such page, so that its report names them; the next runs on the slot
must not start with them their own."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from assay import Runner, SandboxConfig
from assay.sandbox import Sandbox
from assay.sandbox._inside import pyrun
from assay.sandbox._run import RunRequest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sandbox"))
from _pages import OWN_PAGES

#: Rewrites one byte of every page of its private writable mappings (those it shares with
#: the slot's init until then), with the byte it holds.
ATTACK = b"""
import ctypes
pages = 0
with open("/proc/self/maps") as fh:
    for line in fh:
        f = line.split()
        if f[1] != "rw-p" or f[-1] in ("[stack]", "[vvar]", "[vdso]"):
            continue
        a, b = (int(x, 16) for x in f[0].split("-"))
        for at in range(a, b, 4096):
            p = ctypes.cast(at, ctypes.POINTER(ctypes.c_char))
            p[0] = p[0]
            pages += 1
print(1)
"""


def test_a_run_cannot_have_its_pages_faulted_in_for_the_next() -> None:
    sandbox = Sandbox(SandboxConfig(), pool_size=1)
    with Runner(sandbox) as runner:
        sandbox.warm_up(1, 0)
        if not sandbox.zygote_info.get("native_fork"):
            pytest.skip("program processes are forked in Python on this host (no C compiler)")
        before = int(runner.run(OWN_PAGES).stdout)
        files = [("main.py", ATTACK, 0o644)]
        attack = sandbox.execute(RunRequest("python", ["/work/main.py", pyrun.CALIBRATE], files))
        assert attack.status == "ok", attack
        # Its report, to itself, names more pages than a run's own writes: what it wanted
        # the next runs to copy.
        reported = sum(int(line.split()[1]) for line in attack.stdout.splitlines()[1:]) // 4096
        assert reported > before + 1000, (reported, before)
        after = [int(runner.run(OWN_PAGES).stdout) for _ in range(3)]
    assert max(after) < before + 100, (before, reported, after)
