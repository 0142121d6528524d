"""The cluster executor against the local one, on a Ray cluster started on this machine
(``ray.cluster_utils.Cluster``: a head with no CPUs for work, as on KubeRay, and worker
nodes). Ends with one JSON line.

    .venv/bin/python benchmarks/cluster.py [--limit 1000] [--nodes 2] [--slots-per-node 1]

1. **Throughput on real code**: an evenly spread subset of the CodeT corpus (CodeGen-16B
   samples of HumanEval) judged by a ``LocalExecutor`` with ``nodes x slots-per-node`` slots
   and by a ``RayExecutor`` with the same total slots, alternately for ``--rounds`` rounds,
   result cache off on both (every sample runs), stopping at the first failed test as
   ``assay eval`` does. The verdicts must be the same. ``ray_vs_local`` is the median of the
   rounds' ratios; ``ray_overhead_ms_per_job`` is the slot time the cluster path costs per
   job beyond the local run: ``(ray wall - local wall) x slots / jobs``, from the median
   walls (negative when the cluster is faster).
2. **Dispatch**: trivial jobs (the agents' backend answers at once) through the driver:
   how many jobs per second one driver queues, dispatches, collects and delivers, and the
   driver's CPU per job. ``ray_roundtrip_ms`` is one job's latency alone (submit to result).
3. **Faults**: a worker node killed (its raylet and every process on it) in the middle of a
   batch: ``lost_jobs`` (a job without a ``done`` result) and ``duplicated_jobs`` (a result
   delivered or recorded twice) must both be 0.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import ray
from ray.cluster_utils import Cluster

from assay import LocalExecutor, RayExecutor, RunJob, Runner, Submission, formats
from assay.evaluate import with_time_limits
from assay.executor import Execution, InMemoryBackend, Job, JobResult
from assay.scheduler import RuntimeEstimator
from assay.telemetry import MemoryWriter

sys.path.insert(0, str(Path(__file__).parent))
from eval_throughput import CORPORA, load

NODE = {"object_store_memory": 100 << 20}
FAST_FAILURE = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 500,
    "health_check_failure_threshold": 3,
}


def trivial(job: Job) -> Execution:
    return Execution("ok", 1.0, "")


def trivial_backend() -> InMemoryBackend:
    return InMemoryBackend(trivial)


def sleeping(job: Job) -> Execution:
    time.sleep(0.05)
    return Execution("ok", 1.0, "")


def sleeping_backend() -> InMemoryBackend:
    return InMemoryBackend(sleeping)


def throughput(args: argparse.Namespace) -> dict[str, object]:
    pairs = load()
    step = len(pairs) / args.limit
    pairs = [pairs[int(i * step)] for i in range(args.limit)]
    problems = {
        p.id: p for p in formats.load(CORPORA / "humaneval" / "HumanEval.jsonl.gz", "humaneval")
    }
    slots = args.nodes * args.slots_per_node
    local_s: list[float] = []
    ray_s: list[float] = []
    with contextlib.ExitStack() as stack:
        runner = stack.enter_context(Runner())
        tasks = {task["task_id"] for task, _ in pairs}
        problems = with_time_limits(
            runner, {t: problems[t] for t in tasks}, "humaneval", "derive", slots
        )

        def round_jobs(r: int) -> list[Job]:
            # New problem ids each round: the nodes meet every problem anew, as in training.
            fresh = {t: dataclasses.replace(p, id=f"{t}#{r}") for t, p in problems.items()}
            return [Submission(fresh[t["task_id"]], t["prompt"] + s) for t, s in pairs]

        jobs = round_jobs(0)
        runner.sandbox.warm_up()
        lex = stack.enter_context(LocalExecutor(runner, slots=slots, cache=False, records="off"))
        rex = stack.enter_context(
            RayExecutor(
                slots_per_node=args.slots_per_node,
                cache=False,
                records="off",
                estimator=RuntimeEstimator(),
            )
        )
        assert sum(n["slots"] for n in rex.node_info()) == slots
        rex.run(jobs[: 2 * slots], stop_on_failure=True)  # the agents' sandboxes warm
        # Alternately, so that a slow minute of this shared machine falls on both sides.
        for r in range(args.rounds):
            jobs = round_jobs(r + 1)
            t0 = time.perf_counter()
            local = lex.run(jobs, stop_on_failure=True)
            local_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            remote = rex.run(jobs, stop_on_failure=True)
            ray_s.append(time.perf_counter() - t0)
    same = [r.verdict for r in local] == [r.verdict for r in remote]
    ratios = [a / b for a, b in zip(local_s, ray_s, strict=True)]
    local_t, ray_t = statistics.median(local_s), statistics.median(ray_s)
    print(
        f"CodeT subset of {len(jobs)} samples, {slots} slots, {args.rounds} rounds (medians): "
        f"local {len(jobs) / local_t:.1f}/s, ray {len(jobs) / ray_t:.1f}/s ({args.nodes} nodes "
        f"x {args.slots_per_node}); ratio per round {', '.join(f'{r:.3f}' for r in ratios)}; "
        f"same verdicts: {same}; accepted {sum(r.verdict == 'accepted' for r in remote)}"
    )
    return {
        "samples": len(jobs),
        "slots": slots,
        "rounds": args.rounds,
        "local_samples_per_s": round(len(jobs) / local_t, 1),
        "ray_samples_per_s": round(len(jobs) / ray_t, 1),
        "ray_vs_local": round(statistics.median(ratios), 3),
        "ray_overhead_ms_per_job": round((ray_t - local_t) * slots / len(jobs) * 1000, 3),
        "same_verdicts": same,
    }


def dispatch(args: argparse.Namespace) -> dict[str, object]:
    jobs = [RunJob(f"# {i}") for i in range(args.trivial)]
    with RayExecutor(
        slots_per_node=16,
        prefetch=2048,
        backend_factory=trivial_backend,
        cache=False,
        records="off",
        estimator=RuntimeEstimator(),
    ) as ex:
        ex.run(jobs[:2000])  # agents' threads started, code paths warm
        t0, c0 = time.perf_counter(), time.process_time()
        results = ex.run(jobs)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        assert {r.verdict for r in results} == {"ok"}
        latencies = []
        for i in range(50):
            t = time.perf_counter()
            ex.run([RunJob(f"# alone {i}")])
            latencies.append(time.perf_counter() - t)
    with LocalExecutor(
        backend=trivial_backend(), slots=2, cache=False, records="off", estimator=RuntimeEstimator()
    ) as local:
        t0 = time.perf_counter()
        local.run(jobs)
        local_rate = len(jobs) / (time.perf_counter() - t0)
    latencies.sort()
    print(
        f"dispatch: {len(jobs)} trivial jobs in {wall:.2f} s = {len(jobs) / wall:.0f} jobs/s "
        f"(driver CPU {cpu / len(jobs) * 1e6:.0f} us/job; the local executor alone: "
        f"{local_rate:.0f} jobs/s); one job alone: {latencies[len(latencies) // 2] * 1000:.2f} ms"
    )
    return {
        "dispatch_jobs_per_s": round(len(jobs) / wall),
        "driver_cpu_us_per_job": round(cpu / len(jobs) * 1e6, 1),
        "local_trivial_jobs_per_s": round(local_rate),
        "ray_roundtrip_ms": round(latencies[len(latencies) // 2] * 1000, 2),
    }


def faults(cluster: Cluster, victim: object) -> dict[str, object]:
    n = 600
    delivered: list[JobResult] = []
    records = MemoryWriter()
    with RayExecutor(
        slots_per_node=2,
        backend_factory=sleeping_backend,
        cache=False,
        records=records,
        estimator=RuntimeEstimator(),
    ) as ex:
        handle = ex.submit([RunJob(f"# {i}") for i in range(n)], on_result=delivered.append)
        while handle.finished < n // 3:
            time.sleep(0.01)
        cluster.remove_node(victim, allow_graceful=False)
        results = handle.gather(timeout=300)
        stats = dict(ex.stats)
    done = {r.index for r in results if r.outcome == "done" and r.verdict == "ok"}
    per_index = Counter(r.index for r in delivered)
    per_job = Counter(row["job_id"] for row in records.records)
    lost = n - len(done)
    duplicated = sum(c - 1 for c in per_index.values()) + sum(c - 1 for c in per_job.values())
    rerun = sum(r.attempts > 1 for r in results)
    print(
        f"faults: a node killed after {n // 3} of {n} jobs: {rerun} ran again elsewhere, "
        f"lost {lost}, duplicated {duplicated} ({stats})"
    )
    return {"lost_jobs": lost, "duplicated_jobs": duplicated, "rerun_jobs": rerun}


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--limit", type=int, default=1000, help="CodeT samples judged (subset)")
    ap.add_argument("--nodes", type=int, default=2, help="worker nodes")
    ap.add_argument("--slots-per-node", type=int, default=1)
    ap.add_argument(
        "--rounds", type=int, default=3, help="local and ray runs of the subset, alternately"
    )
    ap.add_argument("--trivial", type=int, default=50_000, help="trivial jobs dispatched")
    ap.add_argument(
        "--parts",
        default="throughput,dispatch,faults",
        help="which measurements to run (comma-separated; the JSON line has their keys only)",
    )
    args = ap.parse_args()
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, **NODE, "_system_config": FAST_FAILURE},
    )
    workers = [cluster.add_node(num_cpus=args.slots_per_node, **NODE) for _ in range(args.nodes)]
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        parts = set(args.parts.split(","))
        result: dict[str, object] = {}
        if "throughput" in parts:
            result |= throughput(args)
        if "dispatch" in parts:
            result |= dispatch(args)
        if "faults" in parts:
            result |= faults(cluster, workers[-1])
    finally:
        ray.shutdown()
        cluster.shutdown()
    result["cpus"] = len(os.sched_getaffinity(0))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
