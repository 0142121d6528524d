"""``RayExecutor``: the local executor's API and scheduler, with the slots spread over a Ray
cluster (one node agent per node).

The driver is a :class:`~assay.executor.LocalExecutor` whose slot threads are replaced by
three threads: a **dispatcher** that takes tasks from the one global
:class:`~assay.scheduler.FairQueue` (priority classes, fairness between callers,
longest-first from the estimates every node's results feed) and sends them in groups to
nodes with free capacity; a **receiver** that collects finished groups from every agent; and
a **membership** loop that starts an agent on each node that joins and declares nodes dead.
Everything after a run (retries of ``sandbox_error``, the result cache, in-flight dedup,
split jobs, deadlines, cancellation, records, metrics) is the local executor's own code,
running on the driver: records and metrics of the whole cluster are the driver's.

Faults: a node that dies (removed, or its agent killed) gives back everything it was
running; each such job runs again on another node as its next attempt. A job under which
nodes died ``node_deaths`` times (default 2) ends ``sandbox_error`` with ``reward=None``
instead of taking down node after node.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Unpack

from ... import defaults
from ...errors import ConfigError, ValidationError
from ...reward import RewardFn
from ...scheduler import Task
from ...sessions._base import SessionBase
from ...telemetry.metrics import NodeCapacity
from .._jobs import Part
from .._options import ExecutorOptions, with_defaults
from ..backend import Backend
from ..batch import BatchHandle
from ..types import Outcome
from ._agent import SESSION_CALLS, SESSIONS, NodeAgent
from ._dispatch import LINGER_S, POLL_S, Dispatching
from ._driver_backend import DriverBackend
from ._nodes import Node, Nodes, default_prefetch
from ._sessions import RemoteSession
from ._wire import ProblemRefs

log = logging.getLogger("assay.executor.ray")


class RayExecutor(Dispatching):
    """Runs batches on the nodes of a Ray cluster; same API as :class:`LocalExecutor`.

    >>> with RayExecutor("ray://head:10001") as ex:                 # doctest: +SKIP
    ...     results = ex.run([Submission(problem, code)] * 1000)

    ``address``: the Ray cluster (``"auto"``, ``"ray://host:10001"``, ...); None joins the
    one this process already initialised, or starts a local one. ``slots_per_node``: sandbox
    slots per node (default: its CPUs, fewer when its memory is short). ``prefetch``: items a
    node may hold beyond its slots (default: as many as its slots, at least 4, and more once
    its jobs turn out short: about 75 ms of queued work per slot, at most 8 items per slot;
    results and refills travel in groups of all but one of it). ``backend_factory`` builds
    each agent's backend (default: the sandbox); it must be picklable. ``autoscale``: ask
    the Ray autoscaler for a CPU per queued or running job (agents reserve no CPU, so an
    autoscaled cluster sees no demand otherwise). Node agents start on nodes that join and
    go with nodes that leave. The queue, cache, retry and record options are the local
    executor's (:class:`~assay.executor._options.ExecutorOptions`), applied on the driver.

    Records and metrics are the driver's (one records target, one ``/metrics`` for the
    whole cluster). Agent sessions (``Session(ex)``, ``SessionManager(ex)``) are held by the
    node agents, each pinned to its node (:mod:`._sessions`).
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        slots_per_node: int | None = None,
        prefetch: int | None = None,
        node_deaths: int = 2,
        backend_factory: Callable[[], Backend] | None = None,
        reward: RewardFn | None = None,
        wait_nodes_s: float = 60.0,
        autoscale: bool = True,
        init_kwargs: dict[str, Any] | None = None,
        **options: Unpack[ExecutorOptions],
    ) -> None:
        options = with_defaults(type(self).__name__, options)  # a misspelt name fails first
        try:
            import ray
        except ImportError:
            raise ConfigError("RayExecutor needs Ray: pip install 'assay[ray]'") from None
        if slots_per_node is not None and slots_per_node < 1:
            raise ValidationError("slots_per_node", "must be at least 1")
        if prefetch is not None and prefetch < 0:
            raise ValidationError("prefetch", "must be >= 0")
        if node_deaths < 1:
            raise ValidationError("node_deaths", "must be at least 1")
        self._ray = ray
        self._own_ray = not ray.is_initialized()
        if self._own_ray:
            try:
                ray.init(address=address, **(init_kwargs or {}))
            except (ConnectionError, ValueError, RuntimeError) as exc:
                raise ConfigError(f"cannot join the Ray cluster at {address!r}: {exc}") from None
        self._slots_per_node = slots_per_node
        self._prefetch = prefetch
        self._node_deaths = node_deaths
        self._agent_args = (backend_factory, reward)
        self._wait_nodes_s = wait_nodes_s
        self._autoscale = autoscale
        self._requested = -1
        #: Nodes whose agent failed to start: failures so far, and when to try again.
        self._start_failures: dict[str, int] = {}
        self._retry_at: dict[str, float] = {}
        self.nodes = Nodes()
        self._tokens = itertools.count()
        self._deaths: dict[tuple[str, int], int] = {}
        self._suspects: list[Task] = []
        self._stopping = threading.Event()
        self._dispatch_done = threading.Event()
        self._nodes_seen = time.monotonic()
        self.stats = {
            "lost_results_ignored": 0,
            "node_failures": 0,
            "agents_started": 0,
            "problems_sent_again": 0,
            # Items that went to a node with its poll (the refill for its results), and
            # in a message of their own (the dispatcher's: first fills, idle nodes).
            "items_sent_with_polls": 0,
            "items_sent_with_submits": 0,
        }
        self._driver_backend = DriverBackend()
        self._problem_refs = ProblemRefs(self._driver_backend.fingerprint)
        # Session calls in a thread group of their own (Ray's stubs do not list the option).
        groups: dict[str, Any] = {"concurrency_groups": {SESSIONS: SESSION_CALLS}}
        self._actor_cls = ray.remote(**groups)(NodeAgent)
        #: Open sessions (their proxies), by id.
        self._sessions: dict[str, RemoteSession] = {}
        # The cluster's slots are set once the agents answer.
        super().__init__(backend=self._driver_backend, slots=1, **options)
        self.metrics.bind_nodes(self._node_capacity)

    def _node_capacity(self) -> list[NodeCapacity]:
        """Each live node's slots, how many hold a job, its memory budget and the memory
        limits of the jobs it holds (running or prefetched): the driver's view, no call to
        the nodes at scrape time."""
        out = []
        for n in self.nodes.snapshot():
            held = [s.task.payload for s in list(n.outstanding.values())]
            mb = sum(p.job.info.limits.memory_mb for p in held if isinstance(p, Part))
            busy = min(n.slots, len(held))
            out.append(
                NodeCapacity(n.name, n.slots, busy, n.memory_budget_mb << 20, mb << 20, n.alive)
            )
        return out

    def open_session(
        self, files: Mapping[str, str | bytes] | None = None, **kwargs: Any
    ) -> RemoteSession:
        """A session held by a node agent (``open_session(ex, ...)``, ``Session(ex, ...)``,
        ``SessionManager(ex)``): ``Session``'s arguments."""
        return RemoteSession(self, files, **kwargs)

    def _session_node(self) -> Node:
        """The node for a new session: fewest sessions per slot, then most free capacity."""
        if self._closed:
            raise ValidationError("source", "this RayExecutor is closed")
        nodes = self.nodes.snapshot()
        if not nodes:
            raise ConfigError("no live node agent to hold a session")
        with self._lock:
            held = collections.Counter(s.node_id for s in self._sessions.values())
        return min(nodes, key=lambda n: (held[n.node_id] / n.slots, -n.free))

    def _session_opened(self, session: RemoteSession) -> None:
        with self._lock:
            self._sessions[session.id] = session
        session.on_end(self._session_ended)

    def _session_ended(self, session: SessionBase) -> None:
        with self._lock:
            if self._sessions.get(session.id) is session:
                del self._sessions[session.id]

    # -- start-up ---------------------------------------------------------------------------
    def _start_workers(self) -> list[threading.Thread]:
        self._membership_tick()
        deadline = time.monotonic() + self._wait_nodes_s
        # Every node the cluster has now gets its agent before the first batch, so that
        # batch is spread over all of them (nodes that join later are added as they come).
        while (not self.nodes.live or self.nodes.starting) and time.monotonic() < deadline:
            time.sleep(0.05)
            self._membership_tick()
        if not self.nodes.live:
            self._ray_shutdown()
            raise ConfigError(
                f"no Assay node agent answered within {self._wait_nodes_s:.0f} s: does the "
                "cluster have nodes with CPUs, and Assay installed on them?"
            )
        threads = [
            threading.Thread(target=self._dispatch_loop, name="assay-ray-dispatch", daemon=True),
            threading.Thread(target=self._receive_loop, name="assay-ray-receive", daemon=True),
            threading.Thread(target=self._membership_loop, name="assay-ray-nodes", daemon=True),
        ]
        for t in threads:
            t.start()
        return threads

    @staticmethod
    def _memory_budget(resources: dict[str, float]) -> int | None:
        """MiB the node's running programs may hold at once: a share of the memory Ray gives
        the node (a pod's limit on Kubernetes, not the whole host's as /proc/meminfo says)."""
        memory = resources.get("memory", 0)
        return int(memory / 2**20 * defaults.EXECUTOR_MEMORY_SHARE) or None

    def _node_slots(self, resources: dict[str, float]) -> int:
        if self._slots_per_node is not None:
            return self._slots_per_node
        cpus = int(resources.get("CPU", 0))
        memory_mb = int(resources.get("memory", 0) / 2**20)
        by_memory = memory_mb // defaults.RAY_SLOT_MEMORY_MB if memory_mb else cpus
        return max(1, min(cpus, by_memory))

    # -- membership -------------------------------------------------------------------------
    def _membership_loop(self) -> None:
        while not self._stopping.wait(defaults.RAY_MEMBERSHIP_S):
            try:
                self._membership_tick()
            except Exception:
                log.exception("cluster membership check failed")

    def _membership_tick(self) -> None:
        ray = self._ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        alive = {
            n["NodeID"]: n
            for n in ray.nodes()
            if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0
        }
        for node in self.nodes.snapshot():
            if node.node_id not in alive:
                self._node_died(node, "the node left the cluster")
        for node_id, n in alive.items():
            if node_id in self.nodes.live or node_id in self.nodes.starting:
                continue
            if time.monotonic() < self._retry_at.get(node_id, 0.0):
                continue  # its last agent failed to start: not one a second
            self.nodes.starting.add(node_id)
            slots = self._node_slots(n["Resources"])
            handle = self._actor_cls.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
                num_cpus=0,
                max_concurrency=8,
                max_restarts=0,
            ).remote(slots, *self._agent_args, self._memory_budget(n["Resources"]))
            self.stats["agents_started"] += 1
            budget = self._memory_budget(n["Resources"]) or 0
            threading.Thread(
                target=self._await_agent, args=(node_id, handle, slots, budget), daemon=True
            ).start()
        if self._autoscale:
            self._request_resources()
        total = self.nodes.slots()
        if total:
            self.slots = total
            self.metrics.bind_workers(lambda: self._busy, total)

    def _await_agent(self, node_id: str, handle: Any, slots: int, budget_mb: int = 0) -> None:
        try:
            info = self._ray.get(handle.info.remote(), timeout=self._wait_nodes_s)
        except Exception as exc:
            log.warning("node %s: its agent did not start: %s", node_id, exc)
            failures = self._start_failures.get(node_id, 0) + 1
            self._start_failures[node_id] = failures
            self._retry_at[node_id] = time.monotonic() + min(300.0, 5.0 * 2**failures)
            self.nodes.starting.discard(node_id)
            return
        prefetch = self._prefetch if self._prefetch is not None else default_prefetch(slots)
        node = Node(node_id, info["name"], handle, slots, slots + prefetch)
        node.adaptive = self._prefetch is None  # its capacity follows its jobs' times
        node.pid, node.uid_base = info["pid"], info["uid_base"]
        node.memory_budget_mb = budget_mb
        node.poll_ref = handle.poll.remote(POLL_S, node.batch, LINGER_S)
        self.nodes.add(node)
        log.info("node agent %s ready: %d slots", node.name, slots)

    def _request_resources(self) -> None:
        """Tell the Ray autoscaler how many CPUs the queued and running jobs want (a slot
        per CPU): the agents themselves reserve no CPU, so without this request an
        autoscaled cluster (KubeRay) would never see the demand. Sent when it changes."""
        from ray.autoscaler.sdk import request_resources

        demand = self.queue.depth() + self._busy
        if demand != self._requested:
            request_resources(num_cpus=demand)
            self._requested = demand

    # -- deadlines and cancellation ---------------------------------------------------------
    def _end(self, handle: BatchHandle, outcome: Outcome) -> None:
        super()._end(handle, outcome)
        # Items of jobs nobody waits for any more leave the nodes' queues unrun.
        for node in self.nodes.snapshot():
            with self.nodes.cond:
                tokens = [
                    t
                    for t, s in node.outstanding.items()
                    if not s.task.payload.job.subs and not s.task.payload.job.done
                ]
            if tokens:
                node.handle.drop.remote(tokens)

    # -- shutdown ---------------------------------------------------------------------------
    def close(self) -> None:
        """Finish queued and running work, stop the agents (their sandboxes with them),
        flush records and estimates; shuts Ray down if this executor started it."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._reaper.close()
        with self._lock:
            sessions = list(self._sessions.values())
        for session in sessions:
            with contextlib.suppress(Exception):
                session.close()
        self.queue.close()
        for t in self._workers[:2]:
            t.join()
        self._stopping.set()
        self._workers[2].join()
        for node in self.nodes.snapshot():
            try:
                self._ray.get(node.handle.close.remote(), timeout=30)
            except Exception:
                log.warning("node agent %s did not close cleanly", node.name)
            self._ray.kill(node.handle, no_restart=True)
        self.estimator.close()
        self.records.close()
        self._ray_shutdown()

    def _ray_shutdown(self) -> None:
        if self._own_ray:
            self._ray.shutdown()

    def node_info(self) -> list[dict[str, Any]]:
        """The live node agents: name, pid, slots, capacity, outstanding items."""
        return [
            {
                "node_id": n.node_id,
                "name": n.name,
                "pid": n.pid,
                "uid_base": n.uid_base,
                "slots": n.slots,
                "capacity": n.capacity,
                "outstanding": len(n.outstanding),
            }
            for n in self.nodes.snapshot()
        ]
