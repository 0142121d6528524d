"""Native /v1 API, batches with server-sent events, /get_reward, /submit, ops endpoints."""

from __future__ import annotations

import base64
import json
import threading

import httpx
import pytest
from server_helpers import fake_run, live, memory_executor

from assay.executor import Job
from assay.server import Settings, create_app

ADD = {
    "id": "add",
    "tests": [
        {"kind": "stdio", "input": "1 2\n", "expected": "3\n"},
        {"kind": "stdio", "input": "5 5\n", "expected": "10\n"},
    ],
}
SQ = {"id": "sq", "tests": [{"kind": "call", "fn_name": "sq", "args": [3], "expected_value": 9}]}
GOOD = "print(sum(map(int, input().split())))"


def test_v1_run_with_files(client: httpx.Client) -> None:
    r = client.post(
        "/v1/run",
        json={
            "code": "print(open('in.txt').read()); open('o.txt', 'w').write('done')",
            "files": {"in.txt": base64.b64encode(b"data").decode()},
            "fetch_files": ["o.txt"],
            "limits": {"time_s": 2, "memory_mb": 256},
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "ok" and body["stdout"] == "data\n"
    assert base64.b64decode(body["files"]["o.txt"]) == b"done"


def test_v1_judge_one_and_many(client: httpx.Client) -> None:
    one = client.post("/v1/judge", json={"code": GOOD, "problem": ADD}).json()["results"]
    assert [(r["verdict"], r["reward"], r["passed"], r["total"]) for r in one] == [
        ("accepted", 1.0, 2, 2)
    ]
    many = client.post(
        "/v1/judge",
        json={
            "problem": ADD,
            "submissions": [
                {"code": GOOD},
                {"code": "print(3)"},
                {"code": "def sq(x): return x * x", "problem": SQ},
                {"code": "def sq(x): return x + x", "problem": SQ},
                {"code": "raise SystemExit(1)"},
                {"code": "int main(){}", "language": "cpp"},
            ],
        },
    )
    assert many.status_code == 200, many.text
    verdicts = [r["verdict"] for r in many.json()["results"]]
    assert verdicts == [
        "accepted",
        "wrong_answer",
        "accepted",
        "wrong_answer",
        "runtime_error",
        "wrong_answer",
    ]


def test_v1_judge_takes_script_tests(client: httpx.Client) -> None:
    """Assert-style tests (MBPP, HumanEval) over /v1/judge, judged with the script guards
    (issue 29: the integrations' url= mode could not send them and every row was None)."""
    mbpp = {
        "id": "area",
        "tests": [
            {"kind": "script", "code": "assert area(10, 24) == 240"},
            {"kind": "script", "code": "assert area(1, 1) == 1"},
        ],
    }
    humaneval = {
        "id": "inc",
        "tests": [
            {
                "kind": "script",
                "code": "def check(f):\n    assert f(1) == 2\n",
                "options": {"setup": "def inc(x):\n", "call": "check(inc)", "requires": ["inc"]},
            }
        ],
    }
    r = client.post(
        "/v1/judge",
        json={
            "submissions": [
                {"code": "def area(a, b): return a * b / 1.0", "problem": mbpp},
                {"code": "def area(a, b): return a + b", "problem": mbpp},
                {"code": "import sys\ndef area(a, b): sys.exit(0)", "problem": mbpp},
                {"code": "def inc(x):\n    return x + 1", "problem": humaneval},
            ]
        },
    )
    assert r.status_code == 200, r.text
    got = [(x["verdict"], x["passed"]) for x in r.json()["results"]]
    assert got == [("accepted", 2), ("wrong_answer", 0), ("runtime_error", 0), ("accepted", 1)]


def test_v1_judge_script_test_fields_are_checked(client: httpx.Client) -> None:
    bad = {"id": "x", "tests": [{"kind": "script", "code": "assert 1", "options": {"x": 1}}]}
    r = client.post("/v1/judge", json={"code": "pass", "problem": bad})
    assert r.status_code == 422
    assert "problem.tests[0].options.x" in r.text


def test_v1_judge_a_problem_asking_for_loopback(client: httpx.Client) -> None:
    """``problem.network``: a test that serves on 127.0.0.1 inside the run passes with
    ``"loopback"``, fails without it, and any other value is a 422 naming the field."""
    code = (
        "import socket\ns = socket.socket()\ns.bind(('127.0.0.1', 0))\ns.listen(1)\n"
        "c = socket.create_connection(s.getsockname())\nprint('up')\n"
    )
    problem = {"id": "lo", "tests": [{"kind": "stdio", "input": "", "expected": "up\n"}]}
    verdicts = []
    for network in ("loopback", "none"):
        body = {"code": code, "problem": {**problem, "network": network}}
        r = client.post("/v1/judge", json=body)
        assert r.status_code == 200, r.text
        verdicts.append(r.json()["results"][0]["verdict"])
    assert verdicts == ["accepted", "runtime_error"]
    r = client.post("/v1/judge", json={"code": code, "problem": {**problem, "network": "host"}})
    assert r.status_code == 422 and r.json()["field"] == "problem.network", r.text


def test_v1_judge_and_a_session_choose_their_isolation_tier(client: httpx.Client) -> None:
    """``isolation`` on a judged problem and on a session (before: only ``/v1/run`` had
    it): the tests of ``"gvisor"`` run on gVisor's kernel; another tier is a 422 naming
    the field, checked before anything runs."""
    import os

    from assay.sandbox.gvisor import available

    code = "import os; print(os.uname().release)"
    host = os.uname().release
    problem = {"id": "k", "tests": [{"kind": "stdio", "input": "", "expected": host}]}
    r = client.post("/v1/judge", json={"code": code, "problem": {**problem, "isolation": "vm"}})
    assert r.status_code == 422 and r.json()["field"] == "problem.isolation", r.text
    r = client.post("/v1/sessions", json={"isolation": "vm"})
    assert r.status_code == 422 and r.json()["field"] == "isolation", r.text
    ok, why = available()
    if not ok:
        pytest.skip(f"gVisor tier: {why}")
    verdicts = []
    for tier in ("default", "gvisor"):
        body = {"code": code, "problem": {**problem, "isolation": tier}}
        r = client.post("/v1/judge", json=body)
        assert r.status_code == 200, r.text
        verdicts.append(r.json()["results"][0]["verdict"])
    assert verdicts == ["accepted", "wrong_answer"]  # gVisor's kernel answered the second
    r = client.post("/v1/sessions", json={"isolation": "gvisor"})
    assert r.status_code == 200 and r.json()["isolation"] == "gvisor", r.text
    sid = r.json()["id"]
    step = client.post(f"/v1/sessions/{sid}/exec", json={"command": "uname -r"}).json()
    assert step["exit_code"] == 0 and step["stdout"].strip() not in ("", host), step
    assert client.delete(f"/v1/sessions/{sid}").status_code == 204


def test_batches_poll_events_and_cancel(client: httpx.Client) -> None:
    subs = [{"code": GOOD}, {"code": "print(0)"}, {"code": GOOD + "  # other"}]
    r = client.post("/v1/batches", json={"problem": ADD, "submissions": subs})
    assert r.status_code == 202, r.text
    bid = r.json()["batch_id"]
    events: list[tuple[str, dict]] = []  # type: ignore[type-arg]
    with client.stream("GET", f"/v1/batches/{bid}/events") as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        kind = ""
        for line in stream.iter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                events.append((kind, json.loads(line[6:])))
    assert [k for k, _ in events] == ["result"] * 3 + ["end"]
    by_index = {d["index"]: d["verdict"] for k, d in events if k == "result"}
    assert by_index == {0: "accepted", 1: "wrong_answer", 2: "accepted"}
    status = client.get(f"/v1/batches/{bid}").json()
    assert status["status"] == "done" and status["finished"] == 3
    assert [x["index"] for x in status["results"]] == [0, 1, 2]
    assert client.get("/v1/batches/nope").status_code == 404


def test_cancel_gives_explicit_cancelled_results() -> None:
    gate = threading.Event()

    def block(job: Job) -> None:
        gate.wait(10)

    ex = memory_executor(fake_run(block), cache=False)
    try:
        with live(create_app(ex, settings=Settings())) as srv, srv.client() as c:
            # Native batches judge submissions; the fake backend only runs RunJobs, so the
            # batch is cancelled before any job is looked at by it.
            r = c.post("/v1/batches", json={"problem": ADD, "submissions": [{"code": "x"}] * 1})
            assert r.status_code == 202
            bid = r.json()["batch_id"]
            gone = c.delete(f"/v1/batches/{bid}").json()
            assert gone["status"] == "done"
            assert [x["outcome"] for x in gone["results"]] == ["cancelled"]
            assert gone["results"][0]["reward"] is None
    finally:
        gate.set()
        ex.close()


def test_get_reward(client: httpx.Client) -> None:
    prompt = "Add two numbers.\n"
    fenced = prompt + "Sure:\n```python\n" + GOOD + "\n```\n"
    wrong = prompt + "```python\nprint(0)\n```"
    plain = prompt + GOOD
    label = {"inputs": ["1 2\n", "5 5\n"], "outputs": ["3\n", "10\n"]}
    call = json.dumps({"fn_name": "sq", "inputs": [[3], [4]], "outputs": [9, 16]})
    r = client.post(
        "/get_reward",
        json={
            "query": [fenced, wrong, plain, prompt + "```py\ndef sq(x):\n    return x*x\n```"],
            "prompts": [prompt] * 4,
            "labels": [label, json.dumps(label), label, call],
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["rewards"] == [1.0, 0.0, 1.0, 1.0]
    assert body["scores"] == body["rewards"]
    assert body["extra_logs"]["verdict"] == ["accepted", "wrong_answer", "accepted", "accepted"]
    assert body["extra_logs"]["usable"] == [True] * 4


def test_submit_with_provided_data(client: httpx.Client) -> None:
    row = {
        "id": 7,
        "test": [
            {"input": {"stdin": "1 2\n"}, "output": {"stdout": "3\n"}},
            {"input": {"stdin": "2 2\n"}, "output": {"stdout": "4\n"}},
        ],
    }
    completion = "Here:\n```python\n" + GOOD + "\n```"
    body = {
        "dataset": "code_contests",
        "id": 7,
        "completion": completion,
        "config": {"language": "python", "provided_data": row},
    }
    r = client.post("/submit", json=body)
    assert r.status_code == 200, r.text
    res = r.json()
    assert res["accepted"] is True and res["extracted_type"] == "fenced"
    assert res["extracted_code"].strip() == GOOD
    assert [t["passed"] for t in res["tests"]] == [True, True]
    assert res["tests"][0]["exec_info"]["status"] == "Success"
    body["completion"] = "```python\nprint(3)\n```"
    res = client.post("/submit", json=body).json()
    assert res["accepted"] is False
    assert [t["passed"] for t in res["tests"]] == [True, False]
    # APPS-style call tests in the same envelope
    body["config"]["provided_data"] = {
        "id": 7,
        "input_output": json.dumps({"fn_name": "sq", "inputs": [[2]], "outputs": [4]}),
    }
    body["completion"] = "```python\ndef sq(x): return x*x\n```"
    assert client.post("/submit", json=body).json()["accepted"] is True


def test_ops_endpoints(client: httpx.Client) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz").json()
    assert ready["status"] == "ready" and ready["slots"] == 2
    client.post("/run_code", json={"code": "print(1)", "language": "python"})
    m = client.get("/metrics")
    assert m.status_code == 200 and m.headers["content-type"].startswith("text/plain")
    assert "assay_" in m.text and "_total" in m.text
    schema = client.get("/openapi.json").json()
    assert {"/run_code", "/submit", "/v1/run", "/v1/judge", "/get_reward"} <= set(schema["paths"])


def test_graceful_shutdown_finishes_inflight_and_cancels_the_rest() -> None:
    gate = threading.Event()

    def slow(job: Job) -> None:
        gate.wait(0.5)

    ex = memory_executor(fake_run(slow), cache=False)
    try:
        app = create_app(ex, settings=Settings(shutdown_grace_s=0.3))
        answers: list[httpx.Response] = []
        with live(app) as srv:

            def send() -> None:
                with srv.client() as own:
                    body = {"code": "print(1)", "language": "python"}
                    answers.append(own.post("/run_code", json=body))

            t = threading.Thread(target=send)
            t.start()
            while ex.busy == 0:
                threading.Event().wait(0.01)
            with srv.client() as c:  # a batch that cannot finish within the grace period
                subs = [{"code": "x"}]
                bid = c.post("/v1/batches", json={"problem": ADD, "submissions": subs}).json()
            srv.server.should_exit = True
            t.join(20)
        assert [a.status_code for a in answers] == [200]
        assert answers[0].json()["run_result"]["stdout"] == "print(1)"
        kept = app.state.service.batches[bid["batch_id"]]
        assert kept.handle.done
        assert [r.outcome for r in kept.results] == ["cancelled"]
    finally:
        gate.set()
        ex.close()


def test_v1_judge_passed_and_total_with_stop_on_failure(client: httpx.Client) -> None:
    # Issue 14: passed 1, total 2 with tests [(0, wrong_answer), (2, accepted)]. Now total
    # is the problem's test count and passed the tests before the first failure.
    code = "def sq(x):\n    return x * x\nif __name__ == '__main__':\n    print(int(input()) + 1)\n"
    problem = {
        "id": "mixed",
        "tests": [
            {"kind": "stdio", "input": "1\n", "expected": "1\n"},
            {"kind": "stdio", "input": "2\n", "expected": "3\n"},
            {"kind": "call", "fn_name": "sq", "args": [3], "expected_value": 9},
        ],
    }
    body = {"code": code, "problem": problem, "stop_on_failure": True}
    (r,) = client.post("/v1/judge", json=body).json()["results"]
    assert (r["verdict"], r["passed"], r["total"]) == ("wrong_answer", 0, 3)
    assert [(t["index"], t["verdict"]) for t in r["tests"]] == [(0, "wrong_answer")]
    (r,) = client.post("/v1/judge", json={**body, "stop_on_failure": False}).json()["results"]
    assert (r["verdict"], r["passed"], r["total"]) == ("wrong_answer", 2, 3)


def _events(client: httpx.Client, bid: str, last: str | None = None) -> list[tuple[str, str, dict]]:  # type: ignore[type-arg]
    """(event, id, data) of a batch's event stream, optionally resumed after ``last``."""
    headers = {"Last-Event-ID": last} if last is not None else {}
    out: list[tuple[str, str, dict]] = []  # type: ignore[type-arg]
    kind, ident = "", ""
    with client.stream("GET", f"/v1/batches/{bid}/events", headers=headers) as stream:
        assert stream.status_code == 200
        for line in stream.iter_lines():
            if line.startswith("event: "):
                kind, ident = line[7:], ""
            elif line.startswith("id: "):
                ident = line[4:]
            elif line.startswith("data: "):
                out.append((kind, ident, json.loads(line[6:])))
    return out


def test_batch_events_resume_after_last_event_id(client: httpx.Client) -> None:
    # Issue 14: ids were the jobs' indices (not increasing) and Last-Event-ID was ignored.
    subs = [{"code": GOOD + f"  # {i}"} for i in range(4)]
    bid = client.post("/v1/batches", json={"problem": ADD, "submissions": subs}).json()["batch_id"]
    first = _events(client, bid)
    assert [k for k, _, _ in first] == ["result"] * 4 + ["end"]
    assert [i for _, i, _ in first[:4]] == ["1", "2", "3", "4"]
    again = _events(client, bid, last="2")
    assert [(k, i) for k, i, _ in again] == [("result", "3"), ("result", "4"), ("end", "")]
    assert [d["index"] for _, _, d in again[:2]] == [d["index"] for _, _, d in first[2:4]]
    assert [k for k, _, _ in _events(client, bid, last="4")] == ["end"]
    bad = client.get(f"/v1/batches/{bid}/events", headers={"Last-Event-ID": "9"})
    assert bad.status_code == 422 and "Last-Event-ID" in bad.json()["field"]


def test_language_aliases_over_http(client: httpx.Client) -> None:
    # Issue 14: the usual aliases work wherever a language is named.
    for alias, code in (
        ("py", "print(7)"),
        ("python3", "print(7)"),
        ("sh", "echo 7"),
        ("js", "console.log(7)"),
        ("nodejs", "console.log(7)"),
    ):
        r = client.post("/v1/run", json={"code": code, "language": alias})
        assert r.status_code == 200, (alias, r.text)
        assert (r.json()["status"], r.json()["stdout"]) == ("ok", "7\n"), alias
    r = client.post("/run_code", json={"code": "echo 7", "language": "SH"})
    assert r.json()["run_result"]["stdout"] == "7\n"
    body = {"code": "def sq(x):\n    return x * x\n", "language": "py", "problem": SQ}
    (res,) = client.post("/v1/judge", json=body).json()["results"]
    assert res["verdict"] == "accepted"
