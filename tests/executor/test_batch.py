"""BatchHandle: results reach both kinds of consumer, those that wait for the whole batch
and those that stream results as they arrive, although a whole-batch waiter is only woken
for the last result."""

from __future__ import annotations

import threading

from assay.executor import JobResult
from assay.executor.batch import BatchHandle


def result(i: int) -> JobResult:
    return JobResult(
        index=i, job_id=f"j{i}", outcome="done", verdict="accepted", reward=1.0, reason="ok"
    )


def test_gather_returns_when_the_last_result_arrives() -> None:
    handle = BatchHandle("b", 3, lambda h: None)
    got: list[list[JobResult]] = []
    waiter = threading.Thread(target=lambda: got.append(handle.gather(10)))
    waiter.start()
    for i in (2, 0):
        handle._deliver(result(i))
    waiter.join(0.2)
    assert waiter.is_alive()  # still two of three
    handle._deliver(result(1))
    waiter.join(10)
    assert not waiter.is_alive()
    assert [r.index for r in got[0]] == [0, 1, 2]


def test_a_streaming_consumer_gets_every_result_as_it_arrives() -> None:
    handle = BatchHandle("b", 3, lambda h: None)
    seen: list[int] = []
    arrived = threading.Event()

    def consume() -> None:
        for r in handle:
            seen.append(r.index)
            arrived.set()

    consumer = threading.Thread(target=consume)
    consumer.start()
    for i in (1, 2, 0):
        arrived.clear()
        handle._deliver(result(i))
        assert arrived.wait(10), f"result {i} was not handed to the iterating consumer"
    consumer.join(10)
    assert seen == [1, 2, 0]


def test_a_timed_wait_on_an_unfinished_batch_times_out() -> None:
    handle = BatchHandle("b", 2, lambda h: None)
    handle._deliver(result(0))
    assert handle.wait(0.05) is False
    handle._deliver(result(1))
    assert handle.wait(0) is True
