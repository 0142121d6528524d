"""SessionManager: sessions by id, the cap on open sessions and memory, why ended ones ended."""

from __future__ import annotations

import pytest

from assay import Overloaded
from assay.errors import ValidationError
from assay.sessions import SessionEnded, SessionLimits, SessionManager, TooManySessions
from assay.sessions.manager import UnknownSession

SMALL = SessionLimits(memory_mb=64, processes=16, disk_mb=16)


def test_cap_on_open_sessions(runner) -> None:  # type: ignore[no-untyped-def]
    m = SessionManager(runner, max_sessions=2)
    a = m.create(limits=SMALL)
    b = m.create(limits=SMALL)
    try:
        with pytest.raises(TooManySessions, match="sessions 2 of 2") as info:
            m.create(limits=SMALL)
        assert isinstance(info.value, Overloaded) and info.value.retry_after > 0
        a.close()
        c = m.create(limits=SMALL)  # a closed session frees its place
        assert {s.id for s in m.sessions()} == {b.id, c.id}
    finally:
        m.close_all()
    assert m.sessions() == []


def test_memory_budget(runner) -> None:  # type: ignore[no-untyped-def]
    m = SessionManager(runner, memory_budget_mb=100)
    try:
        m.create(limits=SMALL)
        with pytest.raises(TooManySessions, match="memory MiB 64 of 100"):
            m.create(limits=SMALL)
    finally:
        m.close_all()


def test_get_fork_close_and_ended_reasons(runner) -> None:  # type: ignore[no-untyped-def]
    m = SessionManager(runner)
    s = m.create(limits=SMALL, files={"a": "1"})
    assert m.get(s.id) is s
    child = m.fork(s.id)
    assert child.read_file("a") == b"1"
    assert len(m.sessions()) == 2
    m.close(s.id)
    with pytest.raises(SessionEnded, match="closed"):
        m.get(s.id)
    with pytest.raises(UnknownSession):
        m.get("nope")
    m.close_all()
    with pytest.raises(SessionEnded):
        m.get(child.id)


def test_bad_cap(runner) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError, match="max_sessions"):
        SessionManager(runner, max_sessions=0)
