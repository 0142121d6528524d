"""Whoever can write to the fleet's broker must not run code outside a sandbox: a job or a
result that is a pickle (the usual way a Python queue is exploited) is refused as data,
never unpickled, by the worker and by the trainer. Attacks a real redis-server (started
here on loopback) directly, as a client with the broker's token would."""

from __future__ import annotations

import os
import pickle
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "executor" / "queue"))
from _fleet_backends import sleeping
from _redis_server import RedisServer, running

from assay import LocalExecutor, RunJob
from assay.executor.queue import QueueExecutor, RedisBroker, Worker
from assay.executor.queue._wire import encode_job
from assay.executor.queue.broker import NewBatch


class Exploit:
    """Unpickling this creates ``marker``: proof that code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, int]]:
        return (os.open, (str(self.marker), os.O_CREAT | os.O_WRONLY))


@pytest.fixture
def server(tmp_path: Path):
    with running(tmp_path) as s:
        yield s


def test_a_pickled_job_is_not_unpickled_by_the_worker(server: RedisServer, tmp_path: Path) -> None:
    marker = tmp_path / "worker-ran-attacker-code"
    broker = RedisBroker(server.url)
    evil = pickle.dumps(Exploit(marker))
    broker.enqueue(NewBatch("evil", "high", [evil, encode_job(RunJob("0"), False)]), 10)
    with LocalExecutor(backend=sleeping(), slots=1, state_dir=tmp_path) as ex:
        worker = Worker(broker, ex, name="target")
        thread = threading.Thread(target=worker.run, daemon=True)
        thread.start()
        with QueueExecutor(server.url) as producer:
            results = producer.collect("evil").gather(30)
        worker.stop()
        thread.join(30)
    assert not marker.exists()
    assert [(r.verdict, r.reward) for r in results] == [("sandbox_error", None), ("ok", None)]


def test_a_pickled_result_is_not_unpickled_by_the_trainer(
    server: RedisServer, tmp_path: Path
) -> None:
    import redis

    marker = tmp_path / "trainer-ran-attacker-code"
    with QueueExecutor(server.url) as producer:
        handle = producer.submit([RunJob("0")])
        client = redis.Redis.from_url(server.url)
        client.xadd(f"assay:out:{handle.id}", {"i": 0, "r": pickle.dumps(Exploit(marker))})
        (result,) = handle.gather(30)
    assert not marker.exists()
    assert (result.verdict, result.reward) == ("sandbox_error", None)
