"""Plain runs over HTTP are runs, not verdicts: never answered from the result cache."""

from __future__ import annotations

import httpx

RANDOM = "import random; print(random.random())"


def test_run_code_runs_every_time(client: httpx.Client) -> None:
    outs = {
        client.post("/run_code", json={"code": RANDOM, "language": "python"}).json()["run_result"][
            "stdout"
        ]
        for _ in range(3)
    }
    assert len(outs) == 3


def test_v1_run_runs_every_time(client: httpx.Client) -> None:
    outs = {client.post("/v1/run", json={"code": RANDOM}).json()["stdout"] for _ in range(3)}
    assert len(outs) == 3
