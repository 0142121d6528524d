"""Claim: the supervisor's environment never reaches the program; its env is exactly SANDBOX_ENV.

Trainers run with credentials in their environment. A secret exported in the supervisor's
process *before* the sandbox pool (and its fork server) is created must not be visible to the
program anywhere: not in ``os.environ``, not in ``/proc/self/environ`` nor any visible
process's ``environ`` or ``cmdline`` (``/proc/1`` included), not anywhere in the program's own
memory (every program is a fork of a warm interpreter). The environment a program sees is
exactly ``defaults.SANDBOX_ENV``, for Python programs and for executables alike.
"""

from __future__ import annotations

import json
import uuid

import pytest
from _memscan import READABLE_MEMORY

from assay import Limits, Runner, RunRequest, defaults

# The program never holds the secret itself: it hunts for its *shape*, so any match is a leak.
PROBE = (
    READABLE_MEMORY
    + r"""
import json, os, re

shape = re.compile(rb"(?:ASSAY_TEST_SECRET=)?assay-secret-[0-9a-f]{32}")
found = []

def hunt(where, data):
    found.extend(f"{where}: {m.group().decode()}" for m in shape.finditer(data))

hunt("os.environ", repr(dict(os.environ)).encode())
if any(k.startswith("ASSAY") for k in os.environ):
    found.append("os.environ has ASSAY* names")
pids = ["self", "1"] + [d for d in os.listdir("/proc") if d.isdigit()]
for pid in pids:
    for name in ("environ", "cmdline"):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as fh:
                hunt(f"/proc/{pid}/{name}", fh.read())
        except OSError:
            continue
for where, chunk in readable_memory():
    hunt(where, chunk)
print(json.dumps({"env": dict(os.environ), "found": found}))
"""
)


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> str:
    value = f"assay-secret-{uuid.uuid4().hex}"
    monkeypatch.setenv("ASSAY_TEST_SECRET", value)
    return value


def test_env_secret_never_reaches_the_program(secret: str) -> None:
    # A fresh pool: the secret is in the environment before its fork server and slots exist.
    with Runner() as fresh:
        python_run = fresh.run(PROBE, limits=Limits(time_s=5))
        exec_run = fresh.sandbox.execute(RunRequest("exec", ["/usr/bin/env"], limits=Limits()))
        cat_run = fresh.sandbox.execute(
            RunRequest("exec", ["/bin/cat", "/proc/self/environ"], limits=Limits())
        )

    assert python_run.status == "ok", (python_run.status, python_run.stderr[-2000:])
    report = json.loads(python_run.stdout)
    assert report["found"] == [], f"the secret is visible inside: {report['found']}"
    assert report["env"] == defaults.SANDBOX_ENV, report["env"]

    assert exec_run.status == "ok", (exec_run.status, exec_run.stderr[-2000:])
    exec_env = dict(line.split("=", 1) for line in exec_run.stdout.decode().splitlines())
    assert exec_env == defaults.SANDBOX_ENV, exec_env

    assert cat_run.status == "ok", (cat_run.status, cat_run.stderr[-2000:])
    raw_env = dict(item.split(b"=", 1) for item in cat_run.stdout.split(b"\0") if item)
    assert raw_env == {k.encode(): v.encode() for k, v in defaults.SANDBOX_ENV.items()}

    for result in (python_run, exec_run, cat_run):
        assert secret.encode() not in result.stdout + result.stderr
        assert b"ASSAY_TEST_SECRET" not in result.stdout + result.stderr
