"""``RemoteSession``'s forwarding, without a cluster: every session method the node agent
takes calls for is forwarded with Session's signature, its arguments checked on the driver,
and the steps among them counted. (Sessions on a real cluster: ``test_ray_sessions.py``.)"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from assay.executor.ray import _sessions
from assay.executor.ray._agent import SESSION_METHODS, SESSION_STEPS
from assay.executor.ray._sessions import RemoteSession
from assay.sessions import Session


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[Any, ...]]]:
    calls: list[tuple[str, tuple[Any, ...]]] = []

    def agent(node: object, method: str, *args: Any) -> tuple[Any, ...]:
        calls.append((method, args))
        return ("ok", f"answer {len(calls)}")

    monkeypatch.setattr(_sessions, "_call", agent)
    return calls


def _session() -> RemoteSession:
    s = object.__new__(RemoteSession)
    s.id, s.node, s.end_reason, s.steps, s._step_s, s.busy = "sid", None, None, 0, 0.05, False
    return s


def test_every_forwarded_method_has_the_session_signature_and_docs() -> None:
    assert SESSION_STEPS < SESSION_METHODS
    for name in SESSION_METHODS:
        forward, local = getattr(RemoteSession, name), getattr(Session, name)
        assert forward is not local, name
        assert inspect.signature(forward) == inspect.signature(local), name
        assert forward.__doc__ == local.__doc__, name


def test_a_step_goes_to_the_node_with_its_arguments_and_counts(sent: list[Any]) -> None:
    s = _session()
    assert s.exec("ls", idle_timeout_s=2.0) == "answer 1"
    assert s.run_cell("x = 1") == "answer 2"
    assert s.read_file("a.txt") == "answer 3"
    assert sent == [
        ("session_call", ("sid", "exec", ("ls",), {"idle_timeout_s": 2.0})),
        ("session_call", ("sid", "run_cell", ("x = 1",), {})),
        ("session_call", ("sid", "read_file", ("a.txt",), {})),
    ]
    assert s.steps == 2  # reading a file is not a step


def test_a_wrong_argument_fails_on_the_driver_without_a_call(sent: list[Any]) -> None:
    s = _session()
    with pytest.raises(TypeError):
        s.exec(comand="ls")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        s.write_file("a.txt")  # type: ignore[call-arg]
    assert sent == [] and s.steps == 0
