"""The driver's node bookkeeping and the wire format, without a cluster."""

from __future__ import annotations

import collections
import pickle
import threading
import time

from assay import Limits, Problem, RunJob, Submission, TestCase
from assay.executor import Execution
from assay.executor.ray._nodes import Node, Nodes, RoundRobin, Sent, default_prefetch
from assay.executor.ray._wire import (
    ProblemCache,
    ProblemRefs,
    decode_execution,
    encode_execution,
    encode_job,
)
from assay.scheduler import Task


def node(name: str, slots: int = 2, capacity: int = 3) -> Node:
    return Node(name, name, None, slots, capacity)


def test_round_robin_spreads_in_turn_within_each_nodes_room() -> None:
    a, b, c = node("a", capacity=1), node("b", capacity=3), node("c", capacity=2)
    spread = RoundRobin([a, b, c])
    order = []
    while (n := spread.pick()) is not None:
        spread.use(n)
        order.append(n.name)
    assert order == ["a", "b", "c", "b", "c", "b"]  # longest tasks first land apart


def test_a_dead_node_gives_back_what_it_held_and_takes_nothing() -> None:
    nodes = Nodes()
    a = node("a")
    nodes.add(a)
    task = Task("payload")
    a.outstanding[7] = Sent(task, (None,))
    assert a.free == 2
    lost = nodes.remove(a)
    assert list(lost) == [7] and lost[7].task is task
    assert a.free == 0 and not a.outstanding and "a" not in nodes.live
    assert nodes.take(a, 7) is None  # a late result of a dead node counts for nothing


def test_a_node_reserved_for_a_suspect_takes_no_other_work() -> None:
    nodes = Nodes()
    a = node("a")
    nodes.add(a)
    a.outstanding[1] = Sent(Task("x"), (None,))
    a.reserved_for = Task("suspect")
    assert a.free == 0 and not a.drained
    nodes.take(a, 1)
    assert a.drained and nodes.wait_free(0) == []
    a.reserved_for, a.exclusive = None, 2
    a.outstanding[2] = Sent(Task("suspect"), (None,))
    assert a.free == 0
    nodes.take(a, 2)
    assert a.exclusive is None and a.free == 3


def test_the_default_prefetch_follows_the_nodes_job_times() -> None:
    # Short jobs: more queued per node, so results and refills (a Ray call each way)
    # travel in larger groups; long jobs keep the smallest prefetch, so an urgent job
    # waits behind little work on a node.
    nodes = Nodes()
    a = Node("a", "a", None, 1, 1 + default_prefetch(1), adaptive=True)
    fixed = Node("f", "f", None, 1, 1 + 4)  # a prefetch the caller chose stays as it is
    nodes.add(a)
    nodes.add(fixed)
    assert (a.capacity, a.batch) == (5, 3)
    for token in range(40):
        for n in (a, fixed):
            n.outstanding[token] = Sent(Task("x"), (None,))
            nodes.take(n, token, 0.008)
    assert a.job_s == 0.008
    assert (a.capacity, a.batch) == (1 + 8, 7)  # 75 ms / 8 ms, at most 8 per slot
    assert (fixed.capacity, fixed.job_s) == (5, None)
    # The jobs get long: back to the smallest prefetch (what it holds is never below 0).
    for token in range(12):
        a.outstanding[100 + token] = Sent(Task("x"), (None,))
    for token in range(12):
        nodes.take(a, 100 + token, 2.0)
    assert a.capacity == 1 + 4
    a.outstanding.update({200 + k: Sent(Task("x"), (None,)) for k in range(7)})
    assert a.room == 0 and a.free == 0
    # An item that did not run (dropped, or its problem missing) says nothing of job times.
    a.outstanding[300] = Sent(Task("x"), (None,))
    before = a.job_s
    nodes.take(a, 300, 0.0)
    assert a.job_s == before
    assert default_prefetch(16, 1.0) == 16 and default_prefetch(16, 0.05) == 24
    assert default_prefetch(2, 0.001) == 16


def test_jobs_and_executions_survive_the_wire() -> None:
    job = RunJob(
        "print(1)",
        "python",
        b"in",
        Limits(time_s=2.0, memory_mb=128),
        (("a.txt", b"data"),),
        ("out.txt",),
        True,
    )
    payload = encode_job(job, None)
    assert ProblemCache().job(payload) == job
    ex = Execution("ok", None, "exit code 0", overhead_s=0.01)
    assert decode_execution(encode_execution(ex)) == ex


def test_a_node_keeps_the_problems_it_was_sent_and_waits_briefly_for_a_missing_one() -> None:
    problems = [Problem(f"p{k}", [TestCase("stdio", str(k), "")]) for k in range(3)]
    cache = ProblemCache(entries=2)
    cache.resolve({"a": pickle.dumps(problems[0]), "b": pickle.dumps(problems[1])})
    cache.resolve({}, ["a"])  # used again: "b" is now the oldest
    cache.resolve({"c": pickle.dumps(problems[2])})
    got = cache.job(("s", "a", "code", "python"))
    assert isinstance(got, Submission) and got.problem == problems[0]
    t0 = time.monotonic()
    assert cache.job(("s", "b", "code", "python"), wait_s=0.2) is None  # evicted
    assert time.monotonic() - t0 >= 0.2
    # A problem that arrives while a slot waits for it (its message ran late) is used.
    threading.Timer(0.1, cache.resolve, ({"d": pickle.dumps(problems[1])},)).start()
    late = cache.job(("s", "d", "code", "python"), wait_s=5)
    assert isinstance(late, Submission) and late.problem == problems[1]


def test_the_driver_sends_a_node_each_problem_once_while_it_remembers_it() -> None:
    refs = ProblemRefs(lambda problem: "f", entries=2)
    problems = [Problem(f"p{k}", [TestCase("stdio", str(k), "")]) for k in range(3)]
    sent: collections.OrderedDict[str, None] = collections.OrderedDict()
    first: dict[str, object] = {}
    assert refs.encode(Submission(problems[0], "x"), first, sent) == ("s", "p0:f", "x", "python")
    assert pickle.loads(first["p0:f"]) == problems[0]  # type: ignore[arg-type]
    again: dict[str, object] = {}
    refs.encode(Submission(problems[0], "y"), again, sent)
    assert again == {}
    for p in problems[1:]:
        refs.encode(Submission(p, "z"), {}, sent)
    assert list(sent) == ["p1:f", "p2:f"]  # the oldest is forgotten: sent again if needed
    refs.forget(sent)
    later: dict[str, object] = {}
    refs.encode(Submission(problems[2], "w"), later, sent)
    assert list(later) == ["p2:f"]
