"""``ExecStep``: a step is checked once, where it is made, and every layer after that (the
session, the awaited path, a Ray node's agent, the HTTP client) takes it as it is."""

from __future__ import annotations

import pytest

from assay.errors import ValidationError
from assay.sessions import ExecStep, SessionLimits
from assay.sessions._args import exec_message


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"command": ""}, "command"),
        ({"command": "   "}, "command"),
        ({"command": "x" * 100_001}, "command"),
        ({"command": 7}, "command"),
        ({"command": "ls", "timeout_s": 0}, "timeout_s"),
        ({"command": "ls", "timeout_s": 4 * 3600 + 1}, "timeout_s"),
        ({"command": "ls", "timeout_s": True}, "timeout_s"),
        ({"command": "ls", "idle_timeout_s": -1.0}, "idle_timeout_s"),
        ({"command": "ls", "stdin": 5}, "stdin"),
    ],
)
def test_a_bad_step_is_refused_naming_its_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        ExecStep(**kwargs)  # type: ignore[arg-type]
    assert err.value.field == field


def test_the_agent_message_carries_the_step_and_the_sessions_per_step_limits() -> None:
    step = ExecStep("cat", timeout_s=5, idle_timeout_s=2, stdin="hé")
    assert step.stdin == "hé".encode() and step.timeout_s == 5.0
    limits = SessionLimits(output_bytes=4096, step_cpu_s=3.0, step_memory_mb=64)
    assert exec_message(limits, step) == {
        "op": "exec",
        "command": "cat",
        "timeout_s": 5.0,
        "idle_timeout_s": 2.0,
        "output_bytes": 4096,
        "cpu_s": 3.0,
        "memory_mb": 64,
        "stdin": "aMOp",
    }
