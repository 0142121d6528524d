"""Claim: nothing of one run's request can be read by a later run, even on the same slot.

A slot's init is a long-lived process and every program of the slot is a fork of it, so
anything the init ever held in memory is inherited by every later program, which may read
its whole address space (``/proc/self/mem``). A run's request (argv, environment, the names of
its input and collected files, its stdin and file contents) may carry test data or
credentials; a later program that scans its own memory must find none of it.
"""

from __future__ import annotations

import json
import uuid

import pytest
from _memscan import READABLE_MEMORY

from assay import Limits, RunRequest, defaults

# The scanner hunts for the *shape* of the secrets, so it never holds one itself.
SCAN = (
    READABLE_MEMORY
    + r"""
import json, re
shape = re.compile(rb"remnant-[0-9a-f]{32}")
hits = set()
for _where, chunk in readable_memory():
    hits.update(m.group().decode() for m in shape.finditer(chunk))
print(json.dumps(sorted(hits)))
"""
)


def _victim(secret: str, where: str) -> RunRequest:
    limits = Limits(time_s=2)
    if where == "argv":
        return RunRequest("exec", ["/bin/true", secret], limits=limits)
    if where == "env":
        return RunRequest(
            "exec", ["/bin/true"], env={**defaults.SANDBOX_ENV, "TOKEN": secret}, limits=limits
        )
    if where == "input-name":
        return RunRequest("exec", ["/bin/true"], [(f"{secret}.txt", b"x", 0o644)], limits=limits)
    if where == "collect-name":
        return RunRequest("exec", ["/bin/true"], collect=[f"{secret}.txt"], limits=limits)
    if where == "stdin":
        return RunRequest("exec", ["/bin/cat"], stdin=secret.encode(), limits=limits)
    if where == "file-content":
        return RunRequest(
            "exec", ["/bin/cat", "in.txt"], [("in.txt", secret.encode(), 0o644)], limits=limits
        )
    raise AssertionError(where)


@pytest.mark.parametrize(
    "where", ["argv", "env", "input-name", "collect-name", "stdin", "file-content"]
)
def test_later_runs_cannot_read_an_earlier_request(one_slot_runner, where: str) -> None:  # type: ignore[no-untyped-def]
    secret = f"remnant-{uuid.uuid4().hex}"
    sandbox = one_slot_runner.sandbox
    victim = sandbox.execute(_victim(secret, where))
    assert victim.status == "ok", (victim.status, victim.stderr[-2000:])

    for _ in range(2):  # one slot: these programs are forks of the victim's slot init
        spy = sandbox.execute(
            RunRequest(
                "python",
                ["/work/main.py"],
                [("main.py", SCAN.encode(), 0o644)],
                limits=Limits(time_s=5),
            )
        )
        assert spy.status == "ok", (spy.status, spy.stderr[-2000:])
        found = json.loads(spy.stdout)
        assert secret not in found, f"a later run read the earlier run's {where}: {found}"
