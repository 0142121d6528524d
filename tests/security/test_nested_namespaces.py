"""Claim: a sandboxed program cannot create or join namespaces.

A new user namespace would give the program a full capability set over fresh namespaces
(mount, network...), the starting point of many kernel exploits; joining one of the
sandbox's namespaces is pointless, but joining any namespace at all must still be refused.
The program tries unshare(2) with each namespace flag, clone(2) and clone3(2) with those
flags, setns(2) on every /proc/self/ns entry, and the ``unshare -r`` command.
"""

from __future__ import annotations

import json

PROGRAM = r"""
import ctypes, json, os, subprocess

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR_CLONE, NR_UNSHARE, NR_SETNS, NR_CLONE3 = 56, 272, 308, 435
SIGCHLD = 17
FLAGS = {
    "newns": 0x00020000, "newcgroup": 0x02000000, "newuts": 0x04000000,
    "newipc": 0x08000000, "newuser": 0x10000000, "newpid": 0x20000000,
    "newnet": 0x40000000, "newtime": 0x00000080,
}
out = {}

def result(res):
    return ["failed", ctypes.get_errno()] if res == -1 else ["succeeded", res]

def forked(res):
    # A clone that worked returns 0 in the child: leave at once, report from the parent.
    if res == 0:
        os._exit(0)
    if res > 0:
        os.waitpid(res, 0)
    return res

class CloneArgs(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in (
        "flags", "pidfd", "child_tid", "parent_tid", "exit_signal", "stack", "stack_size",
        "tls", "set_tid", "set_tid_size", "cgroup")]

for name, flag in FLAGS.items():
    ctypes.set_errno(0)
    out[f"unshare_{name}"] = result(libc.syscall(NR_UNSHARE, flag))
    ctypes.set_errno(0)
    out[f"clone_{name}"] = result(forked(libc.syscall(NR_CLONE, flag | SIGCHLD, 0, 0, 0, 0)))
    args = CloneArgs(flags=flag, exit_signal=SIGCHLD)
    ctypes.set_errno(0)
    out[f"clone3_{name}"] = result(forked(libc.syscall(
        NR_CLONE3, ctypes.byref(args), ctypes.sizeof(args))))
ctypes.set_errno(0)
out["unshare_user_and_mount"] = result(libc.syscall(NR_UNSHARE, FLAGS["newuser"] | FLAGS["newns"]))

for entry in sorted(os.listdir("/proc/self/ns")):
    try:
        fd = os.open(f"/proc/self/ns/{entry}", os.O_RDONLY)
    except OSError as exc:
        out[f"setns_{entry}"] = ["failed", exc.errno]
        continue
    ctypes.set_errno(0)
    out[f"setns_{entry}"] = result(libc.syscall(NR_SETNS, fd, 0))
    os.close(fd)
for pid in (1,):
    for entry in ("user", "mnt", "net", "pid"):
        try:
            fd = os.open(f"/proc/{pid}/ns/{entry}", os.O_RDONLY)
        except OSError as exc:
            out[f"setns_init_{entry}"] = ["failed", exc.errno]
            continue
        ctypes.set_errno(0)
        out[f"setns_init_{entry}"] = result(libc.syscall(NR_SETNS, fd, 0))
        os.close(fd)

for argv in (["unshare", "-r", "id", "-u"], ["unshare", "-U", "--map-root-user", "true"],
             ["unshare", "-n", "true"]):
    path = "/usr/bin/unshare"
    key = "cmd_" + "_".join(argv[1:])
    if not os.path.exists(path):
        out[key] = ["failed", "absent"]
        continue
    try:
        p = subprocess.run([path, *argv[1:]], capture_output=True, timeout=10)
    except OSError as exc:  # e.g. no fork left after an unshare(CLONE_NEWPID) that worked
        out[key] = ["failed", "cannot run", exc.errno]
        continue
    if p.returncode == 0:
        out[key] = ["succeeded", p.stdout.decode(errors="replace")]
    else:
        out[key] = ["failed", p.returncode, p.stderr.decode(errors="replace").strip()]

with open("/proc/self/status") as fh:
    out["caps"] = [l for l in fh.read().splitlines() if l.startswith("CapEff")]
print(json.dumps(out))
"""


def test_program_cannot_create_or_join_namespaces(run_py, gvisor: bool) -> None:
    result = run_py(PROGRAM)
    assert result.status == "ok", (result.status, result.stderr_text)
    report = json.loads(result.stdout)
    assert report.pop("caps") == ["CapEff:\t0000000000000000"]
    required = ["unshare_newuser", "clone_newuser", "clone3_newuser", "setns_net", "setns_mnt"]
    if gvisor:
        required.remove("setns_mnt")  # gVisor's /proc/self/ns has net, pid and user only
    for name in required:
        assert name in report, f"{name} was not attempted"
    for name, outcome in report.items():
        assert outcome[0] == "failed", f"{name} succeeded: {outcome}"
