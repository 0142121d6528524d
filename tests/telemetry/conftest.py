"""Fixtures of the telemetry tests: record builders and throwaway ``memory://`` locations."""

from __future__ import annotations

from collections.abc import Iterator

import fsspec
import pytest
from _telemetry import MakeRecord, ids, record


@pytest.fixture
def make_record() -> MakeRecord:
    return record


@pytest.fixture
def memory_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh ``memory://`` location, removed afterwards (the memory filesystem is global)."""
    root = f"/assay-test-{request.node.name}-{next(ids)}"
    yield f"memory://{root}"
    fs = fsspec.filesystem("memory")
    if fs.exists(root):
        fs.rm(root, recursive=True)
