"""The service's settings: every ``ASSAY_SERVER_*`` variable is read in one place
(``Settings.from_env``), and the session defaults come from ``assay.defaults`` alone."""

from __future__ import annotations

import inspect

import pytest

from assay import defaults
from assay.client import SessionClient
from assay.server import Settings, create_app
from assay.server.sessions import CreateRequest, manager
from assay.sessions import Session


def test_session_caps_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_SERVER_MAX_SESSIONS", "7")
    monkeypatch.setenv("ASSAY_SERVER_SESSION_MEMORY_MB", "3000")
    s = Settings.from_env()
    assert (s.max_sessions, s.session_memory_mb) == (7, 3000)
    monkeypatch.delenv("ASSAY_SERVER_MAX_SESSIONS")
    monkeypatch.delenv("ASSAY_SERVER_SESSION_MEMORY_MB")
    s = Settings.from_env()
    assert (s.max_sessions, s.session_memory_mb) == (defaults.SERVER_MAX_SESSIONS, None)


def test_the_manager_takes_the_services_settings(sandbox_executor) -> None:  # type: ignore[no-untyped-def]
    """Settings given to ``create_app`` hold (the manager once read the environment
    itself, so a cap passed in code was ignored)."""
    from server_helpers import live

    settings = Settings(max_sessions=3, session_memory_mb=2048)
    app = create_app(sandbox_executor, settings=settings)
    with live(app):
        m = manager(app, sandbox_executor)
        assert (m.max_sessions, m.memory_budget_mb) == (3, 2048)


def test_every_session_entry_point_has_the_same_ttl_defaults() -> None:
    for fn in (Session.__init__, SessionClient.session):
        params = inspect.signature(fn).parameters
        assert params["ttl_s"].default == defaults.SESSION_TTL_S, fn
        assert params["idle_ttl_s"].default == defaults.SESSION_IDLE_TTL_S, fn
    fields = CreateRequest.model_fields
    assert fields["ttl_s"].default == defaults.SESSION_TTL_S
    assert fields["idle_ttl_s"].default == defaults.SESSION_IDLE_TTL_S
