"""Claim: a sandboxed program cannot leave the cgroup that enforces its memory, process and
CPU limits: no cgroup file system is visible or mountable, no cgroup.procs file (or an fd
of one leaked by the trusted side) can be written, and its cgroup membership is the same
per-run cgroup after all the attempts as before.
"""

from __future__ import annotations

import json

PROGRAM = r"""
import ctypes, json, os

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
me = str(os.getpid()).encode()
out = {"attempts": {}}

def read_cgroups():
    with open("/proc/self/cgroup") as fh:
        return fh.read().splitlines()

before = read_cgroups()
out["cgroup_before"] = before

def visible(path):
    try:
        return ["visible", sorted(os.listdir(path))[:20]]
    except OSError as exc:
        return ["failed", exc.errno]

out["attempts"]["list_sys_fs_cgroup"] = visible("/sys/fs/cgroup")
out["attempts"]["list_sys"] = visible("/sys")

candidates = {"/sys/fs/cgroup/cgroup.procs", "/sys/fs/cgroup/unified/cgroup.procs"}
for line in before:
    _, controllers, path = line.split(":", 2)
    for ctrl in (controllers.split(",") if controllers else ["unified", ""]):
        if ctrl.startswith("name="):
            ctrl = ctrl[5:]
        base = os.path.join("/sys/fs/cgroup", ctrl)
        candidates.add(os.path.join(base, "cgroup.procs"))
        parts = path.strip("/").split("/")
        for i in range(len(parts) + 1):
            candidates.add(os.path.join(base, *parts[:i], "cgroup.procs"))
            candidates.add(os.path.join(base, *parts[:i], "tasks"))
for path in sorted(candidates):
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as exc:
        out["attempts"][f"write {path}"] = ["failed", exc.errno]
        continue
    try:
        os.write(fd, me)
        out["attempts"][f"write {path}"] = ["succeeded"]
    except OSError as exc:
        out["attempts"][f"write {path}"] = ["failed", exc.errno]
    finally:
        os.close(fd)

os.makedirs("/tmp/cg", exist_ok=True)
for fstype, opts in ((b"cgroup2", None), (b"cgroup", b"memory"), (b"cgroup", b"pids"),
                     (b"cgroup", b"none,name=assay")):
    ctypes.set_errno(0)
    res = libc.mount(b"cgroup", b"/tmp/cg", fstype, 0, opts)
    key = f"mount {fstype.decode()} {opts}"
    out["attempts"][key] = ["failed", ctypes.get_errno()] if res < 0 else ["succeeded"]
ctypes.set_errno(0)
res = libc.syscall(430, b"cgroup2", 0)  # fsopen
out["attempts"]["fsopen cgroup2"] = ["failed", ctypes.get_errno()] if res < 0 else ["succeeded"]
ctypes.set_errno(0)
res = libc.syscall(272, 0x02000000)  # unshare(CLONE_NEWCGROUP)
out["attempts"]["unshare cgroupns"] = ["failed", ctypes.get_errno()] if res < 0 else ["succeeded"]

# Every open fd the program inherited: none may be a cgroup file (or anything but stdio).
fds = {}
for name in os.listdir("/proc/self/fd"):
    try:
        fds[name] = os.readlink(f"/proc/self/fd/{name}")
    except OSError:
        pass
out["fds"] = fds
out["cgroup_after"] = read_cgroups()
print(json.dumps(out))
"""


def test_program_cannot_leave_its_cgroup(run_py, gvisor: bool) -> None:
    result = run_py(PROGRAM)
    assert result.status == "ok", (result.status, result.stderr_text)
    report = json.loads(result.stdout)
    attempts = report["attempts"]
    # Under gVisor the program sees no cgroup of its own (/proc/self/cgroup is empty, no
    # cgroupfs is mounted; the host cgroup holds the whole sandbox): fewer paths to try.
    assert len(attempts) > (6 if gvisor else 10), attempts
    if gvisor:
        # gVisor's own /sys (a few empty directories, no cgroupfs): nothing of the host's.
        assert attempts.pop("list_sys_fs_cgroup") == ["visible", []]
        attempts.pop("list_sys")
    for name, outcome in attempts.items():
        assert outcome[0] == "failed", f"{name}: {outcome}"
    assert report["cgroup_after"] == report["cgroup_before"], "cgroup membership changed"
    # The program sits at the root of its cgroup namespace, which is rooted at its per-run
    # cgroup, for the limiting controllers (v1), or in the unified hierarchy when the host
    # has no v1 memory/pids hierarchy (v2): a move anywhere else would show as "/.." paths.
    if gvisor:
        assert report["cgroup_before"] == [], report["cgroup_before"]
        return
    lines = [line.split(":", 2) for line in report["cgroup_before"]]
    limiting = [x for x in lines if set(x[1].split(",")) & {"memory", "pids"}]
    if not limiting:
        limiting = [x for x in lines if x[0] == "0" and x[1] == ""]
    assert limiting, report["cgroup_before"]
    for _, controllers, path in limiting:
        assert path == "/", f"{controllers or 'unified'} not in its run's cgroup: {path}"
    extra = {fd: target for fd, target in report["fds"].items() if fd not in ("0", "1", "2")}
    # One extra fd is allowed: the directory listdir opened to list /proc/self/fd.
    assert len(extra) <= 1, f"inherited fds: {extra}"
    for target in extra.values():
        assert "cgroup" not in target, f"cgroup fd leaked into the sandbox: {target}"
