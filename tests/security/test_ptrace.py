"""Claim: a sandboxed program cannot trace or read the memory of another process: not its
sandbox's trusted init (pid 1, root), and not even its own forked child.

ptrace on pid 1 would hand the program the trusted side's memory and file descriptors (and
with them the verdict channel); ptrace on its own child is harmless in itself but is the
door to most ptrace kernel bugs, so it is denied too. The program tries PTRACE_ATTACH,
PTRACE_SEIZE, PTRACE_TRACEME, process_vm_readv/writev, pidfd_getfd, and /proc/1/mem.
Every call must fail, and no byte of the target's memory may be read or written.
"""

from __future__ import annotations

import json

PROGRAM = r"""
import ctypes, errno, json, os, signal, time

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
PTRACE_TRACEME, PTRACE_PEEKDATA, PTRACE_ATTACH, PTRACE_DETACH, PTRACE_SEIZE = 0, 2, 16, 17, 0x4206
NR_PROCESS_VM_READV, NR_PROCESS_VM_WRITEV, NR_PIDFD_GETFD = 310, 311, 438

class IOVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

secret = ctypes.create_string_buffer(b"assay-ptrace-secret", 64)
out = {}

def call(name, fn):
    ctypes.set_errno(0)
    res = fn()
    err = ctypes.get_errno()
    out[name] = ["failed", err] if res == -1 else ["succeeded", res]

r, w = os.pipe()
child = os.fork()
if child == 0:
    os.close(r)
    os.write(w, b"x")
    time.sleep(10)
    os._exit(0)
os.close(w)
os.read(r, 1)

for label, pid in (("init", 1), ("child", child)):
    call(f"attach_{label}", lambda: libc.ptrace(PTRACE_ATTACH, pid, None, None))
    call(f"seize_{label}", lambda: libc.ptrace(PTRACE_SEIZE, pid, None, None))
    # Only meaningful if an attach above got through; must fail either way.
    call(f"peek_{label}", lambda: libc.ptrace(PTRACE_PEEKDATA, pid, ctypes.addressof(secret), None))
    local = ctypes.create_string_buffer(64)
    liov = IOVec(ctypes.cast(local, ctypes.c_void_p), 64)
    riov = IOVec(ctypes.addressof(secret), 64)
    call(f"vm_readv_{label}", lambda: libc.syscall(
        NR_PROCESS_VM_READV, pid, ctypes.byref(liov), 1, ctypes.byref(riov), 1, 0))
    out[f"vm_readv_{label}_bytes"] = local.raw[:19].decode(errors="replace")
    junk = ctypes.create_string_buffer(b"overwritten-by-sandbox", 64)
    wl = IOVec(ctypes.cast(junk, ctypes.c_void_p), 22)
    wr = IOVec(ctypes.addressof(secret), 22)
    call(f"vm_writev_{label}", lambda: libc.syscall(
        NR_PROCESS_VM_WRITEV, pid, ctypes.byref(wl), 1, ctypes.byref(wr), 1, 0))
    try:
        pidfd = os.pidfd_open(pid)
    except OSError as exc:
        out[f"pidfd_open_{label}"] = ["failed", exc.errno]
    else:
        for target_fd in (0, 1, 2, 3, 4, 5):
            call(f"pidfd_getfd_{label}_{target_fd}", lambda: libc.syscall(
                NR_PIDFD_GETFD, pidfd, target_fd, 0))
        os.close(pidfd)
    try:
        with open(f"/proc/{pid}/mem", "rb") as fh:
            fh.seek(ctypes.addressof(secret))
            out[f"proc_mem_{label}"] = ["succeeded", fh.read(19).decode(errors="replace")]
    except OSError as exc:
        out[f"proc_mem_{label}"] = ["failed", exc.errno]

# A child asking to be traced by us: the reverse direction.
r2, w2 = os.pipe()
tracee = os.fork()
if tracee == 0:
    ctypes.set_errno(0)
    res = libc.ptrace(PTRACE_TRACEME, 0, None, None)
    os.write(w2, json.dumps([res, ctypes.get_errno()]).encode())
    os._exit(0)
os.close(w2)
res, err = json.loads(os.read(r2, 100))
out["traceme"] = ["failed", err] if res == -1 else ["succeeded", res]
os.waitpid(tracee, 0)
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
out["secret_intact"] = secret.value == b"assay-ptrace-secret"
print(json.dumps(out))
"""


def test_program_cannot_ptrace_or_read_other_processes(run_py) -> None:
    result = run_py(PROGRAM)
    assert result.status == "ok", (result.status, result.stderr_text)
    report = json.loads(result.stdout)
    assert report.pop("secret_intact") is True
    for label in ("init", "child"):
        leaked = report.pop(f"vm_readv_{label}_bytes")
        assert "assay-ptrace-secret" not in leaked, f"process_vm_readv read {label}'s memory"
    for name in (
        "attach_init",
        "seize_init",
        "attach_child",
        "seize_child",
        "vm_readv_init",
        "vm_readv_child",
        "traceme",
    ):
        assert name in report, f"{name} was not attempted: {report}"
    # /proc/<child>/mem of the program's own same-uid child is not asserted: it is the same
    # access (and the same kernel path) as /proc/self/mem, which no sandbox setting removes,
    # and it crosses no boundary. /proc/1/mem (the trusted init) must stay closed.
    report.pop("proc_mem_child")
    assert report["proc_mem_init"][0] == "failed", report["proc_mem_init"]
    for name, outcome in report.items():
        assert outcome[0] == "failed", f"{name} succeeded: {outcome}"
    # The trace/peek family must be refused outright, not merely find nothing to trace.
    for name in ("attach_init", "seize_init", "attach_child", "seize_child", "traceme"):
        assert report[name][1] == 1, f"{name}: expected EPERM, got {report[name]}"
    for name in ("vm_readv_child", "vm_writev_child"):
        assert report[name][1] == 1, f"{name}: expected EPERM, got {report[name]}"
