"""SandboxFusion's /run_jupyter, called with SandboxFusion's own client package (PyPI
``sandbox-fusion``), which parses every answer into its response model."""

from __future__ import annotations

import base64

import httpx
from sandbox_fusion import RunJupyterRequest, run_jupyter
from sandbox_fusion.models import CommandRunStatus, RunStatus


def test_state_carries_from_cell_to_cell(server) -> None:  # type: ignore[no-untyped-def]
    request = RunJupyterRequest(
        cells=[
            "a = 123",
            "a",
            "print(a)",
            'import sys; sys.stderr.write("stderr message")',
            "open('out.txt', 'w').write(open('in.txt').read().upper())",
            'raise RuntimeError("error message")',
            "a + 1",
        ],
        files={"in.txt": base64.b64encode(b"hello").decode()},
        fetch_files=["out.txt", "missing.txt"],
    )
    resp = run_jupyter(request, endpoint=server.url, max_attempts=1)
    assert resp.status == RunStatus.Failed  # a cell raised
    assert resp.driver is not None and resp.driver.status == CommandRunStatus.Finished
    cells = resp.cells
    assert len(cells) == 7
    assert cells[1].display == [{"text/plain": "123"}]
    assert cells[2].stdout == "123\n"
    assert cells[3].stderr == "stderr message"
    err = cells[5].error[0]
    assert (err["ename"], err["evalue"]) == ("RuntimeError", "error message")
    assert cells[6].display == [{"text/plain": "124"}]  # the error did not lose the state
    assert base64.b64decode(resp.files["out.txt"]) == b"HELLO"
    assert "missing.txt" not in resp.files


def test_cell_timeout_stops_the_notebook(server) -> None:  # type: ignore[no-untyped-def]
    request = RunJupyterRequest(
        cells=["x = 1", "while True: pass", "print('never')"], cell_timeout=1, total_timeout=20
    )
    resp = run_jupyter(request, endpoint=server.url, max_attempts=1)
    assert resp.status == RunStatus.Failed
    assert resp.driver is not None and resp.driver.status == CommandRunStatus.TimeLimitExceeded
    assert len(resp.cells) == 2


def test_success_and_bad_fields(client: httpx.Client, server) -> None:  # type: ignore[no-untyped-def]
    ok = run_jupyter(RunJupyterRequest(cells=["1 + 1"]), endpoint=server.url, max_attempts=1)
    assert ok.status == RunStatus.Success and ok.cells[0].display == [{"text/plain": "2"}]
    r = client.post("/run_jupyter", json={"cells": ["1"], "cell_timeout": 100, "total_timeout": 5})
    assert r.status_code == 422 and r.json()["field"] == "cell_timeout"
    r = client.post("/run_jupyter", json={"cells": ["1"], "kernel": "ruby"})
    assert r.status_code == 422 and r.json()["field"] == "kernel"
