"""The node agent's poll: results travel in groups while work is queued on the node, at
once when nothing is (no slot then waits for a refill), and never later than the linger."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import _ray_backends as rb
import pytest

from assay import defaults
from assay.executor.ray._agent import NodeAgent
from assay.executor.ray._wire import Item, encode_job


@pytest.fixture
def agent(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> Iterator[NodeAgent]:
    # The agent takes a uid block and sets it in the environment: restored afterwards.
    monkeypatch.setenv("ASSAY_UID_BASE", os.environ.get("ASSAY_UID_BASE", str(defaults.UID_BASE)))
    monkeypatch.setenv(
        "ASSAY_UID_COUNT", os.environ.get("ASSAY_UID_COUNT", str(defaults.UID_COUNT))
    )
    monkeypatch.setenv("ASSAY_AGENT_LOCK_DIR", str(tmp_path))
    a = NodeAgent(slots=1, backend_factory=rb.stamped_backend)
    yield a
    a.close()
    os.close(a._lock_fd)


def items(n: int, sleep: float) -> list[Item]:
    return [(i, encode_job(rb.job(i, sleep), None), False, 1) for i in range(n)]


def test_a_poll_gathers_a_batch_while_work_is_queued(agent: NodeAgent) -> None:
    agent.submit(items(8, 0.05), {})
    got = agent.poll(5.0, batch=3, linger_s=5.0)
    # One slot: results come one by one. The poll answers once 3 are in; a 4th can finish
    # before the poll's thread runs again on a loaded machine, never all 8.
    assert 3 <= len(got) < 8, len(got)
    rest = []
    while len(rest) < 8 - len(got):
        rest += agent.poll(5.0, batch=3, linger_s=5.0)
    assert sorted(r[0] for r in got + rest) == list(range(8))


def test_a_poll_answers_at_once_when_nothing_is_queued(agent: NodeAgent) -> None:
    agent.submit(items(1, 0.0), {})
    t = time.monotonic()
    got = agent.poll(5.0, batch=3, linger_s=5.0)
    assert [r[0] for r in got] == [0]
    assert time.monotonic() - t < 2.0  # the linger (5 s) was not waited: nothing is queued


def test_a_poll_waits_no_longer_than_its_linger(agent: NodeAgent) -> None:
    agent.submit(items(4, 1.0), {})
    t = time.monotonic()
    got = agent.poll(5.0, batch=3, linger_s=0.2)
    took = time.monotonic() - t
    assert [r[0] for r in got] == [0]  # the second job ends 1 s after the first
    assert took < 1.8, took


def test_a_poll_with_no_result_waits_its_timeout_only(agent: NodeAgent) -> None:
    agent.submit(items(3, 2.0), {})  # work queued, nothing finishes within the timeout
    t = time.monotonic()
    assert agent.poll(0.3, batch=2, linger_s=1.0) == []
    assert time.monotonic() - t < 1.0  # no linger without a first result


def test_a_poll_queues_the_refill_it_carries_before_it_waits(agent: NodeAgent) -> None:
    # The driver sends the refill for the results it took with its next poll: the items
    # run as if submitted, and the same poll can already answer with the first of them.
    t = time.monotonic()
    got = agent.poll(5.0, batch=1, linger_s=0.0, items=items(2, 0.0), problems={})
    # One slot runs them in order; whether the second is done by the time the poll's
    # thread takes the results is the scheduler's, so only the first is asserted here.
    assert got and got[0][0] == 0, got
    assert time.monotonic() - t < 2.0  # answered by its own items, not by its timeout
    while len(got) < 2:
        got += agent.poll(5.0)
    assert sorted(r[0] for r in got) == [0, 1]
