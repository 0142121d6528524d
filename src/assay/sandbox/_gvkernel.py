"""The system calls the gVisor exec server makes that Python's ``os`` lacks (through ctypes).

Never imported on the host: shipped with ``_gvserver`` into the container, where it runs on
the image's interpreter (Python 3.9+, stdlib only). Every call here is served by gVisor's
kernel, not the host's: mounting each run's tmpfs, and confining each program as the
default tier does (no capabilities left in its bounding set, its own IPC namespace, no new
privileges, the default tier's seccomp filter, readable ``/proc/self``).
"""

from __future__ import annotations

import base64
import ctypes
import os

UID = 65534
WORK = "/work"
CLONE_NEWIPC = 0x08000000
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_MODE_FILTER = 2
MS_NOSUID, MS_NODEV, MS_BIND, MNT_DETACH = 2, 4, 4096, 2


#: The server's Kernel, for the forked program to confine itself with.
kernel: Kernel | None = None


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class Kernel:
    """The C library's mount, umount2, unshare and prctl, checked."""

    def __init__(self, seccomp_b64: str, seccomp_net_b64: str = "") -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self._mount = libc.mount
        self._mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
        self._umount2 = libc.umount2
        self._umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
        self._unshare = libc.unshare
        self._unshare.argtypes = [ctypes.c_int]
        self._prctl = libc.prctl
        self._prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
        self._filters, self._progs = [], []
        for b64 in (seccomp_b64, seccomp_net_b64 or seccomp_b64):
            bpf = base64.b64decode(b64)
            self._filters.append(ctypes.create_string_buffer(bpf, len(bpf)))
            self._progs.append(_SockFprog(len(bpf) // 8, ctypes.addressof(self._filters[-1])))
        self.seccomp = bool(seccomp_b64)

    def _check(self, ret: int, what: str) -> None:
        if ret != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")

    def mount(self, source: str, target: str, fstype: str | None, flags: int, opts: str) -> None:
        data = opts.encode() if opts else None
        ret = self._mount(source.encode(), target.encode(), fstype and fstype.encode(), flags, data)
        self._check(ret, f"mount {target}")

    def umount(self, target: str) -> None:
        self._check(self._umount2(target.encode(), MNT_DETACH), f"umount {target}")

    def prctl(self, option: int, arg: int = 0) -> int:
        return int(self._prctl(option, arg, 0, 0, 0))

    def confine_root(self) -> None:
        """In the forked program, still root: a fresh IPC namespace (no SysV or POSIX queue,
        semaphore or segment of an earlier run), and an empty capability bounding set."""
        self._check(self._unshare(CLONE_NEWIPC), "unshare")
        for cap in range(64):
            if self.prctl(PR_CAPBSET_DROP, cap) != 0:
                if ctypes.get_errno() == 22:  # EINVAL: past the last capability
                    break
                self._check(-1, f"drop capability {cap}")

    def confine_user(self, net: bool = False) -> None:
        """In the forked program, now the sandbox user: no new privileges, the default
        tier's seccomp filter (``net``: the one of loopback runs, which allows IP sockets),
        and its own /proc files readable by itself again (a change of uid made it
        non-dumpable)."""
        self._check(self.prctl(PR_SET_NO_NEW_PRIVS, 1), "no_new_privs")
        if self.seccomp:
            prog = self._progs[1 if net else 0]
            ret = self._prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0)
            self._check(ret, "seccomp")
        self._check(self.prctl(PR_SET_DUMPABLE, 1), "dumpable")


class Writable:
    """Each run's /work, /tmp and /dev/shm: one fresh tmpfs of the run's ``disk_mb`` (as in
    the default tier: the three share the run's disk budget, and a write past it fails with
    ENOSPC), detached after the run, so nothing of one run is seen by the next."""

    RW = "/dev/.assay-rw"
    DIRS = ((WORK, "work", 0o755), ("/tmp", "tmp", 0o1777), ("/dev/shm", "shm", 0o1777))

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.mounted = False

    def fresh(self, disk_mb: int) -> None:
        self.drop()
        os.makedirs(self.RW, exist_ok=True)
        self.kernel.mount("tmpfs", self.RW, "tmpfs", MS_NOSUID | MS_NODEV, f"size={disk_mb}m")
        try:
            for target, name, mode in self.DIRS:
                path = f"{self.RW}/{name}"
                os.mkdir(path)
                os.chmod(path, mode)
                if target == WORK:
                    os.chown(path, UID, UID)
                self.kernel.mount(path, target, None, MS_BIND, "")
                self.mounted = True
        finally:
            self.kernel.umount(self.RW)

    def drop(self) -> None:
        """Detach the run's tmpfs: its content goes with the last reference."""
        if self.mounted:
            for target, _name, _mode in self.DIRS:
                try:
                    self.kernel.umount(target)
                except OSError:
                    pass  # never mounted (a run that failed half-way)
            self.mounted = False
