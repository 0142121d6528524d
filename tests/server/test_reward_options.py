"""``/get_reward``'s documented options: ``limits`` for every entry and
``stop_on_failure`` (on by default: the reward is binary)."""

from __future__ import annotations

import time

import httpx

from assay.executor import LocalExecutor
from assay.telemetry import MemoryWriter
from assay.telemetry.recent import TeeWriter

SPIN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6:\n    pass\n"
LABEL = {"inputs": ["1\n", "2\n", "3\n"], "outputs": ["1\n", "2\n", "3\n"]}


def _tests_run(executor: LocalExecutor, code_marker: str) -> int:
    """Tests judged for the one record whose code holds ``code_marker`` (the record is
    written just after the result is handed over, so it may lag the response a moment)."""
    records = executor.records
    if isinstance(records, TeeWriter):  # assay serve feeds /dashboard through a tee
        records = records.inner
    assert isinstance(records, MemoryWriter)
    deadline = time.monotonic() + 10
    while True:
        found = [r for r in list(records.records) if code_marker in r["code"]]
        if found or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    [rec] = found
    return len(rec["tests"])


def test_limits_apply_to_every_entry(client: httpx.Client) -> None:
    code = SPIN + "print(input())  # limits\n"
    fenced = "```python\n" + code + "```"
    tight = client.post(
        "/get_reward", json={"query": [fenced], "labels": [LABEL], "limits": {"time_s": 0.3}}
    )
    assert tight.status_code == 200, tight.text
    assert tight.json()["extra_logs"]["verdict"] == ["time_limit"]
    roomy = client.post("/get_reward", json={"query": [fenced], "labels": [LABEL]})
    assert roomy.json()["extra_logs"]["verdict"] == ["accepted"]


def test_bad_limits_name_the_field(client: httpx.Client) -> None:
    r = client.post(
        "/get_reward", json={"query": ["x"], "labels": [LABEL], "limits": {"time_s": -1}}
    )
    assert r.status_code == 422 and "limits.time_s" in r.text


def test_stop_on_failure_is_on_by_default(
    client: httpx.Client, sandbox_executor: LocalExecutor
) -> None:
    wrong = "```python\nprint(0)  # stop-default\n```"
    assert client.post("/get_reward", json={"query": [wrong], "labels": [LABEL]}).status_code == 200
    assert _tests_run(sandbox_executor, "stop-default") < 3  # < 3: parts may run in parallel
    every = "```python\nprint(0)  # stop-off\n```"
    body = {"query": [every], "labels": [LABEL], "stop_on_failure": False}
    assert client.post("/get_reward", json=body).status_code == 200
    assert _tests_run(sandbox_executor, "stop-off") == 3
