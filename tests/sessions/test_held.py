"""What a session manager and a node agent remember of their sessions."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from assay.sessions import SessionEnded, _held
from assay.sessions._held import HeldSessions


def _session(i: int) -> Any:
    return SimpleNamespace(id=f"s{i}", end_detail=f"detail {i}")


def test_open_then_ended_then_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_held, "REMEMBER_ENDED", 2)
    held = HeldSessions()
    sessions = [_session(i) for i in range(3)]
    for s in sessions:
        held.open[s.id] = s
    assert held.find("s0") is sessions[0]
    assert held.find("nope") is None
    for s in sessions:
        held.ended(s, "ttl")
    assert held.open == {}
    with pytest.raises(SessionEnded) as ended:
        held.find("s2")
    assert (ended.value.reason, ended.value.detail) == ("ttl", "detail 2")
    assert held.find("s0") is None  # the oldest of three, past the two remembered


def test_an_owned_session_is_found_by_its_owner_only() -> None:
    # Issue 26: another tenant's session, open or ended, must look like one that never was.
    held = HeldSessions()
    mine, anyones = _session(1), _session(2)
    held.hold(mine, "alice")
    held.hold(anyones)
    assert held.find("s1", "alice") is mine
    assert held.find("s1") is mine  # no owner asked: an admin's lookup
    assert held.find("s1", "bob") is None
    assert held.find("s2", "bob") is None  # held without an owner: nobody's to find
    held.ended(mine, "closed")
    assert held.find("s1", "bob") is None
    with pytest.raises(SessionEnded):
        held.find("s1", "alice")
