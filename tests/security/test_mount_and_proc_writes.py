"""Claim: a sandboxed program cannot change its file-system view or the kernel's settings:
mount, umount2, pivot_root, chroot and the new mount API (fsopen, open_tree, move_mount)
all fail, and nothing under /proc/sys or /proc/sysrq-trigger can be opened for writing.

Writing is never actually done: opening for writing is the privilege check, and a write to
the host's /proc/sys (core_pattern!) or sysrq-trigger could damage the machine. The files
tried are also read first, to tell "exists but refused" from "absent".
"""

from __future__ import annotations

import json

PROGRAM = r"""
import ctypes, json, os

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR_OPEN_TREE, NR_MOVE_MOUNT, NR_FSOPEN, NR_FSMOUNT, NR_MOUNT_SETATTR = 428, 429, 430, 432, 442
MS_BIND, MS_REMOUNT, MS_RDONLY, MNT_DETACH = 4096, 32, 1, 2
out = {}

def call(name, fn):
    ctypes.set_errno(0)
    res = fn()
    out[name] = ["failed", ctypes.get_errno()] if res < 0 else ["succeeded", res]

os.makedirs("/tmp/mnt", exist_ok=True)
os.makedirs("/tmp/newroot/old", exist_ok=True)
call("mount_tmpfs", lambda: libc.mount(b"none", b"/tmp/mnt", b"tmpfs", 0, None))
call("mount_proc", lambda: libc.mount(b"proc", b"/tmp/mnt", b"proc", 0, None))
call("mount_bind_root", lambda: libc.mount(b"/", b"/tmp/mnt", None, MS_BIND, None))
call("remount_usr_rw", lambda: libc.mount(None, b"/usr", None, MS_REMOUNT | MS_BIND, None))
call("remount_root_rw", lambda: libc.mount(None, b"/", None, MS_REMOUNT, None))
call("umount_proc", lambda: libc.umount2(b"/proc", MNT_DETACH))
call("umount_usr", lambda: libc.umount2(b"/usr", MNT_DETACH))
call("umount_root", lambda: libc.umount2(b"/", MNT_DETACH))
call("pivot_root", lambda: libc.syscall(155, b"/tmp/newroot", b"/tmp/newroot/old"))
call("chroot_tmp", lambda: libc.chroot(b"/tmp"))
call("chroot_root", lambda: libc.chroot(b"/"))
call("fsopen_tmpfs", lambda: libc.syscall(NR_FSOPEN, b"tmpfs", 0))
call("fsopen_proc", lambda: libc.syscall(NR_FSOPEN, b"proc", 0))
call("open_tree_clone", lambda: libc.syscall(NR_OPEN_TREE, -100, b"/usr", 1))  # OPEN_TREE_CLONE
call("move_mount", lambda: libc.syscall(NR_MOVE_MOUNT, -100, b"/tmp", -100, b"/tmp/mnt", 0))
call("mount_setattr", lambda: libc.syscall(NR_MOUNT_SETATTR, -100, b"/usr", 0, None, 0))

writable_targets = [
    "/proc/sysrq-trigger",
    "/proc/sys/kernel/core_pattern",
    "/proc/sys/kernel/hostname",
    "/proc/sys/kernel/modprobe",
    "/proc/sys/kernel/panic",
    "/proc/sys/vm/drop_caches",
    "/proc/sys/net/ipv4/ip_forward",
    "/proc/sys/fs/binfmt_misc/register",
    "/proc/self/uid_map",
    "/proc/self/setgroups",
    "/proc/1/oom_score_adj",
]
probe = {}
for path in writable_targets:
    try:
        with open(path, "rb") as fh:
            readable = True
    except OSError:
        readable = False
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as exc:
        probe[path] = ["failed", exc.errno, readable]
    else:
        try:  # what an escape would write (a mapping, a setting)
            os.write(fd, b"0 0 1\n")
            probe[path] = ["succeeded", readable, "written"]
        except OSError as exc:
            probe[path] = ["succeeded", readable, exc.errno]
        os.close(fd)
# Every other /proc/sys file: none may open for writing.
opened = []
for dirpath, _, files in os.walk("/proc/sys"):
    for name in files:
        path = os.path.join(dirpath, name)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            continue
        os.close(fd)
        opened.append(path)
out["writable_proc_sys"] = opened
out["probe"] = probe
with open("/proc/self/mountinfo") as fh:
    out["mounts_after"] = len(fh.read().splitlines())
print(json.dumps(out))
"""


def test_program_cannot_mount_or_write_kernel_settings(run_py, gvisor: bool) -> None:
    result = run_py(PROGRAM, time_s=5)
    assert result.status == "ok", (result.status, result.stderr_text)
    report = json.loads(result.stdout)
    probe = report.pop("probe")
    writable = report.pop("writable_proc_sys")
    report.pop("mounts_after")
    assert len(report) == 16
    for name, outcome in report.items():
        assert outcome[0] == "failed", f"{name} succeeded: {outcome}"
        assert outcome[1] == 1, f"{name}: expected EPERM, got {outcome}"
    assert writable == [], f"/proc/sys files open for writing: {writable}"
    for path, outcome in probe.items():
        if gvisor and path.startswith("/proc/self/") and outcome[0] == "succeeded":
            # gVisor opens the program's own uid_map/setgroups for writing, as Linux does
            # for their owner; what matters is that nothing can be written to them.
            assert outcome[2] != "written", f"{path} was written"
            continue
        assert outcome[0] == "failed", f"{path} opened for writing"
    # (gVisor's /proc/sys has a few files of its own, core_pattern not among them)
    seen = [p for p, o in probe.items() if p.startswith("/proc/sys/") and o[-1] is True]
    assert seen if gvisor else probe["/proc/sys/kernel/core_pattern"][2] is True, (
        "the /proc/sys walk saw nothing"
    )
