"""Starting the fork server inside a task image instead of on the host's root.

The fork server is the interpreter every Python program is a fork of, so for an image it
must be the image's own ``/usr/bin/python3`` (a 3.9 image runs 3.9), with the image's C
library and standard library, seeing the image as ``/``. A small trampoline, run by the
host's Python, moves into a private mount namespace, bind-mounts the image's root
read-only, adds a procfs of its own and a ``/dev`` of the five harmless device nodes (the
fork server's own needs: its template binds those nodes, and each slot mounts a fresh
procfs; nothing of the host's ``/proc`` or ``/dev`` mounts is there for an image's link to
reach, and the template resolves the image's paths without leaving it: ``rootfs``),
``pivot_root``s into it, detaches the host's tree and execs the image's interpreter with
the fork server's usual command line. From there everything is as on the host: the fork
server builds its read-only template from *its* ``/usr``, ``/lib`` ... (the image's), with
every control of the default tier.

``pivot_root`` rather than ``chroot``: the slots ``pivot_root`` again, which the kernel
refuses under a chroot. Needs root (the host's mount namespace is left untouched).
"""

from __future__ import annotations

import os
import sys

from ..errors import SandboxError

#: Run as ``python -I -c TRAMPOLINE <image rootfs> <interpreter> <its args...>``.
TRAMPOLINE = r"""# assay image root
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def check(rc, what):
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")
def mount(src, dst, fstype, flags, data=None):
    check(libc.mount(src and src.encode(), dst.encode(), fstype and fstype.encode(),
                     ctypes.c_ulong(flags), data and data.encode()), "mount " + dst)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
MS_REC, MS_PRIVATE = 16384, 1 << 18
root, python = sys.argv[1], sys.argv[2]
check(libc.unshare(0x00020000), "unshare")
mount(None, "/", None, MS_REC | MS_PRIVATE)
mount(root, root, None, MS_BIND)
mount(None, root, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
# Its own procfs (not the host's mount with what is mounted under it) and a /dev of the
# five harmless nodes (not the host's disks, consoles, memory).
try:
    mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
except OSError:  # a procfs the kernel will not mount afresh here: the host's, alone
    mount("/proc", root + "/proc", None, MS_BIND)
mount("tmpfs", root + "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,nr_inodes=64,mode=755")
for name in ("null", "zero", "random", "urandom", "full"):
    os.close(os.open(root + "/dev/" + name, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o666))
    mount("/dev/" + name, root + "/dev/" + name, None, MS_BIND)
os.symlink("/proc/self/fd", root + "/dev/fd")
os.chdir(root)
check(libc.syscall(155, b".", b"."), "pivot_root")
check(libc.umount2(b".", 2), "umount")
os.chdir("/")
os.execv(python, [python] + sys.argv[3:])
"""


def wrap(argv: list[str], image_root: str) -> list[str]:
    """The command that runs ``argv`` (``argv[0]`` a path inside the image) with
    ``image_root`` as its root."""
    if os.geteuid() != 0:
        raise SandboxError("running in an image needs root (its root is mounted per fork server)")
    root = os.path.realpath(image_root)
    for d in ("proc", "dev", "tmp", "usr"):
        path = os.path.join(root, d)
        if os.path.islink(path) or not os.path.isdir(path):  # a mount point: never a link
            raise SandboxError(f"image root {image_root!r} has no /{d} directory")
    inner = os.path.join(root, argv[0].lstrip("/"))
    if not os.path.lexists(inner):
        raise SandboxError(f"the image has no {argv[0]} (its sandbox interpreter)")
    return [sys.executable, "-I", "-c", TRAMPOLINE, root, *argv]
