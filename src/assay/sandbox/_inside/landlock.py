"""Landlock (defence in depth beneath the mount namespace): file, TCP and scope rules.

The mount namespace already hides the host; Landlock additionally pins what the program can
do on the paths it does see, refuses TCP bind/connect (ABI 4+), and scopes abstract unix
sockets and signals to the sandbox (ABI 6+).
"""

from __future__ import annotations

import ctypes
import os

from . import linux

SYS_CREATE = 444
SYS_ADD_RULE = 445
SYS_RESTRICT = 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13
TRUNCATE = 1 << 14
IOCTL_DEV = 1 << 15

NET_BIND_TCP = 1
NET_CONNECT_TCP = 2
SCOPE_ABSTRACT_UNIX_SOCKET = 1
SCOPE_SIGNAL = 2


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi_version() -> int:
    """Landlock ABI of this kernel, 0 when Landlock is absent or disabled."""
    res = linux.libc.syscall(
        ctypes.c_long(SYS_CREATE), None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION)
    )
    return int(res) if res > 0 else 0


#: The file-system rights of Landlock ABI 1 (execute ... make_sym).
ABI1_FS_RIGHTS = (
    EXECUTE
    | WRITE_FILE
    | READ_FILE
    | READ_DIR
    | REMOVE_DIR
    | REMOVE_FILE
    | MAKE_CHAR
    | MAKE_DIR
    | MAKE_REG
    | MAKE_SOCK
    | MAKE_FIFO
    | MAKE_BLOCK
    | MAKE_SYM
)


def _fs_rights(abi: int) -> int:
    rights = ABI1_FS_RIGHTS
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


#: A ruleset's plan: landlock_create_ruleset's attributes (b"" without Landlock) and its
#: rules, (path, access granted if it is a directory, access granted otherwise).
Plan = tuple[bytes, list[tuple[str, int, int]]]


def plan_ruleset(
    abi: int,
    read_paths: list[str],
    write_paths: list[str],
    device_paths: list[str],
    net: bool = False,
) -> Plan:
    """A ruleset's policy, in one place, for :func:`create_ruleset` and for the slot's C
    reset (launcher.c's ``assay_reset``).

    Rules attach to inodes, and Landlock's path walk skips the directories that mounts
    cover ("hidden mount points"): a rule on the template's ``work`` directory does not
    reach a tmpfs bound over it (tried: every write to ``/work`` is then refused). So the
    slot's init builds a ruleset for each run's fresh tmpfs (slot.Slot._reset).

    ``net``: the ruleset of runs with loopback networking, which leaves TCP bind and
    connect alone (Landlock names ports, not addresses; the run's network namespace, with
    ``lo`` only, is what keeps it from everything outside).
    """
    if abi <= 0:
        return b"", []
    handled = _fs_rights(abi)
    attr = _RulesetAttr(handled, 0, 0)
    size = 8
    if abi >= 4:
        attr.handled_access_net = 0 if net else NET_BIND_TCP | NET_CONNECT_TCP
        size = 16
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        size = 24
    read = EXECUTE | READ_FILE | READ_DIR
    file_only = EXECUTE | READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV
    rules = []
    for paths, access in ((read_paths, read), (write_paths, handled), (device_paths, file_only)):
        for path in paths:
            allowed = access & handled
            rules.append((path, allowed, allowed & file_only))
    return ctypes.string_at(ctypes.addressof(attr), size), rules


def create_ruleset(plan: Plan) -> int:
    """Create the ruleset ``plan`` describes (:func:`plan_ruleset`), naming its paths as
    they are now; returns its fd, or -1 for the plan of no Landlock."""
    attr, rules = plan
    if not attr:
        return -1
    fd = int(
        linux.libc.syscall(
            ctypes.c_long(SYS_CREATE), attr, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0)
        )
    )
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"landlock_create_ruleset: {os.strerror(err)}")
    for path, on_dir, on_file in rules:
        pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        try:
            rule = _PathBeneath(on_dir if os.path.isdir(path) else on_file, pfd)
            res = linux.libc.syscall(
                ctypes.c_long(SYS_ADD_RULE),
                ctypes.c_int(fd),
                ctypes.c_int(RULE_PATH_BENEATH),
                ctypes.byref(rule),
                ctypes.c_uint32(0),
            )
            if res < 0:
                err = ctypes.get_errno()
                raise OSError(err, f"landlock_add_rule {path}: {os.strerror(err)}")
        finally:
            os.close(pfd)
    return fd


def restrict_self(ruleset_fd: int) -> None:
    """Enforce a prebuilt ruleset on the calling process (requires no_new_privs)."""
    res = linux.libc.syscall(
        ctypes.c_long(SYS_RESTRICT), ctypes.c_int(ruleset_fd), ctypes.c_uint32(0)
    )
    if res < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"landlock_restrict_self: {os.strerror(err)}")
