"""Claim: the program cannot see or read any host file outside the read-only runtime view.

The sandbox root is a private tmpfs holding read-only binds of ``/usr``, ``/lib*``, ``/bin``,
``/sbin``, a handful of ``/etc`` entries and four device nodes; everything else of the host is
out of reach. The program tries host secrets and private trees directly (``/root``, ``/home``,
``/etc/shadow``, the project tree, ``/work/shared``), through ``/proc`` links, through
inherited file descriptors, and by walking every directory it can see; canary files the test
plants in host directories must never show up. Its mount table may hold only the runtime view.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator

import pytest

from assay import Limits, RunRequest, defaults
from assay.sandbox._inside.rootfs import MASKED_PROC_DIRS, MASKED_PROC_FILES

PROJECT_README = "/work/main/README.md"
SHARED_DESIGN = "/work/shared/DESIGN.md"
CANARY_DIRS = ("/root", "/tmp", "/var/tmp", "/home", "/opt", "/srv")

PROBE = r"""
import json, os, sys

targets = json.loads(sys.argv[1])
canary = sys.argv[2]
report = {"read": {}, "listed": {}, "found": [], "fds": [], "mounts": []}

for path in targets:
    try:
        if os.path.isdir(path):
            report["listed"][path] = sorted(os.listdir(path))[:20]
        else:
            with open(path, "rb") as fh:
                report["read"][path] = fh.read(200).decode("latin-1")
    except OSError as exc:
        pass

# Walk every directory the program can see, except the (read-only, host-shared by design)
# runtime trees and /proc, looking for the canary's name or content.
skip = {"/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin", "/proc"}
for top, dirs, files in os.walk("/", onerror=lambda e: None):
    dirs[:] = [d for d in dirs if os.path.join(top, d) not in skip]
    for name in files + dirs:
        path = os.path.join(top, name)
        if canary in name:
            report["found"].append(path)
        elif name in files and not os.path.islink(path) and os.path.isfile(path):
            # (regular files only: a device such as a pty master would block the read)
            try:
                with open(path, "rb") as fh:
                    if canary.encode() in fh.read(1 << 16):
                        report["found"].append(path)
            except OSError:
                pass

for fd in os.listdir("/proc/self/fd"):
    try:
        report["fds"].append((int(fd), os.readlink(f"/proc/self/fd/{fd}")))
    except OSError:
        pass
with open("/proc/self/mountinfo") as fh:
    report["mounts"] = [line.split()[4] for line in fh]
print(json.dumps(report))
"""


@pytest.fixture
def canaries() -> Iterator[str]:
    """Plant uniquely named canary files in host directories; remove them afterwards."""
    tag = f"assay-canary-{uuid.uuid4().hex}"
    planted = []
    for directory in CANARY_DIRS:
        if os.path.isdir(directory):
            path = os.path.join(directory, tag)
            with open(path, "w") as fh:
                fh.write(tag)
            planted.append(path)
    try:
        yield tag
    finally:
        for path in planted:
            os.unlink(path)


def test_host_files_are_invisible(runner, canaries: str, gvisor: bool) -> None:  # type: ignore[no-untyped-def]
    targets = [
        "/root",
        "/home",
        "/etc/shadow",
        "/etc/gshadow",
        "/etc/sudoers",
        "/etc/ssh",
        "/var",
        "/srv",
        "/opt",
        "/sys",
        "/sys/fs/cgroup",
        "/dev/vda",
        "/dev/sda",
        "/dev/mem",
        "/proc/kcore",
        "/proc/1/environ",
        "/proc/1/root/etc/shadow",
        "/proc/1/cwd",
        "/proc/self/root/work/main/README.md",
        "/work/main",
        PROJECT_README,
        "/work/shared",
        SHARED_DESIGN,
        *(os.path.join(d, canaries) for d in CANARY_DIRS),
    ]
    result = runner.sandbox.execute(
        RunRequest(
            "python",
            ["/work/main.py", json.dumps(targets), canaries],
            [("main.py", PROBE.encode(), 0o644)],
            # The probe walks the whole tree; file access through gVisor's gofer is slower.
            limits=Limits(time_s=20 if gvisor else 5),
        )
    )
    assert result.status == "ok", (result.status, result.stderr[-2000:])
    report = json.loads(result.stdout)

    if gvisor:
        # PID 1 is the sandbox's own exec server inside gVisor, which lets any user read
        # its environment: empty but for the HOME runsc gives it and the locale Python sets
        # (no host process, no secret).
        environ = report["read"].pop("/proc/1/environ", "")
        names = {x.split("=", 1)[0] for x in environ.split("\0") if x}
        assert names <= {"HOME", "LC_CTYPE"}, environ
    assert report["read"] == {}, f"host files were readable: {report['read']}"
    if gvisor:
        # gVisor's own sysfs (a few directories, no cgroupfs in it): not the host's /sys.
        assert report["listed"].pop("/sys/fs/cgroup", []) == []
        report["listed"].pop("/sys", None)
    assert report["listed"] == {}, f"host directories were listable: {report['listed']}"
    assert report["found"] == [], f"host canaries visible inside: {report['found']}"

    with open(PROJECT_README) as fh:
        first_line = fh.readline().strip()
    assert first_line not in result.stdout.decode(), "project README content leaked"

    # Only stdio and the fd listing itself: nothing inherited from the trusted side.
    fds = dict(report["fds"])
    assert sorted(fds)[:3] == [0, 1, 2], fds
    extra = {fd: target for fd, target in fds.items() if fd > 2}
    assert all(t.startswith("/proc/") for t in extra.values()), f"inherited fds: {extra}"

    allowed = {"/", "/proc", "/work", "/tmp", "/dev/shm"}
    allowed |= {p for p in defaults.RO_BINDS}
    allowed |= {f"/etc/{e}" for e in defaults.ETC_BINDS}
    allowed |= {f"/dev/{d}" for d in ("null", "zero", "random", "urandom", "full")}
    allowed |= {"/etc/passwd", "/etc/group"}  # the slot's own account files (a tmpfs of its own)
    # What masks host facts in the slot's own procfs (empty files, empty read-only tmpfs).
    allowed |= {f"/proc/{name}" for name in MASKED_PROC_FILES + MASKED_PROC_DIRS}
    if gvisor:
        # gVisor's own sysfs, /dev and devpts, and the directory of this sandbox's fd relay
        # sockets (a bind of its bundle's empty uds/ dir: only this run's sockets appear).
        allowed |= {"/sys", "/dev", "/dev/pts", "/dev/.assay-uds"}
    unexpected = [m for m in report["mounts"] if m not in allowed]
    assert unexpected == [], f"host mounts visible inside: {unexpected}"
