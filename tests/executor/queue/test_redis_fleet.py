"""The queue fleet on a real ``redis-server`` (started here on 127.0.0.1, with a password):
workers killed mid-job, a trainer that restarts, backpressure, priority classes, our own
faults, the token, the metrics. Workers are ``assay worker`` processes where a process
must die; in-process :class:`Worker` threads elsewhere (faster, same code)."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _fleet_backends import RAN, broken, recording, sleeping
from _redis_server import RedisServer, start_worker

from assay import ConfigError, LocalExecutor, Overloaded, RunJob
from assay.executor.queue import QueueExecutor, RedisBroker, Worker
from assay.executor.queue._wire import encode_job
from assay.executor.queue.broker import NewBatch
from assay.scheduler import HIGH, LOW


def sleeps(n: int, seconds: float = 0.0) -> list[RunJob]:
    return [RunJob(f"{seconds}") for _ in range(n)]


def stored_results(url: str, batch_id: str) -> int:
    """How many results the broker holds for the batch (every one ever stored)."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        return int(client.xlen(f"assay:out:{batch_id}"))
    finally:
        client.close()


@pytest.fixture
def thread_worker(redis_server: RedisServer, tmp_path: Path) -> Iterator[object]:
    """``start(backend, slots, prefetch)``: in-process workers, stopped at the end."""
    running: list[tuple[Worker, threading.Thread, LocalExecutor]] = []

    def start(backend=sleeping, slots: int = 1, prefetch: int = 0) -> Worker:
        ex = LocalExecutor(backend=backend(), slots=slots, state_dir=tmp_path, retries=1)
        w = Worker(RedisBroker(redis_server.url), ex, name=f"t{len(running)}", prefetch=prefetch)
        t = threading.Thread(target=w.run, daemon=True)
        t.start()
        running.append((w, t, ex))
        return w

    yield start
    for w, t, ex in running:
        w.stop()
        t.join(10)
        ex.close()
        w.broker.close()


@pytest.mark.slow
def test_jobs_of_a_killed_worker_are_claimed_and_each_yields_one_result(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    first = start_worker(redis_server.url, tmp_path, name="first", slots=2, prefetch=2)
    second = None
    try:
        with QueueExecutor(redis_server.url) as ex:
            handle = ex.submit(sleeps(16, 0.2))
            deadline = time.monotonic() + 30
            while handle.finished < 2 and time.monotonic() < deadline:
                time.sleep(0.02)
            first.send_signal(signal.SIGKILL)  # mid-batch, jobs in hand
            first.wait()
            second = start_worker(redis_server.url, tmp_path, name="second", slots=2)
            results = handle.gather(60)
        assert [r.index for r in results] == list(range(16))
        assert stored_results(redis_server.url, handle.id) == 16
        # The jobs the first worker had started ran again: their results say so.
        assert len([r for r in results if r.attempts == 2]) >= 1
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.mark.slow
def test_a_stopped_worker_finishes_what_it_holds_first(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    worker = start_worker(redis_server.url, tmp_path, name="w", slots=2, prefetch=2)
    with QueueExecutor(redis_server.url) as ex:
        handle = ex.submit(sleeps(4, 0.5))
        deadline = time.monotonic() + 30
        while RedisBroker(redis_server.url).lag()["normal"] and time.monotonic() < deadline:
            time.sleep(0.02)
        worker.send_signal(signal.SIGTERM)  # a pod scaled in
        assert worker.wait(30) == 0
        results = handle.gather(1)
    assert [r.attempts for r in results] == [1, 1, 1, 1]


def test_a_restarted_trainer_collects_its_batch_by_id(
    redis_server: RedisServer, thread_worker
) -> None:
    with QueueExecutor(redis_server.url) as ex:
        handle = ex.submit(sleeps(10))
        batch_id = handle.id
    thread_worker(slots=2)  # the workers go on while the trainer is down
    with QueueExecutor(redis_server.url) as ex:
        results = ex.collect(batch_id).gather(30)
    assert [r.index for r in results] == list(range(10))


def test_a_deep_queue_refuses_a_batch_after_waiting(redis_server: RedisServer) -> None:
    with QueueExecutor(redis_server.url, max_depth=5, block_s=0.3) as ex:
        ex.submit(sleeps(4))
        with pytest.raises(Overloaded) as err:
            ex.submit(sleeps(2))
        assert err.value.queued == 4
        assert sum(ex.broker.depth().values()) == 4  # nothing of the refused batch


def test_urgent_jobs_run_before_queued_low_ones(redis_server: RedisServer, thread_worker) -> None:
    with QueueExecutor(redis_server.url) as ex:
        low = ex.submit([RunJob("0.01")] * 4, priority=LOW)
        high = ex.submit([RunJob("0.010")] * 4, priority=HIGH)
        thread_worker(backend=recording, slots=1, prefetch=0)
        low.gather(30)
        high.gather(30)
    # Order of starts on the worker (the producer may collect two batches' results in
    # either order when they arrive together).
    assert RAN == ["0.010"] * 4 + ["0.01"] * 4


def test_a_broken_worker_environment_gives_no_reward(
    redis_server: RedisServer, thread_worker
) -> None:
    w = thread_worker(backend=broken)
    with QueueExecutor(redis_server.url) as ex:
        results = ex.run(sleeps(3))
    assert {(r.verdict, r.reward, r.attempts) for r in results} == {("sandbox_error", None, 2)}
    assert b"assay_sandbox_errors_total 6.0" in w.metrics.render()


def test_the_worker_exports_queue_depth_lag_claims_and_throughput(
    redis_server: RedisServer, thread_worker
) -> None:
    w = thread_worker(slots=2)
    with QueueExecutor(redis_server.url) as ex:
        ex.run(sleeps(5))
        ex.submit(sleeps(3, 1.0), priority=LOW)
        deadline = time.monotonic() + 10
        while ex.broker.lag()["low"] > 1 and time.monotonic() < deadline:
            time.sleep(0.02)  # the worker takes two (its two slots)
    text = w.metrics.render().decode()
    assert "assay_fleet_jobs_total 5.0" in text
    assert 'assay_fleet_queue_depth{priority="low"} 3.0' in text
    assert 'assay_fleet_queue_lag{priority="low"} 1.0' in text
    assert "assay_fleet_claims_total 0.0" in text


def test_a_wrong_token_is_refused_without_echoing_it(redis_server: RedisServer) -> None:
    url = redis_server.url.replace("fleet-token", "not-the-token")
    with pytest.raises(ConfigError) as err:
        RedisBroker(url)
    assert "not-the-token" not in str(err.value)


def test_a_job_stays_pending_until_its_result_is_stored_and_a_second_result_is_dropped(
    redis_server: RedisServer,
) -> None:
    broker = RedisBroker(redis_server.url)
    try:
        broker.enqueue(NewBatch("b", "normal", [encode_job(RunJob("0"), False)]), 10)
        ((first, start),) = broker.read("slow", 1, 0)
        assert start.attempt == 1
        ((second, again),) = broker.claim("fast", 0.0, 1)  # the slow one looked dead
        assert again.attempt == 2
        assert broker.depth()["normal"] == 1  # taken twice, finished by neither yet
        assert broker.finish([(second, b'{"from": "fast"}')]) == [True]
        assert broker.finish([(first, b'{"from": "slow"}')]) == [False]
        assert broker.depth()["normal"] == 0
        (stored,) = broker.results({"b": "0"}, 0.1)
        assert stored.body == b'{"from": "fast"}'
    finally:
        broker.close()
