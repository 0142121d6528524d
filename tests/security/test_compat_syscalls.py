"""Claim: a sandboxed program cannot slip past the seccomp filter through a foreign system
call ABI: 32-bit ``int $0x80`` calls and x32 calls (number | 0x40000000) are refused.

A seccomp filter that only lists x86_64 numbers is bypassed by the same call made through
another ABI, where the numbers differ (``int $0x80`` with eax=102 is socketcall, with
eax=11 execve). The C program below makes such calls; each mode is a separate run because a
correct filter kills the process on the first one (SIGSYS). The call must never succeed:
the process is killed, or the call returns an error; an ``ESCAPED`` line or a non-negative
result means the filter was bypassed.
"""

from __future__ import annotations

import signal

import pytest

from assay import Limits

SOURCE = r"""
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

static long int80(long nr, long a, long b, long c) {
    long ret;
    __asm__ volatile ("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
    return ret;
}

static void say(const char *text) { write(1, text, strlen(text)); }

int main(void) {
    char mode[64] = {0};
    if (scanf("%63s", mode) != 1) return 2;
    /* Pointers handed to 32-bit calls must fit in 32 bits. */
    char *low = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT,
                     -1, 0);
    if (low == MAP_FAILED) { say("NO_LOW_MEMORY\n"); return 3; }
    say("BEFORE\n");
    long ret;
    if (!strcmp(mode, "int80_getpid")) {
        ret = int80(20, 0, 0, 0);
    } else if (!strcmp(mode, "int80_socketcall")) {
        unsigned int *args = (unsigned int *)low;       /* socket(AF_INET, SOCK_STREAM, 0) */
        args[0] = 2; args[1] = 1; args[2] = 0;
        ret = int80(102, 1, (long)args, 0);             /* socketcall(SYS_SOCKET, args) */
    } else if (!strcmp(mode, "int80_socket")) {
        ret = int80(359, 2, 1, 0);                      /* i386 socket(AF_INET, ...) */
    } else if (!strcmp(mode, "int80_unshare")) {
        ret = int80(310, 0x10000000, 0, 0);             /* i386 unshare(CLONE_NEWUSER) */
    } else if (!strcmp(mode, "int80_execve")) {
        char *path = low + 64, *a0 = low + 128, *a1 = low + 192, *a2 = low + 256;
        unsigned int *argv = (unsigned int *)(low + 512);
        strcpy(path, "/bin/sh"); strcpy(a0, "sh"); strcpy(a1, "-c"); strcpy(a2, "echo ESCAPED");
        argv[0] = (unsigned int)(long)a0; argv[1] = (unsigned int)(long)a1;
        argv[2] = (unsigned int)(long)a2; argv[3] = 0;
        ret = int80(11, (long)path, (long)argv, 0);     /* i386 execve */
    } else if (!strcmp(mode, "x32_getpid")) {
        ret = syscall(39 | 0x40000000);
    } else if (!strcmp(mode, "x32_socket")) {
        ret = syscall(41 | 0x40000000, 2, 1, 0);
    } else if (!strcmp(mode, "x32_unshare")) {
        ret = syscall(272 | 0x40000000, 0x10000000);
    } else {
        say("UNKNOWN_MODE\n");
        return 4;
    }
    printf("RESULT %ld\n", ret);
    if (ret >= 0) printf("ESCAPED\n");
    return 0;
}
"""

MODES = [
    "int80_getpid",
    "int80_socketcall",
    "int80_socket",
    "int80_unshare",
    "int80_execve",
    "x32_getpid",
    "x32_socket",
    "x32_unshare",
]


@pytest.mark.parametrize("mode", MODES)
def test_foreign_abi_syscalls_are_refused(runner, mode: str, gvisor: bool) -> None:
    result = runner.run(SOURCE, "c", mode, Limits(time_s=2, memory_mb=256))
    assert result.status != "compile_error", result.stderr_text
    out = result.stdout_text
    assert "BEFORE" in out, (
        "the program did not reach the call",
        result.status,
        result.stderr_text,
    )
    if gvisor and mode == "int80_socketcall":
        # gVisor has no i386 ABI: int $0x80 makes the x86_64 call of that number (102 is
        # getuid), which the filter's x86_64 rules decide. No socket, the sandbox's uid.
        assert "RESULT 65534\n" in out, out
        return
    assert "ESCAPED" not in out, f"{mode} bypassed the filter: {out!r}"
    if "RESULT" in out:
        value = int(out.split("RESULT", 1)[1].split()[0])
        assert value < 0, f"{mode} succeeded with {value}"
    else:
        # Killed on the spot: by seccomp (SIGSYS), or by the CPU if the ABI is compiled out.
        assert result.signal in (signal.SIGSYS, signal.SIGSEGV, signal.SIGKILL), (
            result.status,
            result.signal,
            result.exit_code,
        )
