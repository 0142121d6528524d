"""The queue fleet against the local executor on the same slots, on a real ``redis-server``
started on loopback, with ``assay worker`` processes on this machine. Ends with one JSON line.

    .venv/bin/python benchmarks/fleet.py [--jobs 2000] [--workers 3] [--slots 2] [--job-ms 20]
                                         [--rounds 3]

Jobs are runs of a backend that sleeps ``job-ms`` (tests/executor/queue/_fleet_backends.py):
what is measured is what the fleet adds around a job (encode, broker, worker loop, store,
collect), not the sandbox, which is the same code on both sides.

1. **Baseline**: a ``LocalExecutor`` with ``workers x slots`` slots runs the batch.
2. **Clean fleet**: ``workers`` workers of ``slots`` slots each run it through Redis.
   ``throughput_ratio`` = fleet jobs/s over local jobs/s (median over ``rounds`` rounds
   that alternate the two, so the shared machine's load touches both alike);
   ``overhead_ms_per_job`` = ``(fleet wall - local wall) x slots / jobs`` (medians): the
   slot time the fleet costs per job.
3. **Faults**: the batch again; a worker is SIGKILLed once a quarter of the results are in
   (its jobs in hand are claimed after the visibility timeout) and another worker is added
   at half. ``lost_jobs`` (an index without a result) and ``duplicated_results`` (a job
   with more than one stored result) must be 0; ``throughput_ratio_with_faults`` is this
   run against the baseline.
4. ``roundtrip_ms``: one job alone, submit to result, minus its sleep (median of 20).
"""

from __future__ import annotations

import sys
from pathlib import Path

# This file's name is the standard library's ``queue``: its folder must not be on the path
# (Python puts it first), or every ``import queue`` (pyarrow, threads) would load it.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import redis  # noqa: E402

sys.path.insert(0, str(HERE.parent / "tests" / "executor" / "queue"))
from _fleet_backends import sleeping  # noqa: E402
from _redis_server import RedisServer, start_worker  # noqa: E402

from assay import LocalExecutor, QueueExecutor, RunJob  # noqa: E402

VISIBILITY_S = 2.0


def wait_workers(ex: QueueExecutor, n: int, capacity: int, timeout: float = 120.0) -> None:
    """Until ``n`` workers have answered (started and connected): batches of short jobs,
    as many as the workers hold at once, until results name ``n`` workers."""
    seen: set[str] = set()
    deadline = time.monotonic() + timeout
    while len(seen) < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(seen)} of {n} workers answered within {timeout} s")
        seen |= {r.worker for r in ex.run([RunJob("0.1")] * (n * capacity))}


def stored(url: str, batch_id: str) -> list[int]:
    client = redis.Redis.from_url(url)
    return [int(f[b"i"]) for _, f in client.xrange(f"assay:out:{batch_id}")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--slots", type=int, default=2, help="slots per worker")
    ap.add_argument("--job-ms", type=float, default=20.0)
    ap.add_argument("--rounds", type=int, default=3, help="local and fleet runs, alternating")
    args = ap.parse_args()
    slots = args.workers * args.slots
    jobs = [RunJob(f"{args.job_ms / 1000}") for _ in range(args.jobs)]
    tmp = Path(tempfile.mkdtemp(prefix="assay-queue-bench-"))
    # Records of both sides (the workers inherit it) in the run's own folder, not the home's.
    os.environ["ASSAY_RECORDS"] = str(tmp / "records")
    load_before = os.getloadavg()

    def timed(ex: LocalExecutor | QueueExecutor) -> float:
        t0 = time.perf_counter()
        results = ex.run(jobs)
        wall = time.perf_counter() - t0
        assert all(r.verdict == "ok" for r in results)
        return wall

    local = LocalExecutor(backend=sleeping(), slots=slots, state_dir=tmp)
    server = RedisServer(tmp, password="bench-token")
    procs: list[subprocess.Popen[bytes]] = []
    try:

        def worker(name: str) -> subprocess.Popen[bytes]:
            p = start_worker(
                server.url, tmp, name=name, slots=args.slots, prefetch=args.slots,
                visibility_s=VISIBILITY_S,
            )  # fmt: skip
            procs.append(p)
            return p

        for i in range(args.workers):
            worker(f"w{i}")
        with QueueExecutor(server.url, max_depth=max(10_000, 2 * args.jobs)) as ex:
            wait_workers(ex, args.workers, 2 * args.slots)
            # Rounds alternate the two, so a change in the machine's load touches both.
            local_walls, clean_walls = [], []
            for _ in range(args.rounds):
                local_walls.append(timed(local))
                clean_walls.append(timed(ex))
            local_wall = statistics.median(local_walls)
            clean_wall = statistics.median(clean_walls)

            arrivals: list[tuple[float, str]] = []
            t0 = time.perf_counter()
            handle = ex.submit(
                jobs, on_result=lambda r: arrivals.append((time.perf_counter(), r.worker))
            )
            killed_at = added_at = None
            while not handle.wait(0.01):
                if killed_at is None and handle.finished >= args.jobs // 4:
                    procs[0].send_signal(signal.SIGKILL)
                    killed_at = time.perf_counter()
                if added_at is None and handle.finished >= args.jobs // 2:
                    worker("added")
                    added_at = time.perf_counter()
            end = time.perf_counter()
            fault_wall = end - t0
            # Slot-seconds the fleet had: the killed worker's until its death, the added
            # one's from its first result (it took that long to start), the others' all along.
            joined = min((t for t, w in arrivals if w == "added"), default=end)
            alive = (killed_at or end) - t0 + (args.workers - 1) * fault_wall + (end - joined)
            results = handle.gather(0)
            by_index = stored(server.url, handle.id)

            trips = []
            for _ in range(20):
                t = time.perf_counter()
                ex.run(jobs[:1])
                trips.append(time.perf_counter() - t - args.job_ms / 1000)
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        server.stop()
        local.close()

    done = {r.index for r in results if r.outcome == "done" and r.verdict == "ok"}
    out = {
        "jobs": args.jobs,
        "workers": args.workers,
        "slots_per_worker": args.slots,
        "job_ms": args.job_ms,
        "local_jobs_per_s": round(args.jobs / local_wall, 1),
        "queue_jobs_per_s": round(args.jobs / clean_wall, 1),
        "throughput_ratio": round(
            statistics.median(a / b for a, b in zip(local_walls, clean_walls, strict=True)), 3
        ),
        "throughput_ratio_rounds": [
            round(a / b, 3) for a, b in zip(local_walls, clean_walls, strict=True)
        ],
        "overhead_ms_per_job": round((clean_wall - local_wall) * slots / args.jobs * 1000, 3),
        "roundtrip_ms": round(statistics.median(trips) * 1000, 2),
        "fault_jobs_per_s": round(args.jobs / fault_wall, 1),
        "throughput_ratio_with_faults": round(local_wall / fault_wall, 3),
        # Jobs per slot-second the fleet had (a killed worker's slots are gone, an added one's
        # come when it has started), against the local executor's: the fleet's efficiency
        # under faults, apart from the capacity the faults took away.
        "per_slot_ratio_with_faults": round(
            (args.jobs / (alive * args.slots)) / (args.jobs / (slots * local_wall)), 3
        ),
        "worker_killed": killed_at is not None,
        "worker_added": added_at is not None,
        "added_worker_start_s": round(joined - added_at, 2) if added_at else None,
        "claimed_jobs": sum(r.attempts > 1 for r in results),
        "lost_jobs": args.jobs - len(done),
        "duplicated_results": len(by_index) - len(set(by_index)),
        "visibility_s": VISIBILITY_S,
        "load_avg_before": [round(x, 2) for x in load_before],
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
