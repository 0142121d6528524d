"""/v1/sessions with a task: POST /verify and GET /rewards against a live server."""

from __future__ import annotations

import httpx

SMALL = {"memory_mb": 128, "processes": 32, "disk_mb": 32, "cpu_s": 60}
TASK = {
    "task_id": "calc",
    "instructions": "fix add",
    "files": {"calc.py": "def add(a, b):\n    return a - b\n"},
    "tests": {
        "test_hidden.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
        "\n\ndef test_zero():\n    assert add(0, 0) == 0\n"
    },
    "reference_patch": "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
    "-    return a - b\n+    return a + b\n",
}


def test_verify_over_http(client: httpx.Client) -> None:
    r = client.post("/v1/sessions", json={"limits": SMALL, "task": TASK, "gated": True})
    assert r.status_code == 200, r.text
    base = f"/v1/sessions/{r.json()['id']}"
    first = client.post(f"{base}/verify", json={}).json()
    assert (first["passed"], first["total"], first["verdict"]) == (1, 2, "failed")
    client.put(f"{base}/files/calc.py", content=b"def add(a, b):\n    return a + b\n")
    v = client.post(f"{base}/verify", json={"diagnosis": {"lines": ["calc.py:2"]}}).json()
    assert v["newly_passing"] == ["test_hidden.py::test_add"] and v["newly_failing"] == []
    assert v["verdict"] == "accepted" and v["reward"] == 1.0
    assert v["step_reward"] == 0.5 + 0.2 and v["protected_edits"] == []
    ep = client.get(f"{base}/rewards").json()
    assert ep["paid"] and ep["step_rewards"] == [0.0, 0.7] and ep["final_reward"] == 1.0
    client.delete(base)


def test_bad_tasks_name_the_field(client: httpx.Client) -> None:
    bad = {**TASK, "repo": "/etc", "files": None}
    r = client.post("/v1/sessions", json={"limits": SMALL, "task": bad})
    assert r.status_code == 422 and "task.repo" in r.text
    r = client.post("/v1/sessions", json={"limits": SMALL, "task": {**TASK, "tests": {"/x": ""}}})
    assert r.status_code == 422 and "task.tests" in r.text
    sid = client.post("/v1/sessions", json={"limits": SMALL}).json()["id"]
    r = client.post(f"/v1/sessions/{sid}/verify", json={})
    assert r.status_code == 422 and "task" in r.text
    r = client.post(f"/v1/sessions/{sid}/verify", json={"diagnosis": {"oops": 1}})
    assert r.status_code == 422
