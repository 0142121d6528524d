"""Claim: the seccomp filter refuses what it has not reviewed, whatever libseccomp knows.

Attack (red-team finding 5): Debian 12's libseccomp has no entry for syscalls newer than its
table, and the filter allowed by default, so ``open_tree_attr`` (the new mount API),
``listmount``, ``statmount``, ``mseal``, ``memfd_secret``, ``pidfd_open`` ... reached the
kernel, and ``io_setup`` let one run fill the machine-wide AIO quota (``fs.aio-nr``) so that
root on the host got EAGAIN. Now every number above the highest reviewed one fails with
ENOSYS (as on an older kernel), the listed ones with EPERM, and a future number is refused.

Two views: the filter's BPF evaluated here by a small classic-BPF interpreter (every number,
including ones no kernel has yet), and the real calls made from inside a sandbox.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import socket
import struct

import pytest

from assay.sandbox._inside import seccomp

RET_ACTION = 0xFFFF0000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
AUDIT_ARCH_X86_64 = 0xC000003E


def _evaluate(bpf: bytes, nr: int, arch: int, args: tuple[int, ...] = ()) -> int:
    """Run a classic-BPF seccomp program on one ``seccomp_data``; returns its action."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, *(list(args) + [0] * (6 - len(args))))
    prog = [struct.unpack_from("<HBBI", bpf, i) for i in range(0, len(bpf), 8)]
    a = x = 0
    mem = [0] * 16
    pc = 0
    for _ in range(100_000):
        code, jt, jf, k = prog[pc]
        pc += 1
        cls = code & 0x07
        if cls == 0x00:  # LD
            if code & 0xE0 == 0x20:  # ABS
                a = struct.unpack_from("<I", data, k)[0]
            elif code & 0xE0 == 0x00:  # IMM
                a = k
            elif code & 0xE0 == 0x60:  # MEM
                a = mem[k]
        elif cls == 0x01:  # LDX
            x = mem[k] if code & 0xE0 == 0x60 else k
        elif cls == 0x02:  # ST
            mem[k] = a
        elif cls == 0x03:  # STX
            mem[k] = x
        elif cls == 0x04:  # ALU
            src = x if code & 0x08 else k
            op = code & 0xF0
            a = {
                0x00: a + src,
                0x10: a - src,
                0x50: a & src,
                0x40: a | src,
                0xA0: a ^ src,
            }.get(op, a) & 0xFFFFFFFF
        elif cls == 0x05:  # JMP
            op = code & 0xF0
            src = x if code & 0x08 else k
            if op == 0x00:
                pc += k
                continue
            taken = {0x10: a == src, 0x20: a > src, 0x30: a >= src, 0x40: bool(a & src)}[op]
            pc += jt if taken else jf
        elif cls == 0x06:  # RET
            return a if code & 0x18 == 0x10 else k
        elif cls == 0x07:  # MISC
            if code & 0xF8 == 0x00:
                x = a
            else:
                a = x
    raise AssertionError("BPF program did not return")


needs_x86_64 = pytest.mark.skipif(
    platform.machine() != "x86_64", reason="numbers and ABI checked for x86_64"
)


@pytest.fixture(scope="module")
def bpf() -> bytes:
    try:
        return seccomp.build().bpf
    except seccomp.SeccompUnavailable as exc:
        pytest.skip(f"libseccomp unavailable (Debian libseccomp2): {exc}")


@needs_x86_64
@pytest.mark.parametrize("nr", [463, 464, 467, 468, 469, 500, 1000, 0x3FFFFFFF])
def test_numbers_above_the_reviewed_ones_get_enosys(bpf: bytes, nr: int) -> None:
    assert _evaluate(bpf, nr, AUDIT_ARCH_X86_64) == RET_ERRNO | errno.ENOSYS


@needs_x86_64
@pytest.mark.parametrize("nr", sorted(seccomp.DENIED_NUMBERS))
def test_listed_new_syscalls_get_eperm(bpf: bytes, nr: int) -> None:
    assert _evaluate(bpf, nr, AUDIT_ARCH_X86_64) == RET_ERRNO | errno.EPERM


@needs_x86_64
@pytest.mark.parametrize(
    "nr", [0, 1, 39, 436, 437, 439, 441, 449, 452, 454, 455, 456]
)  # read, write, getpid, close_range, openat2, faccessat2, epoll_pwait2, futex_waitv, ...
def test_reviewed_harmless_syscalls_are_allowed(bpf: bytes, nr: int) -> None:
    assert _evaluate(bpf, nr, AUDIT_ARCH_X86_64) == RET_ALLOW


@needs_x86_64
def test_foreign_abis_still_killed(bpf: bytes) -> None:
    kill = seccomp.SCMP_ACT_KILL_PROCESS
    assert _evaluate(bpf, 20, 0x40000003) & RET_ACTION == kill  # i386 getpid
    assert _evaluate(bpf, 0x40000000 | 39, AUDIT_ARCH_X86_64) & RET_ACTION == kill  # x32


PROBE = r"""
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return "ok" if r >= 0 else os.strerror(ctypes.get_errno())
buf = ctypes.create_string_buffer(64)
ctx = ctypes.c_ulong(0)
out = {
    "open_tree_attr": call(467, -100, 0, 0, 0, 0),
    "future_1000": call(1000),
    "statmount": call(457, ctypes.addressof(buf), ctypes.addressof(buf), 64, 0),
    "listmount": call(458, ctypes.addressof(buf), ctypes.addressof(buf), 1, 0),
    "mseal": call(462, 0, 0, 0),
    "memfd_secret": call(447, 0),
    "pidfd_open": call(434, os.getpid(), 0),
    "io_setup": call(206, 1, ctypes.addressof(ctx)),
    "mbind": call(237, 0, 0, 0, 0, 0, 0),
    "set_mempolicy": call(238, 0, 0, 0),
    "modify_ldt": call(154, 0, ctypes.addressof(buf), 16),
    "close_range": call(436, 1000, 1010, 0),
    # TIOCSTI with the high word set: the kernel reads the command as 32 bits.
    "ioctl_tiocsti_high": call(16, 0, (1 << 32) | 0x5412, ctypes.addressof(buf)),
}
print(json.dumps(out))
"""


@needs_x86_64
def test_real_calls_from_inside_are_refused(runner) -> None:  # type: ignore[no-untyped-def]
    result = runner.run(PROBE)
    assert result.status == "ok", result.stderr[-1000:]
    got = json.loads(result.stdout)
    enosys, eperm = os.strerror(errno.ENOSYS), os.strerror(errno.EPERM)
    assert got.pop("close_range") == "ok"
    assert got.pop("open_tree_attr") == enosys
    assert got.pop("future_1000") == enosys
    assert got == dict.fromkeys(got, eperm), got


# -- every number, against the policy as the tables state it ----------------------------------

AUDIT_ARCH_I386 = 0x40000003
EAFNOSUPPORT = RET_ERRNO | errno.EAFNOSUPPORT
NS_ANY = 0
for _flag in seccomp.NS_FLAGS:
    NS_ANY |= _flag


def _steps(bpf: bytes, nr: int, arch: int) -> int:
    """Instructions the program runs for ``nr`` with all-zero arguments."""
    prog = [struct.unpack_from("<HBBI", bpf, i) for i in range(0, len(bpf), 8)]
    a, pc, n = 0, 0, 0
    data = struct.pack("<iIQ6Q", nr, arch, 0, *[0] * 6)
    while True:
        code, jt, jf, k = prog[pc]
        n += 1
        pc += 1
        if code == 0x20:
            a = struct.unpack_from("<I", data, k)[0]
        elif code == 0x54:
            a &= k
        elif code == 0x05:
            pc += k
        elif code in (0x15, 0x25, 0x35):
            taken = {0x15: a == k, 0x25: a > k, 0x35: a >= k}[code]
            pc += jt if taken else jf
        elif code == 0x06:
            return n
        else:
            raise AssertionError(f"opcode {code:#x} not expected in the filter")


def _syscall_names() -> dict[int, str]:
    import ctypes

    lib = ctypes.CDLL("libseccomp.so.2")
    lib.seccomp_syscall_resolve_num_arch.restype = ctypes.c_void_p
    lib.seccomp_syscall_resolve_num_arch.argtypes = [ctypes.c_uint32, ctypes.c_int]
    libc = ctypes.CDLL(None)
    libc.free.argtypes = [ctypes.c_void_p]
    names = {}
    for nr in range(seccomp.MAX_REVIEWED + 1):
        p = lib.seccomp_syscall_resolve_num_arch(AUDIT_ARCH_X86_64, nr)
        if p:
            names[nr] = ctypes.string_at(p).decode()
            libc.free(p)
    return names


def _expected(name: str, nr: int, args: tuple[int, ...], inet: bool) -> int:
    """The policy of seccomp.py's tables, stated independently of how the BPF is laid out."""
    eperm = RET_ERRNO | errno.EPERM
    if nr > seccomp.MAX_REVIEWED:
        return RET_ERRNO | errno.ENOSYS
    if nr in seccomp.DENIED_NUMBERS or name in seccomp.DENIED + seccomp.DENIED_LEGACY:
        return eperm
    a0 = args[0] if args else 0
    a1 = args[1] if len(args) > 1 else 0
    if name == "clone3":
        return RET_ERRNO | errno.ENOSYS
    if name == "clone" and a0 & NS_ANY:
        return eperm
    if name == "socket":
        allowed = (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6) if inet else (socket.AF_UNIX,)
        return RET_ALLOW if a0 in allowed else EAFNOSUPPORT
    if name == "ioctl" and a1 & 0xFFFFFFFF == seccomp.TIOCSTI:  # the kernel reads 32 bits
        return eperm
    if name == "personality" and a0 != 0xFFFFFFFF:
        return eperm
    return RET_ALLOW


ARGS = [
    (),
    *[(flag | 17,) for flag in seccomp.NS_FLAGS],  # clone: each namespace, with SIGCHLD
    (17,),
    *[(family,) for family in range(46)],  # socket families
    (1 << 32 | socket.AF_UNIX,),
    (0, seccomp.TIOCSTI),
    (0, 1 << 32 | seccomp.TIOCSTI),  # ioctl's command is an int: the high word is dropped
    (0, 0x5401),  # TCGETS
    (0xFFFFFFFF,),  # personality query
    (0x0040000,),  # personality(ADDR_NO_RANDOMIZE)
]


@needs_x86_64
@pytest.mark.parametrize("inet", [False, True], ids=["judged", "loopback"])
def test_every_number_and_argument_decided_as_the_tables_say(inet: bool) -> None:
    try:
        bpf = seccomp.build(inet=inet).bpf
    except seccomp.SeccompUnavailable as exc:
        pytest.skip(f"libseccomp unavailable (Debian libseccomp2): {exc}")
    names = _syscall_names()
    wrong = []
    for nr in range(seccomp.MAX_REVIEWED + 40):
        name = names.get(nr, "")
        for args in ARGS if name in ("clone", "socket", "ioctl", "personality") else [()]:
            want = _expected(name, nr, args, inet)
            got = _evaluate(bpf, nr, AUDIT_ARCH_X86_64, args)
            if got != want:
                wrong.append((nr, name, args, hex(got), hex(want)))
    assert not wrong, wrong[:20]


@needs_x86_64
def test_numbers_are_decided_in_a_few_instructions(bpf: bytes) -> None:
    """Loading the filter makes the kernel run it for every number of both x86 ABIs (its
    action cache), in every run: with a linear list of rules, 121 instructions per number on
    average (up to 165), ~0.1 ms per run. With libseccomp's binary tree and the prefix's
    early exit: 21 on average, and no more than the denied list's length past the tree."""
    steps = [_steps(bpf, nr, AUDIT_ARCH_X86_64) for nr in range(seccomp.MAX_REVIEWED + 40)]
    assert sum(steps) / len(steps) <= 30, sum(steps) / len(steps)
    assert max(steps) <= 30 + len(seccomp.DENIED_NUMBERS), max(steps)
    assert max(_steps(bpf, nr, AUDIT_ARCH_I386) for nr in range(460)) <= 8
