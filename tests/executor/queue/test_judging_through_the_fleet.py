"""Judged submissions end to end through the fleet: a trainer integration (veRL's
``compute_score_batch``) given a :class:`QueueExecutor`, a real redis-server, and a worker
judging in the real sandbox."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from _redis_server import RedisServer

from assay import LocalExecutor, Runner
from assay.executor.queue import QueueExecutor, RedisBroker, Worker
from assay.integrations.verl import compute_score_batch

ECHO = {"inputs": ["1\n", "2\n"], "outputs": ["1\n", "2\n"]}


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


@pytest.mark.slow
def test_a_trainer_gets_rewards_from_workers_judging_in_the_sandbox(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    with Runner() as runner, LocalExecutor(runner, slots=1, state_dir=tmp_path) as local:
        worker = Worker(RedisBroker(redis_server.url), local, name="sandboxed")
        thread = threading.Thread(target=worker.run, daemon=True)
        thread.start()
        try:
            with QueueExecutor(redis_server.url) as fleet:
                rows = compute_score_batch(
                    ["apps", "apps"],
                    [fenced("print(input())"), fenced("print(0)")],
                    [ECHO, ECHO],
                    executor=fleet,
                )
        finally:
            worker.stop()
            thread.join(30)
    assert [(r["score"], r["verdict"]) for r in rows] == [(1.0, "accepted"), (0.0, "wrong_answer")]
