"""Claim: a C++ fork bomb is held by the pids limit and leaves no process behind."""

from __future__ import annotations

from assay import Limits

BOMB = r"""
#include <unistd.h>
#include <sys/prctl.h>
#include <cstdio>
#include <cerrno>
int main() {
    prctl(PR_SET_NAME, "TAG", 0, 0, 0);
    int children = 0, err = 0;
    for (;;) {
        pid_t p = fork();
        if (p < 0) { err = errno; break; }
        if (p == 0) { for (;;) fork(); }
        children++;
    }
    std::printf("children=%d eagain=%d\n", children, err == EAGAIN);
    std::fflush(stdout);
    for (;;) fork();
}
"""


def test_cpp_fork_bomb_is_contained(no_idle_runner, host, gvisor: bool) -> None:  # type: ignore[no-untyped-def]
    tag = host.new_tag()
    result = no_idle_runner.run(
        BOMB.replace("TAG", tag), "cpp", limits=Limits(time_s=1, memory_mb=128, processes=16)
    )
    # Under gVisor each process costs several MiB of the sandbox's host memory (its copy of
    # the parent's pages, a host stub), charged to the run: the bomb may hit memory first.
    ends = ("time_limit", "memory_limit") if gvisor else ("time_limit",)
    assert result.status in ends, (result.status, result.stderr[-300:])
    children = int(result.stdout.split(b"children=")[1].split()[0])
    assert 0 < children < 16, result.stdout
    assert b"eagain=1" in result.stdout
    assert host.processes_named(tag) == [], "a forked process outlived the run"
