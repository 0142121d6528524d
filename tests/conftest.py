"""Shared fixtures: one sandbox pool per test session (it is thread-safe and reusable)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from assay import Limits, Runner
from assay.types import ExecResult


@pytest.fixture(scope="session")
def runner() -> Iterator[Runner]:
    with Runner() as r:
        yield r


@pytest.fixture
def run_py(runner: Runner):  # type: ignore[no-untyped-def]
    """Run Python source with small default limits."""

    def _run(code: str, stdin: str = "", **limits: object) -> ExecResult:
        lim = Limits(**{"time_s": 2.0, "memory_mb": 256, **limits})  # type: ignore[arg-type]
        return runner.run(code, "python", stdin, lim)

    return _run
