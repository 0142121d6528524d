"""Thin ctypes wrappers for the Linux calls Python 3.11's os module lacks."""

from __future__ import annotations

import ctypes
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWTIME = 0x00000080

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
CAP_VERSION_3 = 0x20080522
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_RAISE = 2
CAP_SETGID = 6
CAP_SETUID = 7
CAP_SYS_ADMIN = 21
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

_MACHINE = os.uname().machine
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(_MACHINE)
SYS_OPENAT2 = 437
SYS_MOUNT_SETATTR = 442

RESOLVE_NO_XDEV = 0x01
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
RESOLVE_IN_ROOT = 0x10


class OSCallError(OSError):
    pass


def _check(res: int, what: str) -> int:
    if res < 0:
        err = ctypes.get_errno()
        raise OSCallError(err, f"{what}: {os.strerror(err)}")
    return res


def unshare(flags: int) -> None:
    _check(libc.unshare(ctypes.c_int(flags)), "unshare")


SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1


def set_link_up(name: str, up: bool) -> None:
    """Bring network interface ``name`` of this network namespace up or down (the
    ``ifreq`` is packed by hand: ``struct`` may not be importable after pivot_root)."""
    import fcntl
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        head = name.encode().ljust(16, b"\0")
        got = fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, head + bytes(24))
        flags = int.from_bytes(got[16:18], sys.byteorder)
        flags = flags | IFF_UP if up else flags & ~IFF_UP
        fcntl.ioctl(
            sock.fileno(), SIOCSIFFLAGS, head + flags.to_bytes(2, sys.byteorder) + bytes(22)
        )


def setns(fd: int, nstype: int) -> None:
    _check(libc.setns(ctypes.c_int(fd), ctypes.c_int(nstype)), "setns")


def mount(
    src: str | None, target: str, fstype: str | None, flags: int, data: str | None = None
) -> None:
    res = libc.mount(
        src.encode() if src else None,
        target.encode(),
        fstype.encode() if fstype else None,
        ctypes.c_ulong(flags),
        data.encode() if data else None,
    )
    _check(res, f"mount {src} -> {target}")


def umount2(target: str, flags: int) -> None:
    _check(libc.umount2(target.encode(), ctypes.c_int(flags)), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    if _PIVOT_ROOT is None:
        raise OSCallError(0, f"pivot_root: unsupported machine {_MACHINE}")
    res = libc.syscall(ctypes.c_long(_PIVOT_ROOT), new_root.encode(), put_old.encode())
    _check(res, "pivot_root")


def sethostname(name: str) -> None:
    raw = name.encode()
    _check(libc.sethostname(raw, ctypes.c_size_t(len(raw))), "sethostname")


def prctl(option: int, arg2: int = 0, arg3: int = 0, arg4: int = 0, arg5: int = 0) -> int:
    return _check(
        libc.prctl(
            ctypes.c_int(option),
            ctypes.c_ulong(arg2),
            ctypes.c_ulong(arg3),
            ctypes.c_ulong(arg4),
            ctypes.c_ulong(arg5),
        ),
        f"prctl({option})",
    )


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def open_beneath(dirfd: int, path: str, flags: int) -> int:
    """openat2 confined beneath ``dirfd`` with no symlinks at all: safe on hostile trees."""
    return _openat2(
        dirfd, path, flags, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
    )


def open_in_root(dirfd: int, path: str, flags: int) -> int:
    """openat2 as if ``dirfd`` were ``/`` (chroot-like: an absolute link or ``..`` stays
    in it), never through a magic link (``/proc/<pid>/root``) nor into another mount (what
    the caller mounted on the tree's ``/proc`` or ``/dev``): a hostile tree's links then
    resolve within its own files or not at all."""
    return _openat2(dirfd, path, flags, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)


def _openat2(dirfd: int, path: str, flags: int, resolve: int) -> int:
    how = _OpenHow(flags | os.O_CLOEXEC, 0, resolve)
    res = libc.syscall(
        ctypes.c_long(SYS_OPENAT2),
        ctypes.c_int(dirfd),
        path.encode(),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    return _check(res, f"openat2 {path}")


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NOSUID = 0x2
MOUNT_ATTR_NODEV = 0x4
AT_RECURSIVE = 0x8000
AT_FDCWD = -100


def make_readonly(path: str) -> None:
    """Make a bind mount and everything beneath it read-only, nosuid and nodev."""
    attr = _MountAttr(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0, 0, 0)
    res = libc.syscall(
        ctypes.c_long(SYS_MOUNT_SETATTR),
        ctypes.c_int(AT_FDCWD),
        path.encode(),
        ctypes.c_uint(AT_RECURSIVE),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
    )
    if res < 0:
        # Older kernels: non-recursive remount (submounts below are rare in /usr).
        mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def keep_caps_across_exec(caps: tuple[int, ...]) -> None:
    """Let an exec of this process (the slot's launcher) keep ``caps``, what its arming needs.

    Across an exec, root gets only its inheritable capabilities once the bounding set is
    empty, and a non-root user-namespace owner only its ambient ones; so those two sets
    get exactly these (namespaces, uid and gid changes), before the bounding set is
    emptied. Python program processes and the launcher clear every set with capset (which
    clears the ambient set too) before any untrusted byte runs.
    """
    hdr = CapHeader(CAP_VERSION_3, 0)
    data = (CapData * 2)()
    if libc.capget(ctypes.byref(hdr), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    for cap in caps:
        data[cap // 32].inheritable |= 1 << (cap % 32)
    if libc.capset(ctypes.byref(hdr), data) != 0:
        raise OSError(ctypes.get_errno(), "capset (inheritable)")
    for cap in caps:
        if libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0):
            raise OSError(ctypes.get_errno(), "raise ambient capability")
