"""A supervisor killed with SIGKILL leaves nothing behind: no process, no fork server, no cgroup.

The supervisor runs in its own Python process (started here), has a program running that
sleeps forever and has forked a child that sleeps too, and is then killed without any chance
to clean up. Every process it owned must die on its own (the chain of PDEATHSIGs), and the
cgroup session directory it leaves must be reclaimed by the next ``Sandbox()`` on the host.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys

import pytest
from _proctree import (
    SLEEPER_WITH_CHILD,
    descendants,
    is_running,
    ppid_of,
    sandbox_program_with_child,
    start_time,
    uid_of,
    wait_until,
)

import assay
from assay.sandbox.config import is_sandbox_uid

SUPERVISOR = f"""
import json
import assay
from assay.sandbox.config import is_sandbox_uid

PROGRAM = {SLEEPER_WITH_CHILD!r}

with assay.Runner() as runner:
    first = runner.run("print('warm')")
    print(json.dumps({{
        "status": first.status,
        "zygote": runner.sandbox.zygote_pid,
        "session": getattr(runner.sandbox.cgroups, "session", None),
    }}), flush=True)
    runner.run(PROGRAM, limits=assay.Limits(time_s=60, wall_s=600))
"""


def _read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    try:
        if not sel.select(timeout):
            return ""
    finally:
        sel.close()
    return proc.stdout.readline()


def _cgroup_mounts() -> tuple[dict[str, str], str | None]:
    """(v1 controller -> mount point for memory/pids/cpuacct, v2 mount point or None)."""
    v1: dict[str, str] = {}
    v2 = None
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            left, _, right = line.partition(" - ")
            point = left.split()[4]
            fstype, _source, opts = [*right.split(), "", "", ""][:3]
            if fstype == "cgroup":
                for c in ("memory", "pids", "cpuacct"):
                    if c in opts.split(","):
                        v1.setdefault(c, point)
            elif fstype == "cgroup2" and v2 is None:
                v2 = point
    return v1, v2


def _session_dirs(pid: int, session: str) -> list[str]:
    """Where a supervisor with this pid keeps its session: <its cgroup>/assay/<session>."""
    v1, v2 = _cgroup_mounts()
    own: dict[str, str] = {}
    with open(f"/proc/{pid}/cgroup") as fh:
        for line in fh:
            hid, controllers, path = line.rstrip("\n").split(":", 2)
            for c in controllers.split(","):
                own[c] = path
            if hid == "0":
                own[""] = path
    if len(v1) == 3:
        return [
            os.path.join(point, own.get(c, "/").lstrip("/"), "assay", session)
            for c, point in v1.items()
        ]
    if v2 is not None:
        return [os.path.join(v2, "assay", session)]
    return []


def test_sigkilled_supervisor_leaves_nothing_behind() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", SUPERVISOR],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = _read_line(proc, 60)
        assert line, f"supervisor printed nothing; stderr: {proc.stderr and proc.stderr.read()}"
        info = json.loads(line)
        assert info["status"] == "ok"
        zygote = info["zygote"]
        assert isinstance(zygote, int) and ppid_of(zygote) == proc.pid

        assert wait_until(lambda: sandbox_program_with_child(zygote), 30), (
            "the sleeping program and its child never appeared under the fork server"
        )
        owned = {pid: start_time(pid) for pid in descendants(proc.pid)}
        sandboxed = [pid for pid in owned if is_sandbox_uid(uid_of(pid))]
        assert len(sandboxed) >= 2, "expected the program and its child to run as sandbox uids"
        session_dirs = _session_dirs(proc.pid, info["session"]) if info["session"] else []
        for d in session_dirs:
            assert os.path.isdir(d), f"the live supervisor's cgroup session {d} should exist"
            runs = [e.name for e in os.scandir(d) if e.is_dir()]
            assert runs, f"the running program's cgroup should be inside {d}"

        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

        def survivors() -> list[int]:
            return [pid for pid, start in owned.items() if is_running(pid, start)]

        wait_until(lambda: not survivors(), 5)
        left = survivors()
        assert not left, f"processes of the killed supervisor survived: {_describe(left)}"
        assert not is_running(zygote, owned[zygote]), "the fork server outlived its supervisor"
        if not session_dirs:
            pytest.skip("no cgroup hierarchy on this host: nothing to reclaim")
        # (Another Sandbox on the host, e.g. a parallel test worker, may reclaim it first.)
        with assay.Sandbox():
            pass
        left_dirs = [d for d in session_dirs if os.path.exists(d)]
        assert not left_dirs, f"stale cgroup session not reclaimed by a new Sandbox: {left_dirs}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _describe(pids: list[int]) -> str:
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")[:80]
        except OSError:
            cmd = "?"
        out.append(f"{pid} (uid {uid_of(pid)}, ppid {ppid_of(pid)}): {cmd}")
    return "; ".join(out)
