"""Sandbox overhead: sandboxed runs against bare, unsandboxed process spawns, in one run.

Measures, on this machine and in the same process:
  * Python ``print(1)``: sandboxed (fork server, full isolation) vs a bare
    ``subprocess.run([python, "-c", "print(1)"])`` loop, at concurrency 1 and = cores;
  * a prebuilt C binary: sandboxed run vs a bare spawn of the same binary (concurrency 1).

Throughput at concurrency = cores is measured two ways, both sides alike: ``cores`` caller
threads each running back to back for ``--seconds`` (the throughput ratio: nothing but the
runs in the process), and ``--runs`` runs through a ``ThreadPoolExecutor`` (``pool``: as a
trainer's reward workers submit; its collecting thread wakes once per run in the same
process, a fixed cost per run that weighs more on the faster side). Rounds of each are
interleaved so background noise hits both sides alike; figures are medians over the rounds.
Ends with one JSON line.

    .venv/bin/python benchmarks/sandbox_overhead.py [--runs 300] [--rounds 3] [--seconds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import assay
from assay import defaults

C_SOURCE = b'#include <stdio.h>\nint main(void){puts("1");return 0;}\n'


def _latencies(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def _throughput(fn: Callable[[], object], n: int, workers: int) -> float:
    with ThreadPoolExecutor(workers) as pool:
        t = time.perf_counter()
        list(pool.map(lambda _: fn(), range(n)))
        return n / (time.perf_counter() - t)


def _callers(fn: Callable[[], object], seconds: float, workers: int) -> float:
    """Runs per second of ``workers`` threads each calling ``fn`` back to back."""
    done = [0] * workers
    t0 = time.perf_counter()
    end = t0 + seconds

    def caller(i: int) -> None:
        while time.perf_counter() < end:
            fn()
            done[i] += 1

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(done) / (time.perf_counter() - t0)


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000


LIMITS = assay.Limits(time_s=2, memory_mb=256)


def print_one(python: str) -> tuple[assay.Runner, Callable[[], None], Callable[[], None]]:
    """A warm runner, and the two runs the sandbox benchmarks time: ``print(1)`` sandboxed,
    and in a bare ``python -c`` subprocess."""
    runner = assay.Runner(config=assay.SandboxConfig(python=python))
    runner.sandbox.warm_up()

    def bare() -> None:
        r = subprocess.run([python, "-c", "print(1)"], capture_output=True, check=False)
        assert r.stdout == b"1\n"

    return runner, sandboxed_print(runner), bare


def sandboxed_print(runner: assay.Runner) -> Callable[[], None]:
    """One sandboxed ``print(1)`` on ``runner``, checked."""

    def sandboxed() -> None:
        r = runner.run("print(1)", "python", b"", LIMITS)
        assert r.status == "ok" and r.stdout == b"1\n", r

    return sandboxed


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--runs", type=int, default=300, help="runs per measurement per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--seconds", type=float, default=2.0, help="per throughput measurement per round"
    )
    ap.add_argument("--python", default=defaults.PYTHON_INTERPRETER)
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0))

    runner, sandboxed_py, bare_py = print_one(args.python)
    limits = LIMITS

    with tempfile.TemporaryDirectory() as tmp:
        src, binary = os.path.join(tmp, "p.c"), os.path.join(tmp, "p")
        with open(src, "wb") as fh:
            fh.write(C_SOURCE)
        subprocess.run(["gcc", "-O2", "-o", binary, src], check=True)
        with open(binary, "rb") as fh:
            c_bytes = fh.read()

        def sandboxed_c() -> None:
            r = runner.run(c_bytes, "executable", b"", limits)
            assert r.status == "ok" and r.stdout == b"1\n", r

        def bare_c() -> None:
            r = subprocess.run([binary], capture_output=True, check=False)
            assert r.stdout == b"1\n"

        for fn in (sandboxed_py, bare_py, sandboxed_c, bare_c):  # warm caches
            _latencies(fn, 20)
        rows: dict[str, list[float]] = {
            k: []
            for k in (
                "py_c1_p50_ms",
                "py_c1_p95_ms",
                "bare_c1_p50_ms",
                "bare_c1_p95_ms",
                "py_cN_runs_per_s",
                "bare_cN_runs_per_s",
                "py_pool_runs_per_s",
                "bare_pool_runs_per_s",
                "c_sandbox_p50_ms",
                "c_bare_p50_ms",
            )
        }
        for _ in range(args.rounds):
            lat = _latencies(sandboxed_py, args.runs)
            rows["py_c1_p50_ms"].append(_pct(lat, 0.5))
            rows["py_c1_p95_ms"].append(_pct(lat, 0.95))
            lat = _latencies(bare_py, args.runs)
            rows["bare_c1_p50_ms"].append(_pct(lat, 0.5))
            rows["bare_c1_p95_ms"].append(_pct(lat, 0.95))
            rows["py_cN_runs_per_s"].append(_callers(sandboxed_py, args.seconds, cores))
            rows["bare_cN_runs_per_s"].append(_callers(bare_py, args.seconds, cores))
            rows["py_pool_runs_per_s"].append(_throughput(sandboxed_py, args.runs, cores))
            rows["bare_pool_runs_per_s"].append(_throughput(bare_py, args.runs, cores))
            rows["c_sandbox_p50_ms"].append(_pct(_latencies(sandboxed_c, args.runs), 0.5))
            rows["c_bare_p50_ms"].append(_pct(_latencies(bare_c, args.runs), 0.5))
    runner.close()

    med = {k: statistics.median(v) for k, v in rows.items()}
    result = {
        "py_c1_p50_ms": round(med["py_c1_p50_ms"], 2),
        "py_c1_p95_ms": round(med["py_c1_p95_ms"], 2),
        "py_cN_runs_per_s": round(med["py_cN_runs_per_s"], 1),
        "bare_c1_p50_ms": round(med["bare_c1_p50_ms"], 2),
        "bare_cN_runs_per_s": round(med["bare_cN_runs_per_s"], 1),
        "throughput_ratio": round(med["py_cN_runs_per_s"] / med["bare_cN_runs_per_s"], 2),
        "pool_throughput_ratio": round(med["py_pool_runs_per_s"] / med["bare_pool_runs_per_s"], 2),
        "c_p50_overhead_ms": round(med["c_sandbox_p50_ms"] - med["c_bare_p50_ms"], 2),
    }
    print(f"machine: {cores} cores, python {args.python}, {args.rounds} rounds x {args.runs} runs")
    print(f"{'measure':38} {'sandboxed':>10} {'bare':>10}")
    print(
        f"{'python print(1) p50 latency, c=1 (ms)':38} {result['py_c1_p50_ms']:>10} {result['bare_c1_p50_ms']:>10}"
    )
    print(
        f"{'python print(1) p95 latency, c=1 (ms)':38} {result['py_c1_p95_ms']:>10} {round(med['bare_c1_p95_ms'], 2):>10}"
    )
    print(
        f"{f'python print(1) runs/s, c={cores}':38} {result['py_cN_runs_per_s']:>10} {result['bare_cN_runs_per_s']:>10}"
    )
    print(
        f"{'  the same through a thread pool':38} {round(med['py_pool_runs_per_s'], 1):>10} {round(med['bare_pool_runs_per_s'], 1):>10}"
    )
    print(
        f"{'C binary p50 latency, c=1 (ms)':38} {round(med['c_sandbox_p50_ms'], 2):>10} {round(med['c_bare_p50_ms'], 2):>10}"
    )
    print(
        f"throughput ratio (sandboxed / bare): {result['throughput_ratio']}x "
        f"(through a thread pool {result['pool_throughput_ratio']}x); "
        f"C overhead p50: {result['c_p50_overhead_ms']} ms"
    )
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
