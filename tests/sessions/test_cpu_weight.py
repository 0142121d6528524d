"""A session's processes weigh less on the CPU than a judged run (issue 26): its cgroup's
``cpu.shares`` (v1) or ``cpu.weight`` (v2) is ``SESSION_CPU_WEIGHT`` percent of a run's."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import pytest

from assay import defaults
from assay.sandbox.cgroups import V1_CPU_SHARES, V2_CPU_WEIGHT
from assay.sessions import Session

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="per-run CPU cgroups need root"),
    pytest.mark.skipif(
        os.environ.get("ASSAY_ISOLATION") == "gvisor",
        reason="a gVisor session's processes are its Sentry's, not found by command line",
    ),
]


def _cgroup_of(marker: str) -> str | None:
    """The CPU cgroup dir of the process whose command line holds ``marker``."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if marker.encode() not in fh.read():
                    continue
            with open(f"/proc/{pid}/cgroup") as fh:
                lines = [line.rstrip("\n").split(":", 2) for line in fh]
        except OSError:
            continue
        for _, controllers, path in lines:
            if controllers == "":
                return "/sys/fs/cgroup" + path
            if "cpu" in controllers.split(","):
                root = "/sys/fs/cgroup/" + controllers
                if not os.path.isdir(root):
                    root = "/sys/fs/cgroup/cpu"
                return root + path
    return None


def test_a_sessions_cgroup_has_a_lower_cpu_weight(open_session: Callable[..., Session]) -> None:
    s = open_session()
    marker = f"9{os.getpid()}.25"  # a sleep of an unusual length names the process
    s.exec(f"sleep {marker} >/dev/null 2>&1 &")
    found = None
    for _ in range(50):
        found = _cgroup_of(marker)
        if found is not None:
            break

        time.sleep(0.05)
    assert found is not None, "the session's process is not visible from the host"
    path = found
    if os.path.exists(os.path.join(path, "cpu.weight")):
        with open(os.path.join(path, "cpu.weight")) as fh:
            assert int(fh.read()) == V2_CPU_WEIGHT * defaults.SESSION_CPU_WEIGHT // 100
    else:
        with open(os.path.join(path, "cpu.shares")) as fh:
            assert int(fh.read()) == V1_CPU_SHARES * defaults.SESSION_CPU_WEIGHT // 100
