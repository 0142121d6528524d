"""The sandbox's seccomp filter, compiled once by libseccomp and loaded raw per run.

libseccomp (present on every Debian system: apt itself depends on it) resolves syscall
numbers per architecture and emits the architecture check, so syscalls made through a
foreign ABI (32-bit ``int 0x80``, x32) kill the process instead of slipping past the list.
The filter is exported as BPF once in the fork server; each run loads those bytes with a
single prctl, which costs microseconds instead of a libseccomp compile.

libseccomp knows only the syscalls of its own release, and a rule naming a syscall it does
not know is skipped; the filter allows what no rule names. So a short hand-written prefix
runs before libseccomp's program and decides by number, whatever the library knows: every
syscall above :data:`MAX_REVIEWED` (the newest one reviewed for this list) fails with ENOSYS,
as on an older kernel, and :data:`DENIED_NUMBERS` fail with EPERM. Syscalls numbered from 424
on have the same number on every architecture, so the table holds for all of them.
"""

from __future__ import annotations

import ctypes
import errno
import os
import socket
import struct

from . import linux

SCMP_ACT_KILL_PROCESS = 0x80000000
SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_FLTATR_ACT_BADARCH = 2
SCMP_FLTATR_CTL_NNP = 3
SCMP_FLTATR_CTL_OPTIMIZE = 8  # libseccomp >= 2.5
#: libseccomp's binary-tree layout: a syscall number is decided in a few comparisons.
SCMP_OPTIMIZE_BINARY_TREE = 2
SCMP_CMP_NE = 1
SCMP_CMP_EQ = 4
SCMP_CMP_GT = 6
SCMP_CMP_MASKED_EQ = 7


def act_errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


#: Every syscall that makes or uses a System V IPC object or a POSIX message queue.
IPC_SYSCALLS = (
    "shmget",
    "shmat",
    "shmdt",
    "shmctl",
    "semget",
    "semop",
    "semtimedop",
    "semctl",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "mq_open",
    "mq_unlink",
    "mq_timedsend",
    "mq_timedreceive",
    "mq_notify",
    "mq_getsetattr",
    "ipc",  # the multiplexer of 32-bit ABIs (skipped where the architecture has none)
)

#: Denied outright with EPERM: kernel attack surface no judged program needs.
DENIED = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "process_madvise",
    "pidfd_getfd",
    "kcmp",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "init_module",
    "finit_module",
    "delete_module",
    "create_module",
    "query_module",
    "open_by_handle_at",
    "name_to_handle_at",
    "userfaultfd",
    "acct",
    "quotactl",
    "quotactl_fd",
    "syslog",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "fanotify_init",
    "lookup_dcookie",
    "nfsservctl",
    "vhangup",
    "iopl",
    "ioperm",
    "uselib",
    "sethostname",
    "setdomainname",
    "landlock_create_ruleset",
    "landlock_add_rule",
    "landlock_restrict_self",
    "seccomp",
    # System V IPC and POSIX message queues: objects that outlive the process that made
    # them. With these refused, a run needs no IPC namespace of its own (one per run costs
    # ~0.25 ms of machine time); without this filter, each run gets one.
    *IPC_SYSCALLS,
)

#: The highest syscall number reviewed for this filter (``mseal``, Linux 6.10). Anything
#: newer is refused with ENOSYS until someone reads what it does and adds it here.
MAX_REVIEWED = 462

#: Refused by number (EPERM), because Debian 12's libseccomp has no name for most of them,
#: or because a judged program has no use for them. Numbers >= 424 are the same on every
#: architecture. io_uring and the new mount API are also refused by name above; the numbers
#: cover a libseccomp too old to know those names.
DENIED_NUMBERS = {
    424: "pidfd_send_signal",
    425: "io_uring_setup",
    426: "io_uring_enter",
    427: "io_uring_register",
    428: "open_tree",
    429: "move_mount",
    430: "fsopen",
    431: "fsconfig",
    432: "fsmount",
    433: "fspick",
    434: "pidfd_open",
    438: "pidfd_getfd",
    440: "process_madvise",
    442: "mount_setattr",
    443: "quotactl_fd",
    444: "landlock_create_ruleset",
    445: "landlock_add_rule",
    446: "landlock_restrict_self",
    447: "memfd_secret",
    448: "process_mrelease",
    450: "set_mempolicy_home_node",
    451: "cachestat",  # page-cache residency of shared files: a side channel between runs
    457: "statmount",
    458: "listmount",
    459: "lsm_get_self_attr",
    460: "lsm_set_self_attr",
    461: "lsm_list_modules",
    462: "mseal",
}

#: Refused by name (EPERM), older syscalls a judged program does not need: NUMA placement
#: (another run's memory policy), the x86 LDT, obsolete file-system queries, Linux AIO,
#: whose machine-wide quota (``fs.aio-nr``) one run could fill for everyone, root included,
#: and inotify watches.
DENIED_LEGACY = (
    "mbind",
    "set_mempolicy",
    "get_mempolicy",
    "migrate_pages",
    "move_pages",
    "modify_ldt",
    "sysfs",
    "ustat",
    "io_setup",
    "io_submit",
    "io_destroy",
    "io_cancel",
    "io_getevents",
    "io_pgetevents",
    # Every run sees the same read-only /usr: a watch there reports which files concurrent
    # runs open (a side channel between runs). The seccomp filter cannot read the path, so
    # every watch is refused; inotify_init succeeds and reports nothing.
    "inotify_add_watch",
)

#: Namespace-creating flags refused on clone (clone3 gets ENOSYS so libc falls back to clone).
NS_FLAGS = (
    linux.CLONE_NEWNS,
    linux.CLONE_NEWCGROUP,
    linux.CLONE_NEWUTS,
    linux.CLONE_NEWIPC,
    linux.CLONE_NEWUSER,
    linux.CLONE_NEWPID,
    linux.CLONE_NEWNET,
    linux.CLONE_NEWTIME,
)
TIOCSTI = 0x5412


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


#: One BPF instruction (``struct sock_filter``): code, jump if true, jump if false, operand.
_INSN = struct.Struct("=HBBI")


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class SeccompUnavailable(RuntimeError):
    pass


class Filter:
    """A compiled filter, ready to be loaded into the calling thread with :meth:`load`."""

    def __init__(self, bpf: bytes) -> None:
        n = len(bpf) // _INSN.size
        self.bpf = bpf
        self._buffer = ctypes.create_string_buffer(bpf, len(bpf))  # kept: the prog points in
        self._prog = _SockFprog(n, ctypes.addressof(self._buffer))
        self.instructions = n

    def load(self) -> None:
        linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
        res = linux.libc.prctl(
            ctypes.c_int(linux.PR_SET_SECCOMP),
            ctypes.c_ulong(linux.SECCOMP_MODE_FILTER),
            ctypes.byref(self._prog),
            ctypes.c_ulong(0),
            ctypes.c_ulong(0),
        )
        if res != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"seccomp load: {os.strerror(err)}")


def build(inet: bool = False) -> Filter:
    """Compile the sandbox filter with libseccomp; raises SeccompUnavailable without it.

    ``inet``: the filter of runs with loopback networking, which also allows IPv4 and IPv6
    sockets (their network namespace has ``lo`` and nothing else); every other family
    (netlink, packet, ...) stays refused."""
    try:
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError:
        # Not under its usual soname: ask the toolchain (this imports subprocess, tempfile
        # and more into the fork server, whose heap every run copies: only as a fallback).
        from ctypes.util import find_library

        name = find_library("seccomp")
        try:
            lib = ctypes.CDLL(name or "libseccomp.so.2", use_errno=True)
        except OSError as exc:
            raise SeccompUnavailable(f"libseccomp not found ({exc})") from exc
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    ]
    lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]

    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not ctx:
        raise SeccompUnavailable("seccomp_init failed")
    try:
        _rc(lib.seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS), "badarch")
        _rc(lib.seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1), "nnp")
        # Loading the filter makes the kernel evaluate it for every syscall number of every
        # architecture (seccomp's action cache): with a linear list of rules that walk cost
        # ~0.1 ms per run, in every run. An older libseccomp without the attribute keeps its
        # linear layout: the same decisions, found more slowly.
        lib.seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, SCMP_OPTIMIZE_BINARY_TREE)

        def rule(action: int, name: str, *cmps: tuple[int, int, int, int]) -> None:
            nr = lib.seccomp_syscall_resolve_name(name.encode())
            if nr < 0:  # not on this architecture (e.g. create_module on new kernels)
                return
            arr = (_ArgCmp * max(1, len(cmps)))(*[_ArgCmp(*c) for c in cmps])
            _rc(lib.seccomp_rule_add_array(ctx, action, nr, len(cmps), arr), f"rule {name}")

        for name in DENIED + DENIED_LEGACY:
            rule(act_errno(errno.EPERM), name)
        for flag in NS_FLAGS:
            rule(act_errno(errno.EPERM), "clone", (0, SCMP_CMP_MASKED_EQ, flag, flag))
        rule(act_errno(errno.ENOSYS), "clone3")
        if inet:
            # libseccomp takes one comparison per argument and rule; rules of one action
            # add up: every family but AF_UNIX, AF_INET and AF_INET6 (10) is refused.
            allowed = (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6)
            for family in range(socket.AF_INET6):
                if family not in allowed:
                    rule(act_errno(errno.EAFNOSUPPORT), "socket", (0, SCMP_CMP_EQ, family, 0))
            rule(act_errno(errno.EAFNOSUPPORT), "socket", (0, SCMP_CMP_GT, socket.AF_INET6, 0))
        else:
            rule(act_errno(errno.EAFNOSUPPORT), "socket", (0, SCMP_CMP_NE, socket.AF_UNIX, 0))
        # The kernel reads ioctl's command as 32 bits: a plain comparison of the 64-bit
        # argument let TIOCSTI through with any high word set.
        rule(act_errno(errno.EPERM), "ioctl", (1, SCMP_CMP_MASKED_EQ, 0xFFFFFFFF, TIOCSTI))
        # personality() may only be queried: flags like ADDR_NO_RANDOMIZE weaken exploits' odds.
        rule(act_errno(errno.EPERM), "personality", (0, SCMP_CMP_NE, 0xFFFFFFFF, 0))

        rfd, wfd = os.pipe()
        try:
            _rc(lib.seccomp_export_bpf(ctx, wfd), "export")
            os.close(wfd)
            wfd = -1
            chunks = []
            while True:
                chunk = os.read(rfd, 65536)
                if not chunk:
                    break
                chunks.append(chunk)
        finally:
            os.close(rfd)
            if wfd >= 0:
                os.close(wfd)
        lib.seccomp_arch_native.restype = ctypes.c_uint32
        return Filter(prefix(lib.seccomp_arch_native()) + b"".join(chunks))
    finally:
        lib.seccomp_release(ctx)


# Classic BPF opcodes (linux/filter.h) and seccomp return values.
BPF_LD_W_ABS = 0x20
BPF_JEQ_K = 0x15
BPF_JGT_K = 0x25
BPF_JGE_K = 0x35
BPF_JA = 0x05
BPF_RET_K = 0x06
SECCOMP_RET_ERRNO = 0x00050000
#: The x32 ABI's syscall numbers carry this bit; libseccomp's program decides those.
X32_SYSCALL_BIT = 0x40000000


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return _INSN.pack(code, jt, jf, k & 0xFFFFFFFF)


def prefix(arch: int) -> bytes:
    """The by-number part of the filter, run before libseccomp's program.

    For the native architecture: numbers above :data:`MAX_REVIEWED` get ENOSYS, those of
    :data:`DENIED_NUMBERS` EPERM; everything else (and every foreign architecture or x32
    number, which libseccomp's program kills) falls through to libseccomp's program. Numbers
    below the lowest denied one skip the list in one comparison: the kernel evaluates the
    filter for every number when it is loaded, once per run.
    """
    denied = sorted(DENIED_NUMBERS)
    n = len(denied)
    # Layout: 0 ld arch; 1 jeq arch; 2 ld nr; 3 jge x32; 4 jgt max; 5 jge lowest denied;
    # 6.. jeq denied; 6+n ja end; 7+n ret ENOSYS; 8+n ret EPERM; 9+n = libseccomp's first.
    end, enosys, eperm = 9 + n, 7 + n, 8 + n
    out = [
        _insn(BPF_LD_W_ABS, 0, 0, 4),
        _insn(BPF_JEQ_K, 0, end - 2, arch),
        _insn(BPF_LD_W_ABS, 0, 0, 0),
        _insn(BPF_JGE_K, end - 4, 0, X32_SYSCALL_BIT),
        _insn(BPF_JGT_K, enosys - 5, 0, MAX_REVIEWED),
        _insn(BPF_JGE_K, 0, end - 6, denied[0]),
    ]
    for i, nr in enumerate(denied):
        at = 6 + i
        out.append(_insn(BPF_JEQ_K, eperm - (at + 1), 0, nr))
    out.append(_insn(BPF_JA, 0, 0, end - (7 + n)))
    out.append(_insn(BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS))
    out.append(_insn(BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.EPERM))
    return b"".join(out)


def _rc(res: int, what: str) -> None:
    if res < 0:
        raise SeccompUnavailable(f"libseccomp {what} failed: {os.strerror(-res)}")
