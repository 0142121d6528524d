"""The driver's view of the cluster: which nodes have an agent, and what each is running.

A node is fed by capacity: it is sent work only while it holds fewer items than its slots
plus a small prefetch (which hides the round trip between a result and the next job, and
lets results and refills travel in groups: see ``Node.batch``). The refill for a group of
results rides on the next poll of that node (the receiver's); the dispatcher feeds nodes
that free up otherwise (new work for an idle node, a node that joins). Every item
sent is remembered under a token until its result comes back, so when a node dies its
unfinished work is known exactly and runs again elsewhere; a result whose token is no
longer outstanding (its node was already declared dead) is ignored, which is what makes a
job's result count once.
"""

from __future__ import annotations

import collections
import itertools
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ...scheduler import Task


@dataclass(eq=False)
class Sent:
    task: Task
    claim: tuple[Any]
    sent_at: float = field(default_factory=time.monotonic)


@dataclass(eq=False)
class Node:
    node_id: str
    name: str
    handle: Any
    slots: int
    capacity: int
    pid: int = 0
    uid_base: int = 0
    #: MiB the node's running jobs may hold (its agent's budget), for the capacity gauges.
    memory_budget_mb: int = 0
    outstanding: dict[int, Sent] = field(default_factory=dict)
    poll_ref: Any = None
    alive: bool = True
    #: A suspect job (one a node already died under) waiting for this node to drain, so it
    #: can run alone on it; the node takes no other work meanwhile.
    reserved_for: Task | None = None
    #: The token of the suspect job running alone on this node.
    exclusive: int | None = None
    #: The problems most recently sent to this node's agent (``_wire.ProblemRefs``).
    problems: collections.OrderedDict[str, None] = field(default_factory=collections.OrderedDict)
    #: The receiver is taking this node's refill for its next poll: the dispatcher leaves
    #: the node's free capacity to it (one Ray call for results and refill, not two).
    refilling: bool = False
    #: Whether ``capacity`` follows the node's job times (the default prefetch, see
    #: :func:`default_prefetch`), from its results (:meth:`observe`).
    adaptive: bool = False
    #: Mean seconds a job held one of the node's slots, over its recent results.
    job_s: float | None = None

    def observe(self, elapsed_s: float) -> None:
        """One result's time on the node (its slot's time, not its wait there): with the
        default prefetch, the capacity follows the mean (called with ``Nodes.cond`` held)."""
        if not self.adaptive or elapsed_s <= 0:
            return
        mean = self.job_s
        self.job_s = elapsed_s if mean is None else mean + JOB_S_WEIGHT * (elapsed_s - mean)
        self.capacity = self.slots + default_prefetch(self.slots, self.job_s)

    @property
    def free(self) -> int:
        """Items the dispatcher may send now (0 while the receiver refills the node)."""
        return 0 if self.refilling else self.room

    @property
    def room(self) -> int:
        """Items the node can take beyond what it holds (its slots plus prefetch)."""
        if not self.alive or self.reserved_for is not None or self.exclusive is not None:
            return 0
        # (Less than it holds when its capacity shrank: its jobs got longer.)
        return max(0, self.capacity - len(self.outstanding))

    @property
    def batch(self) -> int:
        """Results the node's agent gathers before answering a poll while work is queued
        there: all but one of its prefetch, so the refill is on its way while the last
        queued item runs (fewer polls and refills per job: each is a Ray call, ~0.5 ms of
        machine time between the driver and the agent)."""
        return max(1, self.capacity - self.slots - 1)

    @property
    def drained(self) -> bool:
        """Reserved for a suspect job, and nothing else left on it."""
        return self.alive and self.reserved_for is not None and not self.outstanding


class Nodes:
    """The live nodes and their outstanding items; the condition wakes the dispatcher when
    capacity frees up or a node joins."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.live: dict[str, Node] = {}
        #: Node ids whose agent is being started (not yet answering).
        self.starting: set[str] = set()

    def add(self, node: Node) -> None:
        with self.cond:
            self.live[node.node_id] = node
            self.starting.discard(node.node_id)
            self.cond.notify_all()

    def remove(self, node: Node) -> dict[int, Sent]:
        """Declare ``node`` dead: returns what it was running (now nobody's)."""
        with self.cond:
            node.alive = False
            node.reserved_for = None
            if self.live.get(node.node_id) is node:
                del self.live[node.node_id]
            lost, node.outstanding = node.outstanding, {}
            self.cond.notify_all()
        return lost

    def take(self, node: Node, token: int, elapsed_s: float = 0.0) -> Sent | None:
        """The item ``token`` of ``node`` is back (``elapsed_s``: its time there, for the
        node's capacity; 0 when it did not run); None if it was no longer outstanding."""
        with self.cond:
            sent = node.outstanding.pop(token, None)
            if token == node.exclusive:
                node.exclusive = None
            if sent is not None:
                node.observe(elapsed_s)
            self.cond.notify_all()
        return sent

    def slots(self) -> int:
        with self.cond:
            return sum(n.slots for n in self.live.values())

    def outstanding(self) -> int:
        with self.cond:
            return sum(len(n.outstanding) for n in self.live.values())

    def snapshot(self) -> list[Node]:
        with self.cond:
            return list(self.live.values())

    def wait_free(self, timeout: float) -> list[Node]:
        """Nodes with free capacity, most free first (waits up to ``timeout`` for one)."""
        with self.cond:
            self.cond.wait_for(
                lambda: any(n.free > 0 or n.drained for n in self.live.values()), timeout
            )
            return sorted((n for n in self.live.values() if n.free > 0), key=lambda n: -n.free)


class RoundRobin:
    """Spreads one dispatch round's tasks over ``nodes`` in turn, each node up to its free
    capacity, so the longest tasks of a batch (first in dispatch order) land on different
    nodes. The same code runs in the driver and in ``benchmarks/cluster_sim.py``."""

    def __init__(self, nodes: list[Node], free: dict[str, int] | None = None) -> None:
        self._nodes = nodes
        self._free = free if free is not None else {n.node_id: n.free for n in nodes}
        self._cycle = itertools.cycle(nodes)

    def pick(self) -> Node | None:
        """The next node with room (None when every node is full); :meth:`use` commits."""
        for _ in range(len(self._nodes)):
            node = next(self._cycle)
            if self._free[node.node_id] > 0:
                return node
        return None

    def use(self, node: Node) -> None:
        self._free[node.node_id] -= 1


#: With the default prefetch, a node holds about this much queued work per slot beyond its
#: running jobs (at least the smallest prefetch, at most ``PREFETCH_PER_SLOT_MAX``): enough
#: that its results and refills travel in groups of several even when jobs are short.
PREFETCH_S = 0.075
#: The most items per slot the default prefetch holds queued on a node.
PREFETCH_PER_SLOT_MAX = 8
#: Weight of a new result in a node's mean job time (``Node.job_s``).
JOB_S_WEIGHT = 0.05


def default_prefetch(slots: int, job_s: float | None = None) -> int:
    """Items a node holds beyond its slots unless the caller says: as many as its slots, at
    least 4, so that results and refills travel in groups of at least 3 (each Ray call costs
    the driver, the agent and the raylet more than a job's dispatch); and once its results
    say its jobs are short (``job_s``, the mean seconds a job holds a slot), enough for
    about :data:`PREFETCH_S` of queued work per slot, up to :data:`PREFETCH_PER_SLOT_MAX`
    per slot: with jobs of 8 ms on a 1-slot node, 8 instead of 4, one poll per ~7 jobs
    instead of per 3 (a Ray call costs the driver and the agent ~1 ms each on a small
    node). A higher priority job, or another caller's fair share, waits behind at most this
    many on a node: ``max(4, slots)`` items, or about ``PREFETCH_S`` of work per slot
    (priorities and fairness are the driver's queue's; what a node already holds runs
    first)."""
    least = max(4, slots)
    if job_s is None or job_s <= 0:
        return least
    by_time = math.ceil(slots * PREFETCH_S / job_s)
    return max(least, min(PREFETCH_PER_SLOT_MAX * slots, by_time))
