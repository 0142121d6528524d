"""Where a sandboxed run's machine time goes, by process, against a bare interpreter start.

A loop of warm Python ``print(1)`` runs at concurrency = cores, then the same number of bare
``subprocess.run([python, "-c", "print(1)"])`` spawns, in one process. For the sandboxed runs
it prints CPU per run (user + system, from ``/proc``) of each process of the sandbox:

- ``trusted``: this process (the supervisor: requests, pipes, verdicts, cgroups);
- ``C1``: each slot's first process, which made its namespaces and reaps its init (before
  the init reset its slot itself, C1 did: a fresh tmpfs and its Landlock ruleset per run);
- ``slot init``: each slot's S, which forks the program process, reaps it and resets the
  slot;
- ``program``: the runs' own processes (reaped by S: its children's CPU);
- ``other``: what else the machine spent in the same seconds (kernel threads, the
  benchmark's thread pool's share of nothing else running on a quiet machine).

and minor page faults per run of S and of the program processes (each fault on a page the
program shares with S copies it). The baseline is the machine time per bare spawn, measured
the same way; ``ratio`` is the bare cost over the sandboxed one, the throughput a saturated
machine could reach against the bare spawn's. Ends with one JSON line.

    .venv/bin/python benchmarks/run_costs.py [--seconds 10]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from assay import defaults

sys.path.insert(0, str(Path(__file__).parent))
from sandbox_overhead import print_one

TICK = os.sysconf("SC_CLK_TCK")


def _machine_busy() -> int:
    """Clock ticks the machine's CPUs spent on anything but idle and I/O wait."""
    with open("/proc/stat") as fh:
        v = [int(x) for x in fh.readline().split()[1:]]
    return sum(v) - v[3] - v[4]


def _fields(pid: int) -> list[str]:
    """``/proc/<pid>/stat`` after the command name: state, ppid, ... (man 5 proc, from 3)."""
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()


def _stat(pid: int) -> list[int]:
    """utime, stime, cutime, cstime, minflt, cminflt of ``pid`` (ticks, faults)."""
    f = _fields(pid)
    return [int(f[11]), int(f[12]), int(f[13]), int(f[14]), int(f[7]), int(f[8])]


def _descendants(root: int) -> dict[int, int]:
    """pid -> depth below ``root`` (1: the fork server, 2: each slot's C1, 3: slot inits)."""
    children: dict[int, list[int]] = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                children.setdefault(int(_fields(int(p))[1]), []).append(int(p))
            except (OSError, ValueError):
                continue
    out: dict[int, int] = {}
    todo = [(root, 0)]
    while todo:
        pid, depth = todo.pop()
        for c in children.get(pid, []):
            out[c] = depth + 1
            todo.append((c, depth + 1))
    return out


def _loop(fn: Callable[[], object], seconds: float, workers: int) -> int:
    n = 0
    t = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        while time.perf_counter() - t < seconds:
            list(pool.map(lambda _: fn(), range(50)))
            n += 50
    return n


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seconds", type=float, default=10.0, help="length of each loop")
    ap.add_argument("--python", default=defaults.PYTHON_INTERPRETER)
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0))
    runner, sandboxed, bare = print_one(args.python)

    _loop(sandboxed, 1.0, cores)  # every slot started and warm
    roles = {1: "fork server", 2: "C1", 3: "slot init"}
    procs = {p: d for p, d in _descendants(os.getpid()).items() if d in roles}
    before = {p: _stat(p) for p in procs}
    m0, t0 = _machine_busy(), os.times()
    n = _loop(sandboxed, args.seconds, cores)
    m1, t1 = _machine_busy(), os.times()
    after = {p: _stat(p) for p in procs if os.path.exists(f"/proc/{p}")}
    runner.close()

    def ms(ticks: float) -> float:
        return ticks / TICK / n * 1000

    cost = {
        "trusted": (t1.user + t1.system - t0.user - t0.system) / n * 1000,
        "C1": 0.0,
        "slot init": 0.0,
        "program": 0.0,
    }
    faults = {"slot init": 0.0, "program": 0.0}
    for p, d in procs.items():
        if p not in after:
            continue
        a, b = after[p], before[p]
        if d == 2:
            cost["C1"] += ms(a[0] + a[1] - b[0] - b[1])
        elif d == 3:
            cost["slot init"] += ms(a[0] + a[1] - b[0] - b[1])
            cost["program"] += ms(a[2] + a[3] - b[2] - b[3])
            faults["slot init"] += (a[4] - b[4]) / n
            faults["program"] += (a[5] - b[5]) / n
    total = ms(m1 - m0)
    cost["other"] = max(0.0, total - sum(cost.values()))

    m2 = _machine_busy()
    nb = _loop(bare, args.seconds, cores)
    bare_ms = (_machine_busy() - m2) / TICK / nb * 1000

    print(f"machine: {cores} cores, python {args.python}; {n} sandboxed runs, {nb} bare spawns")
    print(f"{'machine time per run (ms)':32} {'sandboxed':>10}")
    for k, v in cost.items():
        extra = f"   {faults[k]:.0f} page faults" if k in faults else ""
        print(f"  {k:30} {v:>10.2f}{extra}")
    print(f"  {'total':30} {total:>10.2f}")
    print(f"bare spawn: {bare_ms:.2f} ms per run; ratio (bare / sandboxed): {bare_ms / total:.2f}x")
    result = {k.lower().replace(" ", "_") + "_ms": round(v, 3) for k, v in cost.items()}
    result.update(
        total_ms=round(total, 3),
        bare_ms=round(bare_ms, 3),
        ratio=round(bare_ms / total, 2),
        slot_init_faults=round(faults["slot init"], 1),
        program_faults=round(faults["program"], 1),
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
