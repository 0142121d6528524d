"""Fixtures of the session tests: sessions on the shared test pool, closed after each test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from assay import Runner
from assay.sessions import Session, SessionLimits

SMALL = SessionLimits(cpu_s=60, memory_mb=256, processes=32, disk_mb=64)


@pytest.fixture
def open_session(runner: Runner) -> Iterator[Callable[..., Session]]:
    made: list[Session] = []

    def _open(**kwargs: Any) -> Session:
        kwargs.setdefault("limits", SMALL)
        s = Session(runner, **kwargs)
        made.append(s)
        return s

    yield _open
    for s in made:
        s.close()
