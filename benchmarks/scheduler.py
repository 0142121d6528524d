"""Scheduler benchmark, three parts in one run; ends with one JSON line.

(a) Makespan of a synthetic heavy-tailed batch (programs that burn a Pareto-distributed amount
    of CPU, run in the real sandbox) under FIFO, random and Assay's ordering (longest first
    from estimates learned on an earlier pass over the same problems), each divided by the
    lower bound max(longest job, total work / slots) measured in that same run.
(b) End-to-end samples/s judging CodeT samples of HumanEval with the result cache on and off.
(c) Scheduler overhead per job: 10,000 trivial jobs through the executor on an in-memory
    backend (no sandbox), with records written to disk as usual.

    .venv/bin/python benchmarks/scheduler.py [--jobs 60] [--codet-tasks 10] [--trivial 10000]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from assay import Limits, Problem, Runner, Submission, TestCase, formats
from assay.executor import Execution, InMemoryBackend, Job, LocalExecutor
from assay.judge import Judgement
from assay.scheduler import RuntimeEstimator

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"

BURN = (
    "import time\n"
    "t = time.process_time()\n"
    "while time.process_time() - t < {seconds}:\n"
    "    pass\n"
    "print('done')\n"
)


def heavy_tailed(n: int, seed: int) -> list[float]:
    """Pareto (alpha 1.16: the 80/20 rule) CPU seconds in random arrival order, scaled so the
    batch holds ~8 s of work, each between 0.01 and 3.5 s."""
    rng = random.Random(seed)
    raw = [rng.paretovariate(1.16) for _ in range(n)]
    scale = 8.0 / sum(raw)
    return [min(3.5, max(0.01, r * scale)) for r in raw]


def makespans(runner: Runner, slots: int, n: int, seed: int) -> dict[str, float]:
    durations = heavy_tailed(n, seed)
    limits = Limits(time_s=5.0, wall_s=20.0, memory_mb=256)
    jobs: list[Job] = [
        Submission(
            Problem(f"synthetic/{i}", [TestCase("stdio", "", "done")], limits=limits),
            BURN.format(seconds=round(d, 4)),
        )
        for i, d in enumerate(durations)
    ]
    out: dict[str, float] = {}
    for order in ("fifo", "random", "lpt"):
        est = RuntimeEstimator()
        with LocalExecutor(
            runner,
            slots=slots,
            order=order,
            cache=False,
            split=False,
            records="off",
            estimator=est,
        ) as ex:
            if order == "lpt":
                ex.run(jobs)  # history: what Assay would have learned from earlier steps
            t0 = time.perf_counter()
            results = ex.run(jobs)
            span = time.perf_counter() - t0
        assert all(r.verdict == "accepted" for r in results), [r.reason for r in results]
        work = [r.run_s for r in results]
        bound = max(max(work), sum(work) / slots)
        out[order] = span / bound
        print(
            f"  {order:6s}: makespan {span:6.2f} s, lower bound {bound:6.2f} s "
            f"(longest {max(work):.2f} s, work {sum(work):.2f} s / {slots} slots), "
            f"ratio {span / bound:.3f}",
            flush=True,
        )
    return out


def codet(runner: Runner, slots: int, tasks: int) -> dict[str, float]:
    with gzip.open(CORPORA / "humaneval" / "HumanEval.jsonl.gz", "rt") as fh:
        records = sorted((json.loads(line) for line in fh), key=lambda r: r["task_id"])
    rows = [
        json.loads(line)
        for line in open(CORPORA / "codet" / "humaneval-codegen16b-100-samples.jsonl")
    ]
    problems = {
        p.id: p for p in formats.load(CORPORA / "humaneval" / "HumanEval.jsonl.gz", "humaneval")
    }
    jobs: list[Job] = []
    for record, row in list(zip(records, rows, strict=True))[:tasks]:
        jobs += [
            Submission(problems[record["task_id"]], record["prompt"] + s) for s in row["samples"]
        ]
    out: dict[str, float] = {}
    accepted: dict[str, int] = {}
    for cache in (False, True):
        with LocalExecutor(
            runner, slots=slots, cache=cache, records="off", estimator=RuntimeEstimator()
        ) as ex:
            t0 = time.perf_counter()
            results = ex.run(jobs)
            elapsed = time.perf_counter() - t0
        name = "on" if cache else "off"
        out[name] = len(jobs) / elapsed
        accepted[name] = sum(r.verdict == "accepted" for r in results)
        print(
            f"  cache {name:3s}: {len(jobs)} samples in {elapsed:.1f} s = {out[name]:.1f} "
            f"samples/s, {accepted[name]} accepted",
            flush=True,
        )
    if accepted["on"] != accepted["off"]:
        sys.exit(f"cache changed verdicts: {accepted}")
    return out


def overhead(n: int, slots: int) -> float:
    verdict = Judgement("accepted", [], 1.0, "trivial")
    done = Execution("accepted", 1.0, "trivial", judgement=verdict)
    problems = [Problem(f"trivial/{i}", [TestCase("stdio", "", "")]) for i in range(n)]
    jobs: list[Job] = [Submission(p, "pass") for p in problems]
    with tempfile.TemporaryDirectory() as tmp:
        with LocalExecutor(
            backend=InMemoryBackend(lambda job: done),
            slots=slots,
            cache=False,
            records=tmp,
            estimator=RuntimeEstimator(Path(tmp) / "estimates.sqlite"),
        ) as ex:
            t0 = time.perf_counter()
            results = ex.run(jobs)
            elapsed = time.perf_counter() - t0
        written = sum(1 for f in Path(tmp).glob("*.jsonl") for _ in open(f))
    assert len(results) == n and written == n, (len(results), written)
    per_job = elapsed / n * 1000
    print(f"  {n} trivial jobs in {elapsed:.2f} s: {per_job:.3f} ms per job (records on disk)")
    return per_job


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--jobs", type=int, default=40, help="synthetic batch size for (a)")
    ap.add_argument("--seeds", type=int, default=3, help="synthetic batches (ratios averaged)")
    ap.add_argument("--codet-tasks", type=int, default=10, help="HumanEval tasks x 100 samples")
    ap.add_argument("--trivial", type=int, default=10_000, help="jobs for (c)")
    ap.add_argument("--slots", type=int, default=len(os.sched_getaffinity(0)))
    args = ap.parse_args()

    with Runner() as runner:
        runner.sandbox.warm_up(args.slots)
        print(f"(a) makespan of heavy-tailed batches of {args.jobs} jobs on {args.slots} slots")
        runs = []
        for seed in range(1, args.seeds + 1):
            print(f" batch {seed}:")
            runs.append(makespans(runner, args.slots, args.jobs, seed))
        spans = {k: sum(r[k] for r in runs) / len(runs) for k in runs[0]}
        print("  mean ratios: " + ", ".join(f"{k} {v:.3f}" for k, v in spans.items()))
        print(f"(b) CodeT samples, {args.codet_tasks} tasks x 100")
        rates = codet(runner, args.slots, args.codet_tasks)
    print("(c) scheduler overhead")
    per_job = overhead(args.trivial, args.slots)
    result = {
        "makespan_ratio_fifo": round(spans["fifo"], 3),
        "makespan_ratio_random": round(spans["random"], 3),
        "makespan_ratio_assay": round(spans["lpt"], 3),
        "cache_on_samples_per_s": round(rates["on"], 1),
        "cache_off_samples_per_s": round(rates["off"], 1),
        "overhead_ms_per_job": round(per_job, 4),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
