"""The producer and the worker loop over the in-memory broker: claims after the visibility
timeout, priorities, backpressure, retries of our own faults, batch ends. The same contract
on a real Redis is tests/executor/queue/test_redis_fleet.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _fleet_backends import RAN, broken, recording, sleeping

from assay import LocalExecutor, Overloaded, RunJob, ValidationError
from assay.executor.queue import InMemoryBroker, QueueExecutor, Worker
from assay.executor.queue._wire import decode_result, encode_job
from assay.executor.queue.broker import NewBatch
from assay.scheduler import HIGH, LOW


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Fleet:
    """Workers (threads) over one broker, each with its own local executor."""

    def __init__(self, broker: InMemoryBroker, tmp: Path) -> None:
        self.broker = broker
        self.tmp = tmp
        self.running: list[tuple[Worker, threading.Thread, LocalExecutor]] = []

    def start(self, backend=sleeping, slots: int = 1, prefetch: int = 0, **kw) -> Worker:
        ex = LocalExecutor(backend=backend(), slots=slots, state_dir=self.tmp, retries=1)
        w = Worker(self.broker, ex, name=f"w{len(self.running)}", prefetch=prefetch, **kw)
        t = threading.Thread(target=w.run, daemon=True)
        t.start()
        self.running.append((w, t, ex))
        return w

    def stop(self) -> None:
        for w, t, ex in self.running:
            w.stop()
            t.join(10)
            ex.close()


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    f = Fleet(InMemoryBroker(), tmp_path)
    yield f
    f.stop()


def sleeps(n: int, seconds: float = 0.0) -> list[RunJob]:
    return [RunJob(f"{seconds}") for _ in range(n)]


def test_every_job_gets_one_result_in_submission_order(fleet: Fleet) -> None:
    fleet.start(slots=2)
    with QueueExecutor(fleet.broker) as ex:
        results = ex.run(sleeps(50))
    assert [r.index for r in results] == list(range(50))
    assert {r.verdict for r in results} == {"ok"}


def test_a_job_pending_on_a_dead_worker_is_claimed_after_the_visibility_timeout(
    tmp_path: Path,
) -> None:
    clock = Clock()
    broker = InMemoryBroker(clock)
    with QueueExecutor(broker) as ex:
        handle = ex.submit(sleeps(3))
        # A worker started the jobs and died: nothing acknowledged, nothing stored.
        assert len(broker.read("dead", 3, 0)) == 3
        assert broker.claim("other", 30.0, 3) == []  # not idle long enough
        clock.now += 31
        f = Fleet(broker, tmp_path)
        f.start(slots=3, visibility_s=30.0)
        try:
            results = handle.gather(10)
        finally:
            f.stop()
    assert [r.attempts for r in results] == [2, 2, 2]
    assert f.running[0][0].stats["claimed"] == 3


def test_a_live_worker_keeps_a_long_job_it_touches(tmp_path: Path) -> None:
    clock = Clock()
    broker = InMemoryBroker(clock)
    with QueueExecutor(broker) as ex:
        ex.submit(sleeps(1))
        ((d, _),) = broker.read("alive", 1, 0)
        clock.now += 20
        broker.touch("alive", [d])
        clock.now += 20  # 40 s since it was read, 20 since it was touched
        assert broker.claim("thief", 30.0, 1) == []


def test_a_job_that_outlived_its_workers_ends_as_sandbox_error_without_reward(
    fleet: Fleet,
) -> None:
    clock = Clock()
    fleet.broker = broker = InMemoryBroker(clock)
    with QueueExecutor(broker) as ex:
        handle = ex.submit(sleeps(1))
        for k in range(3):  # three workers died running it
            if k == 0:
                broker.read("x", 1, 0)
            else:
                broker.claim(f"x{k}", 1.0, 1)
            clock.now += 2
        fleet.start(visibility_s=1.0, max_attempts=3)
        (result,) = handle.gather(10)
    assert (result.verdict, result.reward, result.attempts) == ("sandbox_error", None, 4)


def test_our_faults_are_retried_and_never_reward_zero(fleet: Fleet) -> None:
    fleet.start(backend=broken)
    with QueueExecutor(fleet.broker) as ex:
        (result,) = ex.run(sleeps(1))
    # retries=1 on the worker's executor: two attempts, both our fault.
    assert (result.verdict, result.reward, result.attempts) == ("sandbox_error", None, 2)


def test_the_most_urgent_class_runs_first(fleet: Fleet) -> None:
    with QueueExecutor(fleet.broker) as ex:
        low = ex.submit([RunJob("0.01")] * 4, priority=LOW)
        high = ex.submit([RunJob("0.010")] * 4, priority=HIGH)
        fleet.start(backend=recording, slots=1, prefetch=0)
        low.gather(30)
        high.gather(30)
    # Order of starts on the worker (the producer may collect two batches' results in
    # either order when they arrive together).
    assert RAN == ["0.010"] * 4 + ["0.01"] * 4


def test_a_full_queue_blocks_then_overloads_with_nothing_queued(fleet: Fleet) -> None:
    with QueueExecutor(fleet.broker, max_depth=10, block_s=0.2) as ex:
        ex.submit(sleeps(8))
        started = time.monotonic()
        with pytest.raises(Overloaded):
            ex.submit(sleeps(3))
        assert time.monotonic() - started >= 0.2
        assert sum(fleet.broker.depth().values()) == 8


def test_a_blocked_submit_goes_through_once_workers_make_room(fleet: Fleet) -> None:
    with QueueExecutor(fleet.broker, max_depth=10, block_s=10) as ex:
        first = ex.submit(sleeps(10, 0.01))
        threading.Timer(0.2, lambda: fleet.start(slots=2)).start()
        second = ex.submit(sleeps(5))  # waits for the workers to finish some of the first
        assert len(first.gather(10)) == 10
        assert len(second.gather(10)) == 5


def test_a_batch_larger_than_the_queue_is_refused_at_once(fleet: Fleet) -> None:
    with QueueExecutor(fleet.broker, max_depth=10) as ex, pytest.raises(ValidationError) as err:
        ex.submit(sleeps(11))
    assert err.value.field == "jobs"


def test_a_bad_job_is_named_and_nothing_is_queued(fleet: Fleet) -> None:
    with QueueExecutor(fleet.broker) as ex, pytest.raises(ValidationError) as err:
        ex.submit([RunJob("1"), RunJob("1", language="cobol-1959")])
    assert err.value.field == "jobs[1].language"
    assert sum(fleet.broker.depth().values()) == 0


def test_a_cancelled_batch_is_answered_cancelled_by_the_workers_too(fleet: Fleet) -> None:
    with QueueExecutor(fleet.broker) as ex:
        handle = ex.submit(sleeps(4))
        handle.cancel()
        assert {r.outcome for r in handle.gather(1)} == {"cancelled"}
        fleet.start()
        again = ex.collect(handle.id)
        assert {r.outcome for r in again.gather(10)} == {"cancelled"}


def test_a_restarted_producer_collects_what_it_submitted(fleet: Fleet) -> None:
    first = QueueExecutor(fleet.broker)
    batch_id = first.submit(sleeps(6)).id
    first.close()  # the trainer stops before any result
    fleet.start(slots=2)
    with QueueExecutor(fleet.broker) as second:
        results = second.collect(batch_id).gather(10)
    assert [r.index for r in results] == list(range(6))


def test_collecting_an_unknown_batch_names_it(fleet: Fleet) -> None:
    with QueueExecutor(fleet.broker) as ex, pytest.raises(ValidationError) as err:
        ex.collect("no-such-batch")
    assert err.value.field == "batch_id"


def test_a_malformed_message_is_a_sandbox_error_not_a_crash(fleet: Fleet) -> None:
    bodies = [b'{"k": "r"}', encode_job(RunJob("0"), False)]
    fleet.broker.enqueue(NewBatch("b", "normal", bodies), 99)
    fleet.start()
    with QueueExecutor(fleet.broker) as ex:
        results = ex.collect("b").gather(10)
    assert [(r.verdict, r.reward) for r in results] == [("sandbox_error", None), ("ok", None)]


def test_a_result_the_producer_cannot_read_has_no_reward() -> None:
    result = decode_result(b'{"o": "done", "v": "accepted", "r": 1.0}', 3, "b-3")
    assert (result.verdict, result.reward) == ("sandbox_error", None)
