"""Dispatch order and admission of the fair queue."""

from __future__ import annotations

import threading
import time

import pytest

from assay.errors import Overloaded
from assay.scheduler import FairQueue, Task


def drain(q: FairQueue) -> list[object]:
    out = []
    while q.depth():
        t = q.get(timeout=0)
        assert t is not None
        out.append(t.payload)
    return out


def test_longest_first_within_a_batch() -> None:
    q = FairQueue(100)
    q.put_many([Task(name, estimate=est) for name, est in [("a", 1), ("b", 5), ("c", 3)]])
    assert drain(q) == ["b", "c", "a"]


def test_fifo_and_random_orders_are_baselines() -> None:
    q = FairQueue(100, order="fifo")
    q.put_many([Task(name, estimate=est) for name, est in [("a", 1), ("b", 5), ("c", 3)]])
    assert drain(q) == ["a", "b", "c"]
    orders = set()
    for seed in range(20):
        q = FairQueue(100, order="random", seed=seed)
        q.put_many([Task(i, estimate=i) for i in range(6)])
        orders.add(tuple(drain(q)))
    assert len(orders) > 1


def test_batches_of_one_caller_go_in_submission_order() -> None:
    q = FairQueue(100)
    q.put_many([Task("first-short", estimate=0.1, batch_seq=0)])
    q.put_many([Task("second-long", estimate=9.0, batch_seq=1)])
    assert drain(q) == ["first-short", "second-long"]


def test_priority_classes_are_strict() -> None:
    q = FairQueue(100)
    q.put_many([Task(f"low{i}", priority=2, estimate=5) for i in range(3)])
    q.put_many([Task(f"normal{i}", priority=1) for i in range(3)])
    q.put_many([Task("high", priority=0, estimate=0.01)])
    assert drain(q) == ["high", "normal0", "normal1", "normal2", "low0", "low1", "low2"]


def test_a_late_caller_is_not_starved_by_a_big_batch() -> None:
    q = FairQueue(1000)
    q.put_many([Task(("big", i), caller="a", estimate=1.0) for i in range(200)])
    for _ in range(50):  # caller a has been served for a while
        assert q.get(timeout=0) is not None
    q.put_many([Task(("small", i), caller="b", estimate=1.0) for i in range(5)])
    order = drain(q)
    positions = [i for i, p in enumerate(order) if p[0] == "small"]
    assert positions == [0, 2, 4, 6, 8] or max(positions) < 12, positions


def test_a_new_caller_does_not_jump_ahead_forever() -> None:
    """Joining at the active callers' clock: b alternates with a, it does not get 50 turns."""
    q = FairQueue(1000)
    q.put_many([Task(("a", i), caller="a", estimate=1.0) for i in range(100)])
    for _ in range(50):
        q.get(timeout=0)
    q.put_many([Task(("b", i), caller="b", estimate=1.0) for i in range(100)])
    first = [q.get(timeout=0).payload[0] for _ in range(20)]  # type: ignore[union-attr]
    assert 8 <= first.count("a") <= 12


def test_full_queue_raises_overloaded_and_takes_nothing() -> None:
    q = FairQueue(5)
    q.put_many([Task(i) for i in range(4)])
    with pytest.raises(Overloaded) as info:
        q.put_many([Task(i) for i in range(2)])
    assert info.value.queued == 4 and info.value.capacity == 5 and info.value.retry_after >= 1
    assert q.depth() == 4
    q.put_many([Task("fits")])
    assert q.depth() == 5


def test_forced_puts_bypass_the_bound() -> None:
    q = FairQueue(1)
    q.put_many([Task(0)])
    q.put_many([Task("retry")], force=True)
    assert q.depth() == 2


def test_discarded_tasks_are_skipped_and_not_counted() -> None:
    q = FairQueue(10)
    tasks = [Task(i, estimate=10 - i) for i in range(4)]
    q.put_many(tasks)
    assert q.discard([tasks[0], tasks[2]]) == 2
    assert q.depth() == 2
    assert drain(q) == [1, 3]


def test_a_task_is_queued_once() -> None:
    q = FairQueue(10)
    t = Task(1)
    q.put_many([t])
    with pytest.raises(ValueError, match="at most once"):
        q.put_many([t])


def test_get_blocks_until_put_and_close_wakes_consumers() -> None:
    q = FairQueue(10)
    got: list[object] = []
    consumer = threading.Thread(target=lambda: got.append(q.get()))
    consumer.start()
    time.sleep(0.05)
    q.put_many([Task("x")])
    consumer.join(2)
    assert got == [q_task for q_task in got] and got[0].payload == "x"  # type: ignore[attr-defined]
    waiter = threading.Thread(target=lambda: got.append(q.get()))
    waiter.start()
    q.close()
    waiter.join(2)
    assert not waiter.is_alive() and got[-1] is None


def test_oldest_age_tracks_the_oldest_queued_task() -> None:
    q = FairQueue(10)
    assert q.gauges() == (0, 0.0)
    q.put_many([Task("old", enqueued_at=time.monotonic() - 5)])
    q.put_many([Task("new")])
    depth, age = q.gauges()
    assert depth == 2 and 4.5 < age < 10
    q.discard([t for t in [q.get(timeout=0)] if t is not None])
    assert q.oldest_age() < 1
