"""What the per-run and per-slot controls of issue 13 cost, each against its own baseline.

Prints one line per control and ends with one JSON line:

- ``cgroupns_us``: a run's ``unshare(CLONE_NEWCGROUP)`` in a freshly forked process (the
  program process does it once per run), against the same fork without it;
- ``seccomp_ns_per_syscall``: a ``getppid`` loop under the sandbox's whole filter (libseccomp's
  program plus the by-number prefix) against the same loop with no filter, in one process;
- ``slot_start_ms`` / ``warm_run_ms``: p50 of a run that needs a new slot (its namespaces,
  its own uid and account files, the masked ``/proc``) against a run on a warm slot.

Usage: ``.venv/bin/python benchmarks/isolation_costs.py [--runs N]``
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import time

from assay import Runner, Sandbox
from assay.sandbox._inside import linux, seccomp


def _fork_cost(unshare: bool, n: int) -> float:
    """Median µs of fork + (unshare) + exit + wait."""
    times = []
    for _ in range(n):
        t = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            if unshare:
                linux.unshare(linux.CLONE_NEWCGROUP)
            os._exit(0)
        os.waitpid(pid, 0)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def _syscall_ns(filtered: bool, n: int) -> float:
    """ns per getppid() in a child, under the sandbox's filter or none."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        if filtered:
            seccomp.build().load()
        libc = ctypes.CDLL(None)
        getppid = libc.getppid
        t = time.perf_counter_ns()
        for _ in range(n):
            getppid()
        os.write(w, str((time.perf_counter_ns() - t) / n).encode())
        os._exit(0)
    os.close(w)
    out = os.read(r, 64)
    os.close(r)
    os.waitpid(pid, 0)
    return float(out)


def _p50_ms(runner: Runner, n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        result = runner.run("print(1)")
        times.append(time.perf_counter() - t)
        assert result.status == "ok", result
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200, help="samples per measure")
    args = parser.parse_args()
    n = args.runs
    fork_us = _fork_cost(False, n)
    fork_ns_us = _fork_cost(True, n)
    bare_ns = min(_syscall_ns(False, 200_000) for _ in range(3))
    filt_ns = min(_syscall_ns(True, 200_000) for _ in range(3))
    with Runner(Sandbox(pool_size=4)) as warm:
        _p50_ms(warm, 20)
        warm_ms = _p50_ms(warm, n)
    with Runner(Sandbox(pool_size=0)) as cold:  # no idle slot: every run starts a new one
        _p50_ms(cold, 5)
        cold_ms = _p50_ms(cold, max(20, n // 4))
    rows = [
        ("fork + exit (us)", fork_us, "baseline"),
        ("fork + unshare(CLONE_NEWCGROUP) + exit (us)", fork_ns_us, "cgroup namespace per run"),
        ("getppid, no filter (ns)", bare_ns, "baseline"),
        ("getppid, sandbox filter (ns)", filt_ns, "seccomp incl. by-number prefix"),
        ("print(1) on a warm slot, p50 (ms)", warm_ms, "baseline"),
        (
            "print(1) needing a new slot, p50 (ms)",
            cold_ms,
            "slot start: namespaces, uid, /proc masks",
        ),
    ]
    for name, value, what in rows:
        print(f"{name:48s} {value:10.2f}   {what}")
    print(
        json.dumps(
            {
                "cgroupns_us": round(fork_ns_us - fork_us, 1),
                "seccomp_ns_per_syscall": round(filt_ns - bare_ns, 1),
                "slot_start_ms": round(cold_ms, 2),
                "warm_run_ms": round(warm_ms, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
