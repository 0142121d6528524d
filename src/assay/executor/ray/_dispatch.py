"""The driver's dispatch and fault handling: tasks from the global queue to nodes with free
capacity, results back, and the work of a dead node back into the queue.

A job under which a node died runs again *alone* on a node (one drained for it), so a
second death is the job's own doing, never its neighbours': such a job ends
``sandbox_error`` with ``reward=None`` once ``node_deaths`` nodes died under it.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from typing import Any

from ...scheduler import Task
from ...telemetry import tracing
from .._jobs import Part
from ..local import LocalExecutor
from ..types import Execution
from ._nodes import Node, Nodes, RoundRobin, Sent
from ._wire import MISSING, Item, ProblemRefs, Result, decode_execution

log = logging.getLogger("assay.executor.ray")

#: Most items in one message to a node.
BATCH_MAX = 512
#: How long an agent's poll waits for a first result (bounds how late a death is seen).
POLL_S = 0.5
#: How much longer it may wait for a node's batch of results while work is queued there.
LINGER_S = 0.05


class Dispatching(LocalExecutor):
    """The dispatcher and receiver threads of :class:`~assay.executor.ray.RayExecutor`."""

    _ray: Any
    nodes: Nodes
    stats: dict[str, int]
    _tokens: itertools.count[int]
    _deaths: dict[tuple[str, int], int]
    _suspects: list[Task]
    _problem_refs: ProblemRefs
    _stopping: threading.Event
    _dispatch_done: threading.Event
    _nodes_seen: float
    _wait_nodes_s: float
    _node_deaths: int

    def _node_died(self, node: Node, why: str) -> None:
        if not node.alive:
            return
        lost = self.nodes.remove(node)
        self.stats["node_failures"] += 1
        log.warning("node %s lost (%s): %d jobs go back to the queue", node.name, why, len(lost))
        try:  # an agent that merely stopped answering must not run its jobs a second time
            self._ray.kill(node.handle, no_restart=True)
        except Exception:
            pass
        for sent in lost.values():
            self._lost(sent, node, why)
        total = self.nodes.slots()
        if total:
            self.slots = total

    def _lost(self, sent: Sent, node: Node, why: str) -> None:
        """A job's node died under it: run it again, or end it after ``node_deaths``."""
        task = sent.task
        part: Part = task.payload
        job = part.job
        with self._lock:
            self._busy -= 1
            key = (job.id, part.index)
            deaths = self._deaths.get(key, 0) + 1
            self._deaths[key] = deaths
            wanted = not job.done and bool(job.subs)
        tracing.end_job(sent.claim[0], "sandbox_error", why)
        if not wanted:
            return
        if deaths < self._node_deaths and not self._closed_for_retries():
            self.metrics.retry()
            self._requeue(task)
            return
        self.metrics.sandbox_error()
        with self._lock:
            self._deaths.pop(key, None)
        self._part_done(
            part,
            Execution(
                "sandbox_error",
                None,
                f"{deaths} nodes died while running this job (last {node.name}: {why})",
            ),
            0.0,
        )

    def _closed_for_retries(self) -> bool:
        return self._dispatch_done.is_set()

    # -- dispatch ---------------------------------------------------------------------------
    def _dispatch_loop(self) -> None:
        try:
            while True:
                self._place_suspects()
                nodes = self.nodes.wait_free(0.2)
                if not nodes:
                    if self._closed and self._no_nodes_for() > self._wait_nodes_s:
                        self._fail_queued("no Assay node agent was left to run it")
                    if self._closed and self._idle():
                        return
                    continue
                room = sum(n.free for n in nodes)
                first = self.queue.get(timeout=0.2)
                if first is None:
                    if self._closed and self._idle():
                        return
                    continue
                tasks = [first]
                while len(tasks) < min(room, BATCH_MAX * len(nodes)):
                    t = self.queue.get(timeout=0)
                    if t is None:
                        break
                    tasks.append(t)
                self._send(nodes, [t for t in tasks if not self._suspect(t)])
        finally:
            self._dispatch_done.set()

    def _idle(self) -> bool:
        return self.queue.depth() == 0 and not self._suspects and not self.nodes.outstanding()

    def _no_nodes_for(self) -> float:
        """Seconds since the cluster last had a live agent (0 while it has one)."""
        if self.nodes.live or self.nodes.starting:
            self._nodes_seen = time.monotonic()
        return time.monotonic() - self._nodes_seen

    def _fail_queued(self, why: str) -> None:
        """Closing with no node left: every queued job ends ``sandbox_error`` (our fault,
        no reward) rather than waiting forever."""
        held, self._suspects = self._suspects, []
        while (task := (held.pop() if held else self.queue.get(timeout=0))) is not None:
            claim = self._claim(task, "")
            if claim is None:
                continue
            with self._lock:
                self._busy -= 1
            tracing.end_job(claim[0], "sandbox_error", why)
            self.metrics.sandbox_error()
            self._part_done(task.payload, Execution("sandbox_error", None, why), 0.0)

    def _suspect(self, task: Task) -> bool:
        """A job a node already died under runs again alone on a node (see
        :meth:`_place_suspects`): held here until one is drained for it."""
        part: Part = task.payload
        with self._lock:
            if (part.job.id, part.index) not in self._deaths:
                return False
        self._suspects.append(task)
        return True

    def _place_suspects(self) -> None:
        """Run each suspect job alone on a node, so that if the node dies again the job is
        the one to blame (``sandbox_error`` after ``node_deaths``), and a job that merely
        shared a node with it is not. A node is reserved (fed nothing else) until it
        drains, then given the suspect."""
        if not self._suspects:
            return
        with self.nodes.cond:
            nodes = list(self.nodes.live.values())
            held = {id(n.reserved_for) for n in nodes if n.reserved_for is not None}
            for task in [t for t in self._suspects if id(t) not in held]:
                idle = [n for n in nodes if n.reserved_for is None and n.exclusive is None]
                if not idle:
                    break
                min(idle, key=lambda n: len(n.outstanding)).reserved_for = task
            ready = [n for n in nodes if n.drained]
        for node in ready:
            suspect = node.reserved_for
            assert suspect is not None
            self._suspects.remove(suspect)
            with self.nodes.cond:
                node.reserved_for = None
            token = self._send([node], [suspect])
            with self.nodes.cond:
                if token is not None and token in node.outstanding:
                    node.exclusive = token

    def _requeue_unclaimed(self, task: Task) -> None:
        """Put back a task taken from the queue but not run (same attempt: it never ran)."""
        part: Part = task.payload
        again = Task(part, task.caller, task.priority, task.estimate, task.batch_seq)
        with self._lock:
            part.job.tasks.append(again)
        self.queue.put_many([again], force=True)

    def _send(self, nodes: list[Node], tasks: list[Task]) -> int | None:
        """Spread ``tasks`` (in dispatch order) over ``nodes``, round robin within each
        node's free capacity, one message per node; returns the last token given."""
        token = None
        groups: dict[str, tuple[Node, list[Item], dict[str, Any]]] = {}
        spread = RoundRobin(nodes)
        for task in tasks:
            node = spread.pick()
            if node is None:  # more tasks than room (a node died meanwhile): queue again
                self._requeue_unclaimed(task)
                continue
            _, items, refs = groups.setdefault(node.node_id, (node, [], {}))
            item = self._item(node, task, refs)
            if item is None:
                continue
            spread.use(node)
            items.append(item)
            token = item[0]
        for node, items, refs in groups.values():
            if not items or not self._still_alive(node, items):
                continue
            try:
                node.handle.submit.remote(items, refs)
            except Exception as exc:
                self._node_died(node, f"could not send work: {exc!r}")
            else:
                self.stats["items_sent_with_submits"] += len(items)
        return token

    def _item(self, node: Node, task: Task, refs: dict[str, Any]) -> Item | None:
        """``task`` as an item for ``node`` (None if nobody wants it any more); from now on
        it is outstanding there. ``refs`` gathers the problems the node has not been sent."""
        claim = self._claim(task, node.name)
        if claim is None:
            return None
        part: Part = task.payload
        job = part.job
        token = next(self._tokens)
        item: Item = (
            token,
            self._problem_refs.encode(part.payload, refs, node.problems),
            job.stop_on_failure,
            job.info.limits.memory_mb,
        )
        with self.nodes.cond:
            node.outstanding[token] = Sent(task, claim)
        return item

    def _still_alive(self, node: Node, items: list[Item]) -> bool:
        """Whether ``node`` may be sent ``items``. A node that died between being chosen and
        now: what it was given is already back in the queue if it was registered before the
        death, else it goes back here."""
        if node.alive:
            return True
        for item in items:
            sent = node.outstanding.pop(item[0], None)
            if sent is not None:
                self._lost(sent, node, "the node died before its work was sent")
        return False

    def _absorb_and_refill(
        self, node: Node, results: list[Result]
    ) -> tuple[list[Item], dict[str, Any]]:
        """Take ``node``'s results, then items for the room they freed, from the queue in
        dispatch order without waiting, to travel with its next poll. ``node.refilling``
        keeps the dispatcher off the node's room meanwhile (and is cleared however this
        ends); a job held for running alone (a suspect) is left to the dispatcher."""
        items: list[Item] = []
        refs: dict[str, Any] = {}
        with self.nodes.cond:
            node.refilling = True
        try:
            self._absorb(node, results)
            with self.nodes.cond:
                room = node.room
            while len(items) < room:
                task = self.queue.get(timeout=0)
                if task is None:
                    break
                if self._suspect(task):
                    continue
                item = self._item(node, task, refs)
                if item is not None:
                    items.append(item)
        finally:
            with self.nodes.cond:
                node.refilling = False
                self.nodes.cond.notify_all()  # room the refill left is the dispatcher's
        if not self._still_alive(node, items):
            return [], {}
        return items, refs

    # -- results ----------------------------------------------------------------------------
    def _receive_loop(self) -> None:
        ray = self._ray
        while not (self._dispatch_done.is_set() and not self.nodes.outstanding()):
            by_ref = {n.poll_ref: n for n in self.nodes.snapshot() if n.poll_ref is not None}
            if not by_ref:
                time.sleep(0.05)
                continue
            refs = list(by_ref)
            ready, rest = ray.wait(refs, num_returns=1, timeout=0.2)
            if ready and rest:
                more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                ready += more
            for ref in ready:
                node = by_ref[ref]
                try:
                    results: list[Result] = ray.get(ref)
                except Exception as exc:
                    self._node_died(node, f"its agent died: {type(exc).__name__}")
                    continue
                items, problems = self._absorb_and_refill(node, results)
                if node.alive:
                    try:
                        node.poll_ref = node.handle.poll.remote(
                            POLL_S, node.batch, LINGER_S, items, problems
                        )
                    except Exception as exc:
                        self._node_died(node, f"could not send work: {exc!r}")
                    else:
                        self.stats["items_sent_with_polls"] += len(items)

    def _absorb(self, node: Node, results: list[Result]) -> None:
        for token, ex, elapsed_s, worker in results:
            sent = self.nodes.take(node, token, elapsed_s) if node.alive else None
            if sent is None:
                self.stats["lost_results_ignored"] += 1
                continue
            part: Part = sent.task.payload
            if ex is None:  # dropped unrun: its batch ended
                with self._lock:
                    self._busy -= 1
                tracing.end_job(sent.claim[0], "cancelled")
                continue
            if ex == MISSING:  # the node did not hold its problem: again, with it
                self._problem_refs.forget(node.problems)
                self.stats["problems_sent_again"] += 1
                with self._lock:
                    self._busy -= 1
                tracing.end_job(sent.claim[0], "requeued", "its node did not hold its problem")
                self._requeue_unclaimed(sent.task)
                continue
            with self._lock:
                part.job.worker = worker
                self._deaths.pop((part.job.id, part.index), None)
            assert not isinstance(ex, str)
            self._finish(sent.task, decode_execution(ex), elapsed_s, sent.claim)
