"""Faults on a real Ray cluster: a node removed mid-batch, a node agent killed with SIGKILL,
a job that kills its node, a sandbox left on a dead node. No job is lost, none is counted
twice, and nothing is left running."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from typing import Any

import _ray_backends as rb
import pytest

from assay import Limits, RunJob
from assay.executor import JobResult
from assay.executor.ray import RayExecutor
from assay.scheduler import RuntimeEstimator
from assay.telemetry import MemoryWriter

# The cluster starts (and nodes come back) inside a test's setup: minutes on a busy machine.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray"), pytest.mark.timeout(600)]


def executor(**kw: Any) -> RayExecutor:
    kw.setdefault("slots_per_node", 2)
    kw.setdefault("records", MemoryWriter())
    kw.setdefault("estimator", RuntimeEstimator())
    kw.setdefault("backend_factory", rb.stamped_backend)
    return RayExecutor(**kw)


def check_exactly_once(results: list[JobResult], delivered: list[JobResult], n: int) -> None:
    """Every job has one result, ``done``, and the callback saw each index once."""
    assert len(results) == n
    assert [r.index for r in results] == list(range(n))
    assert {r.outcome for r in results} == {"done"}
    assert {r.verdict for r in results} == {"ok"}
    counts = Counter(r.index for r in delivered)
    assert set(counts) == set(range(n)) and set(counts.values()) == {1}


def node_of(ex: RayExecutor, name: str) -> dict[str, Any]:
    return next(n for n in ex.node_info() if n["name"] == name)


def test_a_node_removed_mid_batch_loses_and_duplicates_nothing(cluster: Any) -> None:
    with executor() as ex:
        records = ex.records
        delivered: list[JobResult] = []
        n = 40
        handle = ex.submit([rb.job(i, 0.2) for i in range(n)], on_result=delivered.append)
        # The victim is a worker node whose agent holds jobs now (a node an earlier test
        # added may not have its agent yet, and removing an idle node tests nothing).
        deadline = time.monotonic() + 30
        victims: list[Any] = []
        while not victims and time.monotonic() < deadline:
            holding = {i["node_id"] for i in ex.node_info() if i["outstanding"]}
            victims = [w for w in cluster.workers if w.node_id in holding]
            time.sleep(0.05)
        assert victims, ex.node_info()
        cluster.remove(victims[0])
        results = handle.gather(timeout=90)
        check_exactly_once(results, delivered, n)
        assert ex.stats["node_failures"] >= 1
        rerun = [r for r in results if r.attempts == 2]
        assert rerun, "the removed node's jobs ran again elsewhere"
        assert all(r.attempts in (1, 2) for r in results)
        # No result was written twice either.
        assert isinstance(records, MemoryWriter)
        ids = [row["job_id"] for row in records.records]
        assert len(ids) == len(set(ids)) == n


def test_a_node_agent_killed_with_sigkill_loses_and_duplicates_nothing(cluster: Any) -> None:
    with executor() as ex:
        delivered: list[JobResult] = []
        n = 40
        handle = ex.submit([rb.job(i, 0.2) for i in range(n)], on_result=delivered.append)
        time.sleep(0.5)
        busy = max(ex.node_info(), key=lambda n: n["outstanding"])
        os.kill(busy["pid"], signal.SIGKILL)
        results = handle.gather(timeout=90)
        check_exactly_once(results, delivered, n)
        assert any(r.attempts == 2 for r in results)
        assert all(rb.pid(r) != busy["pid"] or r.attempts == 1 for r in results)
        # The node is still in the cluster: a new agent takes its place.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if any(i["node_id"] == busy["node_id"] for i in ex.node_info()):
                break
            time.sleep(0.2)
        replaced = [i for i in ex.node_info() if i["node_id"] == busy["node_id"]]
        assert replaced and replaced[0]["pid"] != busy["pid"]


def test_a_job_that_kills_its_node_twice_ends_sandbox_error(cluster: Any) -> None:
    with executor() as ex:
        jobs = [rb.job(i, 0.05) for i in range(10)] + [rb.job(99, kill=True)]
        results = ex.run(jobs)
    killer = results[-1]
    assert killer.outcome == "done" and killer.verdict == "sandbox_error"
    assert killer.reward is None and killer.attempts == 2
    assert "nodes died while running this job" in killer.reason
    others = results[:-1]
    assert {r.verdict for r in others} == {"ok"}


def test_agents_on_one_host_use_distinct_uid_blocks(cluster: Any) -> None:
    with executor() as ex:
        info = ex.node_info()
        assert len(info) == 3
        assert len({i["uid_base"] for i in info}) == 3


def _uids_of_live_processes() -> dict[int, int]:
    out: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as fh:
                for line in fh:
                    if line.startswith("Uid:"):
                        out[int(entry)] = int(line.split()[1])
                        break
        except OSError:
            continue
    return out


def test_a_sandbox_left_on_a_dead_node_is_gone_with_it(cluster: Any) -> None:
    sleeper = RunJob("import time\ntime.sleep(6)\n", limits=Limits(time_s=5, wall_s=10))
    with RayExecutor(slots_per_node=1, records="off", estimator=RuntimeEstimator()) as ex:
        blocks = {i["name"]: (i["uid_base"], i["pid"]) for i in ex.node_info()}
        handle = ex.submit([sleeper] * 3)
        count = int(os.environ.get("ASSAY_UID_COUNT") or 4096)

        def sandboxed(base: int) -> list[int]:
            return [p for p, u in _uids_of_live_processes().items() if base <= u < base + count]

        deadline = time.monotonic() + 30
        running = {}
        while time.monotonic() < deadline and len(running) < 3:
            running = {name: sandboxed(base) for name, (base, _) in blocks.items()}
            running = {k: v for k, v in running.items() if v}
            time.sleep(0.2)
        assert len(running) == 3, running
        worker_names = [n for n in blocks if n != ex.node_info()[0]["name"]]
        victim = cluster.workers[0]
        cluster.remove(victim)
        # Which agent was on the removed node: the one whose process is gone.
        deadline = time.monotonic() + 15
        dead: list[str] = []
        while time.monotonic() < deadline and not dead:
            dead = [n for n, (_, pid) in blocks.items() if not os.path.exists(f"/proc/{pid}")]
            time.sleep(0.2)
        assert len(dead) == 1, (dead, worker_names)
        base = blocks[dead[0]][0]
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and sandboxed(base):
            time.sleep(0.2)
        assert sandboxed(base) == [], "a sandbox outlived its node"
        handle.cancel()
