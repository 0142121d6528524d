"""Claim: a sandboxed program cannot use io_uring, a large and bug-prone kernel surface
whose operations also bypass seccomp (requests run in kernel workers, not as syscalls).

The program calls io_uring_setup(2) with a valid parameter block, so that only a policy
refusal, not a malformed request, can make it fail; then io_uring_enter(2) and
io_uring_register(2) on fds 0..9 in case some ring leaked in.
"""

from __future__ import annotations

import json

PROGRAM = r"""
import ctypes, json, os

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR_SETUP, NR_ENTER, NR_REGISTER = 425, 426, 427

class SqOff(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint32) for n in (
        "head", "tail", "ring_mask", "ring_entries", "flags", "dropped", "array", "resv1")] + [
        ("user_addr", ctypes.c_uint64)]

class CqOff(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint32) for n in (
        "head", "tail", "ring_mask", "ring_entries", "overflow", "cqes", "flags", "resv1")] + [
        ("user_addr", ctypes.c_uint64)]

class Params(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint32) for n in (
        "sq_entries", "cq_entries", "flags", "sq_thread_cpu", "sq_thread_idle", "features",
        "wq_fd")] + [("resv", ctypes.c_uint32 * 3), ("sq_off", SqOff), ("cq_off", CqOff)]

out = {}
for entries, flags in ((8, 0), (1, 0), (4, 1 << 1)):  # plain, minimal, IORING_SETUP_SQPOLL
    params = Params()
    params.flags = flags
    ctypes.set_errno(0)
    fd = libc.syscall(NR_SETUP, entries, ctypes.byref(params))
    key = f"setup_{entries}_{flags}"
    if fd >= 0:
        out[key] = ["succeeded", fd, params.features]
        os.close(fd)
    else:
        out[key] = ["failed", ctypes.get_errno()]
for fd in range(10):
    ctypes.set_errno(0)
    res = libc.syscall(NR_ENTER, fd, 0, 0, 0, None, 0)
    out[f"enter_{fd}"] = ["failed", ctypes.get_errno()] if res < 0 else ["succeeded", res]
    ctypes.set_errno(0)
    res = libc.syscall(NR_REGISTER, fd, 0, None, 0)
    out[f"register_{fd}"] = ["failed", ctypes.get_errno()] if res < 0 else ["succeeded", res]
print(json.dumps(out))
"""


def test_program_cannot_use_io_uring(run_py) -> None:
    result = run_py(PROGRAM)
    assert result.status == "ok", (result.status, result.stderr_text)
    report = json.loads(result.stdout)
    assert len(report) == 23
    for name, outcome in report.items():
        assert outcome[0] == "failed", f"{name} succeeded: {outcome}"
    for name in ("setup_8_0", "setup_1_0", "setup_4_2"):
        # EPERM (seccomp) or, if the kernel lacks io_uring, ENOSYS; never EINVAL/EFAULT,
        # which would mean the kernel looked at the request.
        assert report[name][1] in (1, 38), f"{name}: unexpected errno {report[name]}"
