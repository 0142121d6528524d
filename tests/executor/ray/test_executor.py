"""RayExecutor on a real Ray cluster (head + two workers on this machine): same results as
the local executor, the global order kept across nodes, deadlines, cancellation, records."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _ray_backends as rb
import pytest
import ray

from assay import (
    JobResult,
    Limits,
    LocalExecutor,
    Problem,
    RunJob,
    Submission,
    TestCase,
)
from assay.errors import Overloaded
from assay.executor.ray import RayExecutor
from assay.integrations.verl import compute_score_batch
from assay.scheduler import HIGH, LOW, RuntimeEstimator
from assay.telemetry import MemoryWriter

# The cluster starts (and nodes come back) inside a test's setup: minutes on a busy machine.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray"), pytest.mark.timeout(600)]

ADD = "a, b = map(int, input().split())\nprint(a + b)\n"
PROBLEM = Problem(
    "add",
    [TestCase("stdio", "1 2\n", "3\n"), TestCase("stdio", "5 5\n", "10\n")],
    # 3 s of CPU: on a loaded host (a parallel run of tests/executor) the 1 GiB bomb below
    # ran out of 1 s before it reached 256 MiB on one executor (time_limit) and not on the
    # other; this compares the executors, not that race.
    Limits(time_s=3.0, memory_mb=256),
)
PROGRAMS = {
    "accepted": ADD,
    "wrong_answer": "print(3)\n",
    "runtime_error": "raise SystemExit(3)\n",
    "time_limit": "while True:\n    pass\n",
    "memory_limit": "x = bytearray(1 << 30)\nprint(len(x))\n",
}


def stamped(ex: RayExecutor | None = None, **kw: object) -> RayExecutor:
    kw.setdefault("slots_per_node", 2)
    kw.setdefault("records", MemoryWriter())
    kw.setdefault("estimator", RuntimeEstimator())
    kw.setdefault("backend_factory", rb.stamped_backend)
    return RayExecutor(**kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def records_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("records")


@pytest.fixture(scope="module")
def sandboxed(ray_cluster: Any, records_dir: Path) -> Iterator[RayExecutor]:
    """One executor on the real sandboxes for this module (its agents' pools start once)."""
    ray_cluster.ensure()
    with RayExecutor(slots_per_node=2, records=records_dir, estimator=RuntimeEstimator()) as ex:
        yield ex


def _differences(remote: list[JobResult], here: list[JobResult]) -> str:
    """The jobs whose verdicts differ, with what each run measured (CPU s, wall s, peak MiB
    per test): a 1 GiB bomb judged ``time_limit`` on one executor was not explained when
    this test flaked without them."""

    def measured(r: JobResult) -> object:
        if r.judgement is not None:
            return [
                (t.verdict, round(t.cpu_s, 3), round(t.wall_s, 3), t.peak_memory_bytes >> 20)
                for t in r.judgement.tests
            ]
        return r.result and (r.result.status, round(r.result.cpu_s, 3), round(r.result.wall_s, 3))

    return "\n".join(
        f"job {a.index}: Ray {a.verdict} {measured(a)}, local {b.verdict} {measured(b)}"
        for a, b in zip(remote, here, strict=True)
        if (a.verdict, a.reward) != (b.verdict, b.reward)
    )


def test_same_verdicts_as_the_local_executor(sandboxed: RayExecutor, runner: object) -> None:
    jobs: list[Submission | RunJob] = [
        Submission(PROBLEM, code) for code in PROGRAMS.values() for _ in range(2)
    ]
    jobs += [RunJob("print('hi')"), RunJob("import sys; sys.exit(4)")]
    remote = sandboxed.run(jobs, caller="trainer")
    with LocalExecutor(runner, slots=2, records="off", estimator=RuntimeEstimator()) as local:  # type: ignore[arg-type]
        here = local.run(jobs, caller="trainer")
    assert [(r.verdict, r.reward) for r in remote] == [(r.verdict, r.reward) for r in here], (
        _differences(remote, here)
    )
    assert [r.verdict for r in remote[: 2 * len(PROGRAMS) : 2]] == list(PROGRAMS)
    assert remote[-2].result is not None and remote[-2].result.stdout == b"hi\n"
    # Identical jobs ran once (in-flight dedup on the driver), and the work was spread.
    assert sum(r.cache_hit for r in remote) == len(PROGRAMS)
    assert len({r.worker.split("/w")[0] for r in remote if not r.cache_hit}) >= 2
    # Estimates learned from every node's runs serve the driver's scheduler.
    assert sandboxed.estimator.known("add|python") is not None


def test_records_reach_one_target_and_metrics_count_the_cluster(
    sandboxed: RayExecutor, records_dir: Path
) -> None:
    jobs = [Submission(PROBLEM, ADD + f"# {i}\n") for i in range(12)]
    results = sandboxed.run(jobs, caller="rec")
    assert {r.verdict for r in results} == {"accepted"}
    workers = {r.worker.split("/w")[0] for r in results}
    sandboxed.records.flush()
    rows = [json.loads(line) for f in records_dir.rglob("*.jsonl") for line in open(f)]
    rows = [r for r in rows if r["caller"] == "rec"]
    assert sorted(r["job_id"] for r in rows) == sorted(r.job_id for r in results)
    assert {r["worker"].split("/w")[0] for r in rows} == workers
    text = sandboxed.metrics.render().decode()
    done = re.search(
        r'assay_jobs_completed_total\{language="python",verdict="accepted"\} (\S+)', text
    )
    assert done and float(done.group(1)) >= 12
    # Per-node capacity: one series per node agent, named as its workers are (issue 19).
    nodes = set(re.findall(r'assay_node_slots\{node="([^"]+)"\} (\S+)', text))
    assert {name for name, _ in nodes} >= workers, (nodes, workers)
    assert all(float(n) >= 1 for _, n in nodes)
    assert re.search(r'assay_node_memory_budget_bytes\{node="[^"]+"\} [1-9]', text)


def test_large_problems_travel_once_per_node(cluster: Any) -> None:
    big = Problem("big", [TestCase("stdio", "x" * 200_000, "y")] * 4)
    jobs = [Submission(big, f"# {i}") for i in range(24)]
    with stamped(backend_factory=rb.size_backend) as ex:
        results = ex.run(jobs)
        # One object reference for the problem on the driver, whatever the number of jobs.
        assert len(ex._problem_refs._payloads) == 1
        (payload,) = ex._problem_refs._payloads.values()
        assert isinstance(payload, ray.ObjectRef)
    assert {r.reason for r in results} == {"800000"}


def test_small_problems_travel_inside_the_first_message_to_each_node(cluster: Any) -> None:
    problems = [Problem(f"p{k}", [TestCase("stdio", "x" * (100 + k), "y")]) for k in range(3)]
    jobs = [Submission(problems[i % 3], f"# {i}") for i in range(60)]
    with stamped(backend_factory=rb.size_backend) as ex:
        results = ex.run(jobs)
        # Pickled once on the driver, no object in the store; each node was sent each
        # problem it ran a job of (which ones: the dispatch's choice, and on a loaded host a
        # node may get the jobs of only some), none twice.
        assert all(isinstance(p, bytes) for p in ex._problem_refs._payloads.values())
        assert len(ex._problem_refs._payloads) == 3
        ran: dict[str, set[str]] = {n.name: set() for n in ex.nodes.snapshot()}
        for job, r in zip(jobs, results, strict=True):
            ran[r.worker.rsplit("/", 1)[0]].add(job.problem.id)
        sent = {n.name: {key.split(":")[0] for key in n.problems} for n in ex.nodes.snapshot()}
        assert sent == ran  # keys are "<id>:<digest of its tests>"
        assert ex.stats["problems_sent_again"] == 0
    assert [r.reason for r in results] == [str(100 + i % 3) for i in range(60)]


def test_a_node_without_the_problem_it_was_said_to_hold_gets_it_again(cluster: Any) -> None:
    first, second = (Problem(f"q{k}", [TestCase("stdio", "z" * (10 + k), "y")]) for k in range(2))
    with stamped(backend_factory=rb.size_backend) as ex:
        assert [r.reason for r in ex.run([Submission(first, "# 0")])] == ["10"]
        # The driver wrongly believes every node holds the second problem (as after an
        # agent restarted under its node): the jobs still run, each with its problem.
        key = f"q1:{ex._driver_backend.fingerprint(second)}"
        for node in ex.nodes.snapshot():
            node.problems[key] = None
        results = ex.run([Submission(second, f"# {i}") for i in range(4)])
        # At least one node answered that it lacked it; how many did before the resent
        # problem reached them depends on which nodes the four jobs landed on.
        assert ex.stats["problems_sent_again"] >= 1
    assert [(r.verdict, r.reason) for r in results] == [("ok", "11")] * 4


def test_priorities_hold_across_nodes(cluster: Any) -> None:
    with stamped() as ex:
        capacity = sum(n["capacity"] for n in ex.node_info())
        low = ex.submit([rb.job(i, 0.1) for i in range(40)], priority=LOW, caller="bg")
        time.sleep(0.3)
        high = ex.submit([rb.job(100 + i, 0.1) for i in range(12)], priority=HIGH, caller="step")
        high_starts = [rb.start(r) for r in high.gather(timeout=60)]
        low_results = low.gather(timeout=60)
    last_high = max(high_starts)
    # Low jobs that started after the high batch arrived and before its last job started:
    # at most what the nodes already held (slots + prefetch), never the queued ones.
    submitted = min(high_starts) - 0.05
    overtaking = [r for r in low_results if submitted < rb.start(r) < last_high]
    assert len(overtaking) <= capacity, (len(overtaking), capacity)
    assert max(rb.start(r) for r in low_results) > last_high


def test_fairness_between_callers_across_nodes(cluster: Any) -> None:
    with stamped() as ex:
        capacity = sum(n["capacity"] for n in ex.node_info())
        a = ex.submit([rb.job(i, 0.05) for i in range(40)], caller="a")
        b = ex.submit([rb.job(100 + i, 0.05) for i in range(40)], caller="b")
        ra, rb_ = a.gather(timeout=60), b.gather(timeout=60)
    starts = sorted([(rb.start(r), "a") for r in ra] + [(rb.start(r), "b") for r in rb_])
    # Caller a submitted first, yet b gets its share from the start (not after a's 40):
    # from the first job after what the nodes already held when b's arrived (their slots and
    # prefetch, at most ``capacity`` of a's), as with priorities.
    assert capacity < 20, capacity
    window = [c for _, c in starts[capacity : capacity + 40]]
    assert 14 <= window.count("b") <= 26, (window.count("b"), capacity)


def test_deadline_and_cancel_across_nodes(cluster: Any) -> None:
    with stamped() as ex:
        late = ex.submit([rb.job(i, 0.4) for i in range(30)], deadline_s=0.6)
        results = late.gather(timeout=30)
        outcomes = [r.outcome for r in results]
        assert "done" in outcomes and "deadline" in outcomes
        assert all(r.reward is None for r in results if r.outcome == "deadline")
        cancelled = ex.submit([rb.job(100 + i, 0.4) for i in range(30)])
        time.sleep(0.5)
        n = cancelled.cancel()
        assert n > 10
        assert {r.outcome for r in cancelled.gather(timeout=1)} <= {"done", "cancelled"}
        # Work nobody waits for left the nodes' queues: a new batch runs at once.
        started = time.monotonic()
        again = ex.run([rb.job(200 + i, 0.0) for i in range(6)])
        assert time.monotonic() - started < 2.0
        assert {r.verdict for r in again} == {"ok"}
        deadline = time.monotonic() + 5
        while ex.busy and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ex.busy == 0


def test_streaming_callbacks_and_async(cluster: Any) -> None:
    import asyncio

    with stamped() as ex:
        seen: list[int] = []
        handle = ex.submit(
            [rb.job(i, 0.01) for i in range(10)], on_result=lambda r: seen.append(r.index)
        )
        assert sorted(r.index for r in handle) == list(range(10))
        assert sorted(seen) == list(range(10))

        async def main() -> list[int]:
            return [r.index async for r in ex.submit([rb.job(50 + i) for i in range(5)])]

        assert sorted(asyncio.run(main())) == list(range(5))


def test_integrations_take_the_cluster_executor(sandboxed: RayExecutor) -> None:
    gt = {"inputs": ["1 2\n"], "outputs": ["3\n"]}
    rows = compute_score_batch(
        ["a", "a"],
        [f"```python\n{ADD}```", "```python\nprint(0)\n```"],
        [gt, gt],
        executor=sandboxed,
    )
    assert [r["score"] for r in rows] == [1.0, 0.0]


def test_a_full_queue_refuses_the_whole_batch(cluster: Any) -> None:
    with stamped(max_queued=5) as ex:
        with pytest.raises(Overloaded):
            ex.submit([rb.job(i) for i in range(10)])
        assert {r.verdict for r in ex.run([rb.job(i) for i in range(5)])} == {"ok"}


def test_refills_travel_with_the_polls(cluster: Any) -> None:
    # Each Ray call costs the driver and the agent more than a job's dispatch: the room a
    # node's results free is refilled by the next poll of that node, not by a call of its own.
    with stamped() as ex:
        capacity = sum(n["capacity"] for n in ex.node_info())
        results = ex.run([rb.job(i, 0.01) for i in range(120)])
        with_polls, own = ex.stats["items_sent_with_polls"], ex.stats["items_sent_with_submits"]
    assert [r.verdict for r in results] == ["ok"] * 120
    assert with_polls + own == 120
    # The dispatcher's own messages: the first fill of each node, and a node whose room a
    # refill left (the queue was momentarily empty) taking work later.
    assert own <= 2 * capacity, (with_polls, own, capacity)
