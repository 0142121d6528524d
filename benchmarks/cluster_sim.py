"""Toward internet scale, by simulation: the cluster executor's real scheduling code
(``FairQueue``: priorities, fairness, longest-first; ``RuntimeEstimator``: estimates learned
from results; the driver's ``Node`` capacity accounting and ``RoundRobin`` spreading)
driven by a discrete-event model of 1,000 nodes x 16 slots, heavy-tailed job times and
node failures. Ends with one JSON line.

    .venv/bin/python benchmarks/cluster_sim.py [--nodes 1000] [--slots 16] [--jobs 160000]

What is simulated (the clock is simulated; the scheduling code is the real one):

- Steps: ``--steps`` training steps, each submitted when the last ends, drawing on the same
  problems, so estimates learned in one step order the next (longest first). The lower
  bound of a step is ``max(its work / slots, its longest job)``.
- Jobs: ``--problems`` problems, each with its own median run time (lognormal across
  problems), each job's time lognormal around it (``--job-sigma``, default 1): a heavy tail where a few jobs
  run 10x the median, where the time limit (``--cap``) ends them. Two callers (a trainer's step at HIGH priority, an evaluation at
  NORMAL) submit at time 0.
- The driver is one thread: each job costs it ``--driver-us`` of CPU (half to dispatch, half
  to take the result; default: the driver CPU per job ``benchmarks/cluster.py`` measured),
  so a driver that cannot keep up shows as idle slots and a longer makespan.
- A message between driver and node takes ``--rtt-ms`` / 2. A node holds its slots plus
  ``prefetch`` items, as the real driver feeds it.
- Failures: ``--failures`` nodes die at random times; the driver sees each death
  ``--detect-s`` later, puts the node's jobs back in the queue as their next attempt, and
  the node comes back ``--rejoin-s`` after dying.

Reported: each step's makespan against its lower bound, slot
utilisation, how often the driver was the bottleneck, and the real scheduler code's CPU per
job in this process (queue, estimates, spreading), measured, not simulated.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import json
import math
import random
import time
from collections import deque
from dataclasses import dataclass, field

from assay.executor.ray._nodes import Node, RoundRobin
from assay.scheduler import HIGH, NORMAL, FairQueue, RuntimeEstimator, Task


@dataclass(eq=False)
class Job:
    id: int
    keys: tuple[str, ...]
    duration: float
    attempt: int = 1
    done: bool = False


@dataclass(eq=False)
class SimNode:
    node: Node
    slots: int
    inbox: deque[tuple[int, Job]] = field(default_factory=deque)
    running: int = 0
    alive: bool = True
    epoch: int = 0  # bumped at each death: events of an earlier life are ignored


class Sim:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        self.queue = FairQueue(10**9)
        self.estimator = RuntimeEstimator(None, default_s=0.05)
        self.events: list[tuple[float, int, str, object]] = []
        self.seq = itertools.count()
        self.tokens = itertools.count()
        self.nodes = [
            SimNode(
                Node(f"n{i}", f"n{i}", None, args.slots, args.slots + args.prefetch), args.slots
            )
            for i in range(args.nodes)
        ]
        self.room = {s.node.node_id: s for s in self.nodes}
        self.driver_free_at = 0.0
        self.driver_busy_s = 0.0
        self.sched_cpu_s = 0.0  # real CPU spent in the scheduler's code
        self.slot_busy_s = 0.0
        self.finished = 0
        self.reruns = 0
        self.lost = 0

    def at(self, t: float, kind: str, data: object) -> None:
        heapq.heappush(self.events, (t, next(self.seq), kind, data))

    # -- workload ---------------------------------------------------------------------------
    def workload(self) -> list[Job]:
        a = self.args
        medians = [math.exp(self.rng.gauss(math.log(a.median_s), 0.8)) for _ in range(a.problems)]
        jobs = []
        for i in range(a.jobs):
            p = self.rng.randrange(a.problems)
            d = math.exp(self.rng.gauss(math.log(medians[p]), a.job_sigma))
            d = min(d, a.cap * a.median_s)  # the time limit ends the longest runs
            jobs.append(Job(i, (f"p{p}|python", "per-test|python"), d))
        return jobs

    def submit(self, jobs: list[Job]) -> None:
        half = len(jobs) // 2
        callers = [("trainer", HIGH, jobs[:half]), ("eval", NORMAL, jobs[half:])]
        if self.args.one_caller:
            callers = [("trainer", HIGH, jobs)]
        for seq, (caller, prio, part) in enumerate(callers):
            t0 = time.process_time()
            tasks = [Task(j, caller, prio, self.estimator.estimate(j.keys, 1.0), seq) for j in part]
            self.queue.put_many(tasks)
            self.sched_cpu_s += time.process_time() - t0

    # -- driver -----------------------------------------------------------------------------
    def dispatch(self, now: float) -> None:
        """One dispatch round of the real code: take what fits, spread it round robin."""
        if self.driver_free_at > now:
            return
        # Nodes with room, kept as results free it (the driver's own view, without a scan
        # of every node per round).
        live = [s for s in self.room.values() if s.alive and s.node.free > 0]
        self.room = {s.node.node_id: s for s in live}
        if not live or self.queue.depth() == 0:
            return
        room = sum(s.node.free for s in live)
        t0 = time.process_time()
        tasks = []
        while len(tasks) < min(room, 512 * len(live)):
            task = self.queue.get(timeout=0)
            if task is None:
                break
            tasks.append(task)
        spread = RoundRobin([s.node for s in live])
        by_node = {s.node.node_id: s for s in live}
        sends: dict[str, list[tuple[int, Job]]] = {}
        for task in tasks:
            node = spread.pick()
            assert node is not None
            spread.use(node)
            token = next(self.tokens)
            node.outstanding[token] = task  # type: ignore[assignment]
            sends.setdefault(node.node_id, []).append((token, task.payload))
        self.sched_cpu_s += time.process_time() - t0
        for s in live:
            if s.node.free == 0:
                self.room.pop(s.node.node_id, None)
        if not tasks:
            return
        cost = len(tasks) * self.args.driver_us / 2e6
        self.driver_busy_s += cost
        self.driver_free_at = now + cost
        for node_id, items in sends.items():
            s = by_node[node_id]
            self.at(self.driver_free_at + self.args.rtt_ms / 2000, "arrive", (s, s.epoch, items))
        self.at(self.driver_free_at, "driver", None)

    def result(self, now: float, s: SimNode, token: int, job: Job, ran_s: float) -> None:
        if token not in s.node.outstanding:
            return  # its node was declared dead first: the job was already queued again
        start = max(now, self.driver_free_at)
        cost = self.args.driver_us / 2e6
        self.driver_free_at = start + cost
        self.driver_busy_s += cost
        t0 = time.process_time()
        del s.node.outstanding[token]
        if s.alive:
            self.room[s.node.node_id] = s
        self.estimator.observe(job.keys, ran_s, 1.0)
        self.sched_cpu_s += time.process_time() - t0
        job.done = True
        self.finished += 1
        self.dispatch(self.driver_free_at)

    def declare_dead(self, now: float, s: SimNode) -> None:
        self.room.pop(s.node.node_id, None)
        lost = list(s.node.outstanding.values())
        s.node.outstanding.clear()
        t0 = time.process_time()
        again = []
        for task in lost:
            job: Job = task.payload  # type: ignore[attr-defined]
            job.attempt += 1
            self.reruns += 1
            again.append(Task(job, task.caller, task.priority, task.estimate, task.batch_seq))  # type: ignore[attr-defined]
        self.queue.put_many(again, force=True)
        self.sched_cpu_s += time.process_time() - t0
        self.dispatch(now)

    # -- nodes ------------------------------------------------------------------------------
    def start_next(self, now: float, s: SimNode) -> None:
        while s.alive and s.running < s.slots and s.inbox:
            token, job = s.inbox.popleft()
            s.running += 1
            self.slot_busy_s += job.duration
            self.at(now + job.duration, "done", (s, s.epoch, token, job))

    def step(self, jobs: list[Job], now: float) -> float:
        """Submit one training step's jobs at ``now``; run until they are all done."""
        target = self.finished + len(jobs)
        self.submit(jobs)
        self.at(max(now, self.driver_free_at), "driver", None)
        a = self.args
        while self.events and self.finished < target:
            now, _, kind, data = heapq.heappop(self.events)
            if kind == "driver":
                self.dispatch(now)
            elif kind == "arrive":
                s, epoch, items = data  # type: ignore[misc]
                if s.alive and epoch == s.epoch:
                    s.inbox.extend(items)
                    self.start_next(now, s)
            elif kind == "done":
                s, epoch, token, job = data  # type: ignore[misc]
                if epoch != s.epoch or not s.alive:
                    continue
                s.running -= 1
                self.start_next(now, s)
                self.at(now + a.rtt_ms / 2000, "result", (s, token, job))
            elif kind == "result":
                s, token, job = data  # type: ignore[misc]
                self.result(now, s, token, job, job.duration)
            elif kind == "die":
                s = data  # type: ignore[assignment]
                s.alive, s.epoch = False, s.epoch + 1
                s.inbox.clear()
                s.running = 0
                self.at(now + a.detect_s, "detected", s)
                self.at(now + a.rejoin_s, "rejoin", s)
            elif kind == "detected":
                self.declare_dead(now, data)  # type: ignore[arg-type]
            elif kind == "rejoin":
                s = data  # type: ignore[assignment]
                s.alive = True
                self.room[s.node.node_id] = s
                self.dispatch(now)
        return now

    def run(self) -> dict[str, object]:
        a = self.args
        jobs = self.workload()
        for s in self.rng.sample(self.nodes, min(a.failures, len(self.nodes))):
            self.at(self.rng.uniform(0, a.fail_window_s), "die", s)
        total_slots = a.nodes * a.slots
        per_step = len(jobs) // a.steps
        now, ratios, work = 0.0, [], 0.0
        for k in range(a.steps):
            part = jobs[k * per_step : (k + 1) * per_step]
            started = now
            now = self.step(part, now)
            step_work = sum(j.duration for j in part)
            work += step_work
            bound = max(step_work / total_slots, max(j.duration for j in part))
            ratios.append(round((now - started) / bound, 3))
        jobs = jobs[: a.steps * per_step]
        return {
            "nodes": a.nodes,
            "slots": total_slots,
            "jobs": len(jobs),
            "steps": a.steps,
            "median_job_s": a.median_s,
            "makespan_s": round(now, 3),
            "step_makespan_over_bound": ratios,
            "slot_utilisation": round(work / (now * total_slots), 3),
            "driver_busy_fraction": round(self.driver_busy_s / now, 3),
            "driver_us_per_job_assumed": a.driver_us,
            "scheduler_cpu_us_per_job": round(self.sched_cpu_s / len(jobs) * 1e6, 1),
            "failed_nodes": min(a.failures, a.nodes),
            "reruns": self.reruns,
            "all_done_once": self.finished == len(jobs) and all(j.done for j in jobs),
        }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--slots", type=int, default=16)
    ap.add_argument("--prefetch", type=int, default=8)
    ap.add_argument("--jobs", type=int, default=320_000)
    ap.add_argument(
        "--cap", type=float, default=10.0, help="time limit, in medians (longest job possible)"
    )
    ap.add_argument("--problems", type=int, default=500)
    ap.add_argument(
        "--median-s",
        type=float,
        nargs="+",
        default=[1.0, 0.05],
        help="median job seconds; one run per value (1 s: a judged submission with tens of "
        "tests; 50 ms: one small test)",
    )
    ap.add_argument("--driver-us", type=float, default=92.0, help="driver CPU per job (us)")
    ap.add_argument("--rtt-ms", type=float, default=2.0)
    ap.add_argument("--failures", type=int, default=20, help="nodes that die during the run")
    ap.add_argument("--fail-window-s", type=float, default=5.0)
    ap.add_argument("--detect-s", type=float, default=1.5)
    ap.add_argument("--rejoin-s", type=float, default=30.0)
    ap.add_argument(
        "--job-sigma",
        type=float,
        default=1.0,
        help="spread of a job's time around its problem's median (lognormal sigma; 0: every "
        "job of a problem takes the same time, so learned estimates are exact)",
    )
    ap.add_argument(
        "--steps", type=int, default=4, help="training steps (each submitted after the last)"
    )
    ap.add_argument(
        "--one-caller",
        action="store_true",
        help="one caller, one priority (default: a HIGH trainer and a NORMAL evaluation, whose "
        "jobs wait for the trainer's: the per-step lower bound ignores that order)",
    )
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    runs = []
    for median in args.median_s:
        args.median_s = median
        started = time.perf_counter()
        r = Sim(args).run()
        r["simulation_wall_s"] = round(time.perf_counter() - started, 1)
        feeds = 1e6 / args.driver_us * median
        r["slots_one_driver_feeds"] = round(feeds)
        print(
            f"{r['nodes']} nodes x {args.slots} slots, {r['jobs']} jobs in {args.steps} steps "
            f"(median {median} s), {r['failed_nodes']} node failures ({r['reruns']} reruns): "
            f"makespan / lower bound per step {r['step_makespan_over_bound']}, "
            f"slots {r['slot_utilisation']:.0%} busy, driver "
            f"{r['driver_busy_fraction']:.0%} busy; scheduler code {r['scheduler_cpu_us_per_job']} "
            f"us/job; one driver at {args.driver_us:g} us/job feeds ~{feeds:.0f} slots"
        )
        runs.append(r)
    print(json.dumps({"runs": runs}))


if __name__ == "__main__":
    main()
