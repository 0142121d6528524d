"""Claim: a sandboxed program cannot load or unload kernel modules, load a new kernel,
reboot the machine or add swap: init_module, finit_module, delete_module, kexec_load,
kexec_file_load, reboot, swapon and swapoff all fail with EPERM.

Every call is shaped to be harmless even if the policy were gone (a garbage module image,
a module name that does not exist, an invalid kexec architecture, a wrong reboot magic, a
file with no swap signature), while the kernel still checks privileges first: EPERM means
refused by policy or capability; any other error (EINVAL, ENOEXEC, ENOENT...) would mean
the privilege check was passed. ENOSYS (the kernel lacks the feature) is also acceptable.
"""

from __future__ import annotations

import errno
import json

PROGRAM = r"""
import ctypes, json, os

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {"init_module": 175, "delete_module": 176, "finit_module": 313, "kexec_load": 246,
      "kexec_file_load": 320, "reboot": 169, "swapon": 167, "swapoff": 168}
out = {}

def call(name, *args):
    ctypes.set_errno(0)
    res = libc.syscall(NR[name.split(":")[0]], *args)
    out[name] = ["failed", ctypes.get_errno()] if res < 0 else ["succeeded", res]

image = ctypes.create_string_buffer(b"\x7fELF-not-really-a-module" + b"\0" * 64)
call("init_module", image, ctypes.sizeof(image), b"")
with open("/tmp/fake.ko", "wb") as fh:
    fh.write(image.raw)
fd = os.open("/tmp/fake.ko", os.O_RDONLY)
call("finit_module", fd, b"", 0)
os.close(fd)
call("delete_module", b"assay_no_such_module", os.O_NONBLOCK)
call("kexec_load", 0, 0, None, 0xDEAD0000)  # invalid architecture in the flags
call("kexec_file_load", -1, -1, 0, b"", 0)
LINUX_REBOOT_MAGIC1, BAD_MAGIC2, CMD_CAD_OFF = 0xFEE1DEAD, 0x0BADBEEF, 0
call("reboot", LINUX_REBOOT_MAGIC1, BAD_MAGIC2, CMD_CAD_OFF, None)
with open("/tmp/swapfile", "wb") as fh:
    fh.write(b"\0" * 65536)
os.chmod("/tmp/swapfile", 0o600)
call("swapon", b"/tmp/swapfile", 0)
call("swapoff", b"/tmp/swapfile")
call("swapoff:host", b"/swapfile")
print(json.dumps(out))
"""


def test_program_cannot_touch_modules_kexec_reboot_or_swap(run_py) -> None:
    result = run_py(PROGRAM)
    assert result.status == "ok", (result.status, result.stderr_text)
    report = json.loads(result.stdout)
    assert len(report) == 9
    for name, outcome in report.items():
        assert outcome[0] == "failed", f"{name} succeeded: {outcome}"
        assert outcome[1] in (errno.EPERM, errno.ENOSYS), (
            f"{name} got past the privilege check (errno {outcome[1]})"
        )
